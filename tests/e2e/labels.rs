//! Tags and notes in the window (issue 44): added, removed and written in the session's header,
//! kept in the store (the relaunched app shows them), shown as text.

use fantoccini::{key::Key, Client};

use crate::harness::{click, eventually, screenshot, wait_for, App, Workspace};
use crate::{texts, PIPELINE};

async fn open(client: &Client) {
    click(client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
    wait_for(client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
}

#[tokio::test]
async fn tags_and_a_note_are_kept_in_the_store_and_shown_as_text() {
    let workspace = Workspace::with_sessions(&[PIPELINE]);
    App::run(&workspace, |client| async move {
        open(&client).await;
        let input = wait_for(&client, "#session-tag-input").await;
        input
            .send_keys(&format!("flaky, nightly{}", char::from(Key::Enter)))
            .await
            .expect("type two tags");
        eventually("both tags are chips", || async {
            let chips = texts(&client, "#session-tags .tag-name").await;
            if chips == ["flaky", "nightly"] {
                Ok(())
            } else {
                Err(format!("{chips:?}"))
            }
        })
        .await;
        click(&client, "[aria-label='Remove the tag flaky']").await;
        eventually("the removed tag goes", || async {
            let chips = texts(&client, "#session-tags .tag-name").await;
            if chips == ["nightly"] {
                Ok(())
            } else {
                Err(format!("{chips:?}"))
            }
        })
        .await;
        click(&client, "#session-note-edit").await;
        wait_for(&client, "#session-note-input")
            .await
            .send_keys("<b>retry</b> with a smaller model")
            .await
            .expect("type the note");
        click(&client, "#session-note-save").await;
        let note = wait_for(&client, "#session-note .sv-note-text").await;
        assert_eq!(
            note.text().await.unwrap(),
            "<b>retry</b> with a smaller model",
            "as text"
        );
        screenshot(&client, "tags-and-note.png").await;
    })
    .await;

    // The same workspace and store, a new app process.
    App::run(&workspace, |client| async move {
        open(&client).await;
        eventually("the tag and the note are the store's", || async {
            let chips = texts(&client, "#session-tags .tag-name").await;
            let note = texts(&client, "#session-note .sv-note-text").await;
            if chips == ["nightly"] && note == ["<b>retry</b> with a smaller model"] {
                Ok(())
            } else {
                Err(format!("{chips:?} {note:?}"))
            }
        })
        .await;
    })
    .await;
}
