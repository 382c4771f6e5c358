//! Issue 40, points 2 and 8: a host or a bucket that a link or the page asks to open, and that
//! the studio has not opened before, is asked about in the system's own dialog, worded for what it
//! opens; a bucket's names the endpoint its credentials would be sent to when it is not the
//! provider's own. Nothing is reached before the user's yes. (Before: a link's host or bucket was
//! asked about as "Open this folder as a workspace?", and the page's `workspace_open_remote` and
//! `workspace_open_cloud` opened anything without a question: these tests then fail on "no
//! dialog came up" and on the connection the endpoint received.)

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::Client;
use test_servers::moto::Moto;

use crate::buckets::{profile_env, upload, BUCKET};
use crate::harness::{click, eventually, wait_for, App, Workspace, FANOUT, PIPELINE};
use crate::{answer_natively, display_screenshot, launch_link, texts, within, x11, DISPLAY, OPEN_FOLDER_TITLE};

const OPEN_HOST_TITLE: &str = "Open a workspace on this host?";
const OPEN_BUCKET_TITLE: &str = "Open this bucket as a workspace?";

/// A server on loopback that only counts the connections made to it (an endpoint a link or a
/// page would send the user's credentials to).
fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen on loopback");
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            // Read what came and close: no answer a client could take for a bucket's.
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = (&stream).read(&mut [0u8; 4096]);
        }
    });
    (endpoint, connections)
}

/// Starts `invoke(command, args)` from the page, as a script in it could, without waiting: its
/// answer lands in `window.openAnswer` (`"pending"` until then).
async fn invoke_from_the_page(client: &Client, command: &str, args: serde_json::Value) {
    client
        .execute(
            "window.openAnswer = 'pending'; \
             window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1]) \
             .then((value) => { window.openAnswer = value; }, (error) => { window.openAnswer = error; });",
            vec![serde_json::json!(command), args],
        )
        .await
        .expect("invoke from the page");
}

/// What the page's call answered, once it did.
async fn page_answer(client: &Client) -> serde_json::Value {
    eventually("the page's call is answered", || async {
        let answer = client
            .execute("return window.openAnswer;", Vec::new())
            .await
            .map_err(|e| e.to_string())?;
        (answer != serde_json::json!("pending"))
            .then_some(answer.clone())
            .ok_or(answer.to_string())
    })
    .await
}

/// The page asks the shell to open a host and a bucket at an endpoint of someone else's: each is
/// asked about in the system's dialog, worded for what it opens; closed unanswered, nothing is
/// opened, nothing reaches the endpoint, and the page hears `null`.
#[tokio::test]
async fn the_page_opens_no_host_or_bucket_without_the_native_question() {
    let _display = DISPLAY.lock().await;
    let here = Workspace::with_sessions(&[FANOUT]);
    let here_root = here.path().canonicalize().unwrap().display().to_string();
    let (endpoint, connections) = counting_server();
    App::run(&here, move |client| async move {
        wait_for(&client, &format!("tr[data-session-id='{}']", FANOUT.id)).await;
        let args = serde_json::json!({
            "url": "s3://team-runs/ci",
            "endpoint": endpoint,
            "profile": null,
            "cache_limit": null,
            "clear_cache": false,
        });
        invoke_from_the_page(&client, "workspace_open_cloud", args).await;
        assert!(
            within(Duration::from_secs(15), || x11::has_window(OPEN_BUCKET_TITLE)).await,
            "the shell asks before a bucket the studio has not opened"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        display_screenshot("open-bucket-foreign-endpoint.png");
        assert_eq!(
            connections.load(Ordering::SeqCst),
            0,
            "nothing reaches the endpoint before a yes"
        );
        x11::ask_to_close(OPEN_BUCKET_TITLE).expect("close the dialog");
        assert_eq!(page_answer(&client).await, serde_json::Value::Null);

        invoke_from_the_page(
            &client,
            "workspace_open_remote",
            serde_json::json!({"target": "127.0.0.1:/srv/p"}),
        )
        .await;
        assert!(
            within(Duration::from_secs(15), || x11::has_window(OPEN_HOST_TITLE)).await,
            "the shell asks before a host the studio has not opened"
        );
        display_screenshot("open-host.png");
        x11::ask_to_close(OPEN_HOST_TITLE).expect("close the dialog");
        assert_eq!(page_answer(&client).await, serde_json::Value::Null);

        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            connections.load(Ordering::SeqCst),
            0,
            "nor after the user closed the question"
        );
        assert_eq!(
            texts(&client, ".workspace-path").await,
            [here_root],
            "the window stays where it was"
        );
    })
    .await;
}

