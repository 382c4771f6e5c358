//! What the window does with a workspace on another machine beyond reading it (issue 27): an
//! agent added there, and a remote session compared with one of the workspace here. The real
//! loopback sshd (`test_servers::sshd`) and the real `zstudio serve --stdio` on the other end, as
//! in `remote.rs`. (Trusting a remote agent in the system's dialog is in `remote_trust.rs`, of the
//! dialogs binary: it types into that dialog.)

use fantoccini::{Client, Locator};
use test_servers::sshd::Sshd;

use crate::harness::{click, eventually, screenshot, wait_for, zstudio, App, Workspace, FANOUT, PIPELINE};

/// Opens `host:path` from the workspace switcher's form, as a user does, and waits until it is
/// the open workspace: the window had the local workspace open before, and this one (else the
/// shell asks first: `Workspace::opened_before`).
async fn open_remote_from_the_form(client: &Client, target: &str) {
    click(client, "#workspace-switcher").await;
    click(client, "#workspace-open-remote").await;
    let field = wait_for(client, "#remote-target").await;
    field.send_keys(target).await.expect("type the target");
    click(client, "#remote-open").await;
    eventually("the remote workspace is open", || async {
        let label = client
            .find(Locator::Css("#workspace-remote"))
            .await
            .map_err(|e| e.to_string())?;
        let seen = label.text().await.map_err(|e| e.to_string())?;
        (seen == target).then_some(()).ok_or(seen)
    })
    .await;
}

async fn text_of(client: &Client, css: &str) -> Result<String, String> {
    let element = client.find(Locator::Css(css)).await.map_err(|e| e.to_string())?;
    element.text().await.map_err(|e| e.to_string())
}

/// Issue 27, point 7: the compare view takes one remote side and one local side. A session of the
/// remote workspace ("Compare with local…" in its view) against a session of the workspace the
/// window had open here: both named with where they are, compared node by node; nothing is
/// written to either workspace. (Before: no such action, and `runs_compare` went to the host,
/// which knows no session of this machine.)
#[tokio::test]
async fn a_remote_session_is_compared_with_a_session_here() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::with_sessions(&[FANOUT, PIPELINE]);
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let here_path = here.path().display().to_string();
    let target = format!("{}:{}", sshd.alias(), remote.path().display());
    // Opened before: the form opens it without the system's question.
    here.opened_before(&[format!("ssh://{}{}", sshd.alias(), remote.path().display())]);
    let alias = sshd.alias().to_owned();
    App::run_with_args(&here, &["--ssh-config", &config], |client| async move {
        wait_for(&client, &format!("tr[data-session-id='{}']", FANOUT.id)).await;
        open_remote_from_the_form(&client, &target).await;
        click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        click(&client, "#session-compare-local").await;
        // The sessions offered are this machine's: the workspace the window had open before.
        eventually("the sessions here are offered", || async {
            let offered = crate::texts(&client, "#compare-local-session option").await;
            (offered.len() == 2 && offered.iter().any(|option| option.starts_with(FANOUT.id)))
                .then_some(())
                .ok_or(format!("{offered:?}"))
        })
        .await;
        let form = text_of(&client, ".compare-local-form").await.expect("the form");
        assert!(form.contains(&here_path), "the form names the folder here: {form}");
        screenshot(&client, "remote-compare-local-form.png").await;

        let choose = choose_local(FANOUT.id);
        client
            .execute(&choose, Vec::new())
            .await
            .expect("choose the local session");
        click(&client, "#compare-local-start").await;
        wait_for(&client, "#compare-view #compare-count").await;
        let where_a = text_of(&client, "#compare-where-a").await.expect("where A is");
        let where_b = text_of(&client, "#compare-where-b").await.expect("where B is");
        assert_eq!(where_a, format!("on {alias}"));
        assert!(where_b.contains(&here_path), "{where_b}");
        let names = crate::texts(&client, ".compare-run-name").await;
        assert!(names[0].starts_with(PIPELINE.id), "A is the remote session: {names:?}");
        assert!(names[1].starts_with(FANOUT.id), "B is the session here: {names:?}");
        let count = text_of(&client, "#compare-count").await.expect("the count");
        assert!(!count.starts_with("0 of"), "two different runs differ: {count}");
        let nodes = crate::texts(&client, ".compare-nodes li").await;
        assert!(!nodes.is_empty(), "the nodes of both are listed");
        screenshot(&client, "remote-compare-across.png").await;

        // The same session on both machines (the same id): it is the same run.
        click(&client, "#compare-close").await;
        assert!(
            client.find(Locator::Css(".compare-local-form")).await.is_err(),
            "the form closed as the comparison opened"
        );
        click(&client, "#session-compare-local").await;
        wait_for(&client, "#compare-local-session").await;
        let choose = choose_local(PIPELINE.id);
        client
            .execute(&choose, Vec::new())
            .await
            .expect("choose the local session");
        click(&client, "#compare-local-start").await;
        eventually("the same session on both machines is the same run", || async {
            let count = text_of(&client, "#compare-count").await?;
            count.starts_with("0 of").then_some(()).ok_or(count)
        })
        .await;
    })
    .await;
    let listed = |root: &std::path::Path| {
        std::fs::read_dir(root.join(".zibby/output/sessions"))
            .map(|entries| entries.count())
            .unwrap_or(0)
    };
    assert_eq!(listed(here.path()), 2, "nothing was imported here");
    assert_eq!(listed(remote.path()), 1, "nothing was imported there");
}

/// A script choosing `id` in the form's list of sessions here.
fn choose_local(id: &str) -> String {
    format!(
        "const select = document.querySelector('#compare-local-session'); \
         select.value = '{id}'; select.dispatchEvent(new Event('change', {{ bubbles: true }}));"
    )
}

/// Issue 27: Add agent in a remote workspace writes the host's `.zibby/studio.toml` through its
/// studio server, validated as a local one is; nothing is written here. (Before: refused with
/// `local_only`.)
#[tokio::test]
async fn add_agent_in_a_remote_workspace_writes_the_hosts_agents_file() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::empty();
    let remote = Workspace::empty();
    let config = sshd.ssh_config().display().to_string();
    let target = format!("ssh://{}{}", sshd.alias(), remote.path().display());
    let alias = sshd.alias().to_owned();
    let agents_file = remote.path().join(".zibby/studio.toml");
    let not_yet = agents_file.clone();
    App::run_on(&here, &target, &["--ssh-config", &config], |client| async move {
        wait_for(&client, "#workspace-remote").await;
        click(&client, ".empty #agent-add").await;
        wait_for(&client, "#agent-form #agent-name")
            .await
            .send_keys("remote-echo")
            .await
            .expect("type the name");
        // A placeholder as the program: refused by the host's studio, as a local one refuses it.
        wait_for(&client, "#agent-run")
            .await
            .send_keys("{prompt}")
            .await
            .expect("type the command");
        click(&client, "#agent-save").await;
        eventually("the host's refusal is shown in the form", || async {
            let form = text_of(&client, "#agent-form").await?;
            (form.contains(&alias) && form.contains("placeholder"))
                .then_some(())
                .ok_or(form)
        })
        .await;
        assert!(!not_yet.exists(), "nothing written on the host");
        client
            .execute(
                "const run = document.querySelector('#agent-run'); run.value = 'echo\\n{prompt}'; \
                 run.dispatchEvent(new Event('input', { bubbles: true }));",
                Vec::new(),
            )
            .await
            .expect("write the command, one argument a line");
        click(&client, "#agent-save").await;
        eventually("the form is saved and closed", || async {
            match client.find(Locator::Css("#agent-form")).await {
                Ok(form) => Err(form.text().await.unwrap_or_default()),
                Err(_) => Ok(()),
            }
        })
        .await;
        screenshot(&client, "remote-agent-added.png").await;
        eventually("the Run bar offers the host's new agent", || async {
            let offered = crate::texts(&client, "#run-agent option").await;
            offered
                .iter()
                .any(|name| name == "remote-echo")
                .then_some(())
                .ok_or(format!("{offered:?}"))
        })
        .await;
    })
    .await;
    let written = std::fs::read_to_string(&agents_file).expect("the host's agents file");
    assert!(written.contains("remote-echo"), "{written}");
    assert!(
        !here.path().join(".zibby/studio.toml").exists(),
        "nothing was written here"
    );
}

/// Issue 27, point 6: a bundle dropped onto the window of a remote workspace (File > Import… goes
/// the same way) is uploaded to the host, imported there into its workspace and store, and opens
/// as imported; nothing is imported here. (Before: refused with `local_only`.)
#[tokio::test]
async fn a_bundle_dropped_onto_a_remote_workspace_is_imported_on_the_host() {
    zstudio();
    let sshd = Sshd::start();
    let (_elsewhere, bundle) = crate::bundles::pipeline_bundle();
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[FANOUT]);
    let config = sshd.ssh_config().display().to_string();
    let target = format!("ssh://{}{}", sshd.alias(), remote.path().display());
    // The window's title names the remote folder (`host:folder - Zibby Studio`).
    let title = format!(
        ":{} - Zibby Studio",
        remote.path().file_name().expect("a named folder").to_string_lossy()
    );
    App::run_on(&here, &target, &["--ssh-config", &config], |client| async move {
        wait_for(&client, "#workspace-remote").await;
        wait_for(&client, &format!("tr[data-session-id='{}']", FANOUT.id)).await;
        crate::drag::drop_files(&title, &[&bundle])
            .unwrap_or_else(|e| panic!("drop {} onto the window: {e}", bundle.display()));
        crate::bundles::shows_imported(&client, PIPELINE.id, "pipeline.zip").await;
        screenshot(&client, "remote-bundle-dropped.png").await;
    })
    .await;
    let sessions = |root: &std::path::Path| root.join(".zibby/output/sessions");
    assert!(
        sessions(remote.path())
            .join(PIPELINE.id)
            .join(".session-info.json")
            .is_file(),
        "imported into the host's workspace"
    );
    assert!(
        !sessions(here.path()).join(PIPELINE.id).exists(),
        "nothing imported here"
    );
}