/// A link to a host and to a bucket: each question says which it opens, not "this folder".
#[tokio::test]
async fn a_link_to_a_host_or_a_bucket_asks_worded_for_what_it_opens() {
    let _display = DISPLAY.lock().await;
    let first = Workspace::with_sessions(&[FANOUT]);
    let (db, data_home) = (first.db(), first.data_home().to_path_buf());
    let first_root = first.path().canonicalize().unwrap().display().to_string();
    App::run(&first, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        for (workspace, title, screenshot) in [
            ("ssh://127.0.0.1/srv/p", OPEN_HOST_TITLE, "link-host.png"),
            ("s3://team-runs/ci", OPEN_BUCKET_TITLE, "link-bucket.png"),
        ] {
            let mut link = url::Url::parse("zibby-studio://open").unwrap();
            link.query_pairs_mut().append_pair("workspace", workspace);
            let launched = launch_link(link.as_str(), &db, &data_home);
            assert!(launched.success(), "the link's launch hands over and exits");
            assert!(
                within(Duration::from_secs(15), || x11::has_window(title)).await,
                "the link to {workspace} is asked about as {title:?}"
            );
            assert!(!x11::has_window(OPEN_FOLDER_TITLE), "not as a folder");
            display_screenshot(screenshot);
            x11::ask_to_close(title).expect("close the dialog");
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert_eq!(texts(&client, ".workspace-path").await, [first_root.as_str()]);
        }
    })
    .await;
}

/// The Open Cloud Workspace form with an endpoint and a profile: the system's question names the
/// bucket, then the user's yes opens it, and Open Recent keeps both (it opens again without a
/// question).
#[tokio::test]
async fn the_form_opens_a_bucket_at_an_endpoint_after_the_users_yes_and_open_recent_keeps_both() {
    let _display = DISPLAY.lock().await;
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::with_sessions(&[FANOUT]);
    // No keys, no endpoint in the variables: the keys come from the form's profile, the endpoint
    // from its field.
    let env = profile_env(&here);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let endpoint = moto.endpoint();
    App::run_with_env(&here, &env, |client| async move {
        wait_for(&client, &format!("tr[data-session-id='{}']", FANOUT.id)).await;
        click(&client, "#workspace-switcher").await;
        click(&client, "#workspace-open-cloud").await;
        for (field, text) in [
            ("#cloud-url", format!("s3://{BUCKET}/ci")),
            ("#cloud-endpoint", endpoint.clone()),
            ("#cloud-profile", "moto-reader".to_owned()),
        ] {
            wait_for(&client, field)
                .await
                .send_keys(&text)
                .await
                .expect("type into the form");
        }
        click(&client, "#cloud-open").await;
        answer_natively(OPEN_BUCKET_TITLE, "Alt_L+o", "open-bucket-question.png").await;
        wait_for(&client, "#workspace-read-only").await;
        wait_for(&client, &format!("tr[data-session-id='{}']", PIPELINE.id)).await;

        click(&client, "#workspace-switcher").await;
        let recent = format!(".recent-workspace[data-path^='s3://{BUCKET}/ci?']");
        eventually("the recent bucket says its endpoint and profile", || async {
            let said = texts(&client, &recent).await.join("");
            (said.contains("profile moto-reader") && said.contains(&endpoint))
                .then_some(())
                .ok_or(said)
        })
        .await;
    })
    .await;
    drop(moto);
}
