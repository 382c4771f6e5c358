//! A workspace on another machine in the real window: a real OpenSSH server on 127.0.0.1
//! (`test_servers::sshd`), reached with the real `ssh` through the test's own `ssh_config`
//! (`--ssh-config`), the real `zstudio serve --stdio` on the other end (this machine, another
//! folder and another HOME). Needs `cargo build -p zstudio -p zibby-test-agent`.

use std::path::Path;

use fantoccini::{Client, Locator};
use studio_core::Status;
use test_servers::relay::Relay;
use test_servers::sshd::{HostEntry, Sshd};

use crate::harness::{
    call_backend, click, eventually, screenshot, start_run, wait_for, zstudio, App, Workspace, FANOUT, PIPELINE,
};

/// `ssh://studio-test/<path>`: the sshd's host alias and an absolute path there.
fn target(sshd: &Sshd, path: &Path) -> String {
    format!("ssh://{}{}", sshd.alias(), path.display())
}

async fn label(client: &Client) -> Result<String, String> {
    let element = client
        .find(Locator::Css("#workspace-remote"))
        .await
        .map_err(|e| format!("no remote label: {e}"))?;
    element.text().await.map_err(|e| e.to_string())
}

/// The `ssh` processes here started with the config file `config` (`-F`), by pid: the masters.
fn ssh_processes(config: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("list /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
        let is_ssh = args.first().is_some_and(|program| program.ends_with(b"ssh"));
        let is_master = args.contains(&b"-M".as_slice());
        if is_ssh && is_master && args.contains(&config.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

async fn row_appears(client: &Client, session_id: &str) {
    eventually(&format!("session {session_id} is listed"), || async {
        client
            .find(Locator::Css(&format!("tr[data-session-id='{session_id}']")))
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .await;
}

#[tokio::test]
async fn a_remote_workspace_from_the_command_line_lists_its_sessions_live_with_the_host() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let (alias, remote_path) = (sshd.alias().to_owned(), remote.path().to_path_buf());
    App::run_on(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        |client| async move {
            let expected = format!("{alias}:{}", remote_path.display());
            eventually("the workspace label names the host and the path", || async {
                let seen = label(&client).await?;
                (seen == expected).then_some(()).ok_or(seen)
            })
            .await;
            row_appears(&client, PIPELINE.id).await;
            screenshot(&client, "remote-workspace.png").await;

            // A session's files come from the other machine, read through its server.
            click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
            wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
            assert!(
                client.find(Locator::Css("#session-reveal")).await.is_err(),
                "no Reveal: the folder is not on this machine"
            );
            wait_for(&client, "#session-copy-remote-path").await;
            click(&client, "[data-tab='files']").await;
            click(&client, ".file-entry[data-path='plan/raw_stream_output.txt']").await;
            eventually("the node's output is shown", || async {
                let viewer = client
                    .find(Locator::Css("#file-viewer"))
                    .await
                    .map_err(|e| e.to_string())?;
                let text = viewer.text().await.map_err(|e| e.to_string())?;
                text.contains("Write the code").then_some(()).ok_or(text)
            })
            .await;
            screenshot(&client, "remote-session-files.png").await;

            // A session written on the other machine shows up without a refresh.
            remote.add_sessions(&[FANOUT]);
            row_appears(&client, FANOUT.id).await;
        },
    )
    .await;
}

#[tokio::test]
async fn the_form_opens_a_remote_workspace_and_says_why_one_cannot_be_opened() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::with_sessions(&[FANOUT]);
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let here_path = here.path().display().to_string();
    let (alias, remote_path) = (sshd.alias().to_owned(), remote.path().to_path_buf());
    // Opened before: the form opens them without the system's question (asked in the dialogs
    // binary's `opening`).
    let recorded = format!("ssh://{alias}{}", remote_path.display());
    here.opened_before(&[format!("{recorded}/missing"), recorded]);
    let config_path = config.clone();
    let recent_here = here_path.clone();
    App::run_on(&here, &recent_here, &["--ssh-config", &config], |client| async move {
        row_appears(&client, FANOUT.id).await;
        click(&client, "#workspace-switcher").await;
        click(&client, "#workspace-open-remote").await;
        let field = wait_for(&client, "#remote-target").await;
        let missing = format!("{alias}:{}/missing", remote_path.display());
        field.send_keys(&missing).await.expect("type the target");
        click(&client, "#remote-open").await;
        eventually("the form says the folder does not exist there", || async {
            let form = client
                .find(Locator::Css("[data-testid='remote-form']"))
                .await
                .map_err(|e| e.to_string())?;
            let text = form.text().await.map_err(|e| e.to_string())?;
            (text.contains(&alias) && text.contains("does not exist"))
                .then_some(())
                .ok_or(text)
        })
        .await;
        screenshot(&client, "remote-form-error.png").await;

        let field = wait_for(&client, "#remote-target").await;
        field.clear().await.expect("clear the field");
        let good = format!("{alias}:{}", remote_path.display());
        field.send_keys(&good).await.expect("type the target");
        click(&client, "#remote-open").await;
        eventually("the remote workspace is open", || async {
            let seen = label(&client).await?;
            (seen == good).then_some(()).ok_or(seen)
        })
        .await;
        row_appears(&client, PIPELINE.id).await;
        assert!(
            client
                .find(Locator::Css(&format!("tr[data-session-id='{}']", FANOUT.id)))
                .await
                .is_err(),
            "the local workspace's sessions are gone from the table"
        );

        // Open Recent remembers it with its host.
        click(&client, "#workspace-switcher").await;
        let recent = format!("ssh://{alias}{}", remote_path.display());
        wait_for(&client, &format!(".recent-workspace[data-path='{recent}']")).await;
        assert_eq!(ssh_processes(&config_path).len(), 1, "one ssh master while it is open");

        // Back to the local workspace: the link is closed, nothing of it is left running here.
        click(&client, &format!(".recent-workspace[data-path='{here_path}']")).await;
        row_appears(&client, FANOUT.id).await;
        assert!(client.find(Locator::Css("#workspace-remote")).await.is_err());
        eventually("the ssh master is gone", || async {
            let left = ssh_processes(&config_path);
            left.is_empty().then_some(()).ok_or(format!("{left:?}"))
        })
        .await;
    })
    .await;
}

/// Trusts every agent of the workspace at `root` in the store of the sshd's logins (the remote
/// studio server's: `$XDG_DATA_HOME/zibby-studio/studio.sqlite` there), as if the user had said
/// yes once on that machine.
fn trust_on_the_host(sshd: &Sshd, root: &Path) {
    let db = host_db(sshd);
    std::fs::create_dir_all(db.parent().expect("a folder")).expect("create the remote data folder");
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db)).expect("open the store");
    let workspace = studio_core::Workspace::open(root).expect("open the workspace");
    for agent in studio_core::agents::load(root).expect("read .zibby/studio.toml") {
        let found = studio_core::agents::find(root, &agent.name, false).expect("the agent");
        store
            .trust_launch(&workspace, &found.launch, std::time::SystemTime::now())
            .expect("trust the agent");
    }
}

#[tokio::test]
async fn an_agent_started_in_a_remote_workspace_runs_there_live_and_stops_gracefully() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::empty();
    let remote = Workspace::with_test_agent(&["--nodes", "plan:1500,write:5000,report:1500", "--prompt", "{prompt}"]);
    trust_on_the_host(&sshd, remote.path());
    let config = sshd.ssh_config().display().to_string();
    App::run_on(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        |client| async move {
            wait_for(&client, "#workspace-remote").await;
            crate::harness::start_run(&client, "remote haiku").await;
            // The run's events come from the other machine's server, as a local run's do.
            wait_for(&client, ".live-run .node[data-node='plan'][data-status='success']").await;
            screenshot(&client, "remote-live-run.png").await;
            click(&client, ".live-run .stop").await;
            let finished = wait_for(&client, ".live-run[data-status='cancelled']").await;
            let mut seen = Vec::new();
            for node in finished.find_all(Locator::Css(".node")).await.expect("the nodes") {
                seen.push(node.attr("data-node").await.ok().flatten().unwrap_or_default());
            }
            assert_eq!(seen, ["plan", "write"], "a graceful stop lets the current node finish");
            let session_id = finished
                .find(Locator::Css(".live-session-id"))
                .await
                .expect("the run's session")
                .text()
                .await
                .expect("its id");
            // The session and its output are the other machine's, read through its server.
            click(&client, &format!("tr[data-session-id='{session_id}'] .session-id")).await;
            click(&client, "[data-tab='output']").await;
            eventually("the run's output is read from the host", || async {
                let lines = crate::texts(&client, "#output .output-line .line-text").await;
                lines
                    .iter()
                    .any(|line| line.contains("remote haiku"))
                    .then_some(())
                    .ok_or(format!("{lines:?}"))
            })
            .await;
            screenshot(&client, "remote-run-output.png").await;
        },
    )
    .await;
    assert!(
        !here.path().join(".zibby/output/sessions").exists(),
        "nothing was written to the local workspace"
    );
}

/// A relay (a test kills or freezes it) between ssh and `sshd`, and an ssh config that goes
/// through it: the link drops or stalls as a network's does.
fn through_relay(sshd: &Sshd) -> (Relay, String) {
    let relay = Relay::start(sshd.port());
    sshd.trust_port(relay.port());
    let config = sshd.write_ssh_config(
        "relay_config",
        &[HostEntry {
            port: relay.port(),
            ..sshd.host_entry()
        }],
    );
    (relay, config.display().to_string())
}

#[tokio::test]
async fn a_lost_link_shows_once_on_the_workspace() {
    zstudio();
    let sshd = Sshd::start();
    let (mut relay, config) = through_relay(&sshd);
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let alias = sshd.alias().to_owned();
    App::run_on_with_env(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        // Given up 2 s after the link dropped (the app retries for ever by default).
        &[("ZIBBY_STUDIO_RECONNECT_FOR", "2")],
        |client| async move {
            row_appears(&client, PIPELINE.id).await;
            assert!(client.find(Locator::Css("#remote-lost")).await.is_err());
            relay.kill();
            let lost = wait_for(&client, "#remote-lost").await;
            let said = lost.text().await.expect("read the notice");
            assert!(said.contains(&format!("The connection to {alias} was lost")), "{said}");
            assert!(said.contains("not connected again within"), "{said}");
            assert!(client.find(Locator::Css("#remote-reconnecting")).await.is_err());
            screenshot(&client, "remote-lost.png").await;
            // A request now fails with why, and the notice stays the one state shown.
            let listing = crate::harness::call_backend(&client, "sessionsList", vec![]).await;
            assert_eq!(listing["error"]["code"], "remote_link", "{listing}");
            assert_eq!(
                client
                    .find_all(Locator::Css("#remote-lost"))
                    .await
                    .expect("query")
                    .len(),
                1
            );
        },
    )
    .await;
}

#[tokio::test]
async fn a_stalled_link_reconnects_and_the_table_follows_the_host_again() {
    zstudio();
    let sshd = Sshd::start();
    let (relay, config) = through_relay(&sshd);
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let alias = sshd.alias().to_owned();
    App::run_on_with_env(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        // Keep-alives every second: a stalled link is noticed within a few seconds.
        &[("ZIBBY_STUDIO_SSH_KEEPALIVE", "1")],
        |client| async move {
            row_appears(&client, PIPELINE.id).await;
            relay.freeze();
            let notice = wait_for(&client, "#remote-reconnecting").await;
            let said = notice.text().await.expect("read the notice");
            assert!(said.contains(&format!("Reconnecting to {alias}…")), "{said}");
            screenshot(&client, "remote-reconnecting.png").await;
            // Meanwhile a request fails at once with why, and the workspace is not lost.
            let listing = crate::harness::call_backend(&client, "sessionsList", vec![]).await;
            assert_eq!(listing["error"]["code"], "remote_link", "{listing}");
            assert!(client.find(Locator::Css("#remote-lost")).await.is_err());
            // The table still shows what it had.
            row_appears(&client, PIPELINE.id).await;

            relay.resume();
            eventually("the link is back", || async {
                match client.find(Locator::Css("#remote-reconnecting")).await {
                    Ok(_) => Err("still reconnecting".to_owned()),
                    Err(_) => Ok(()),
                }
            })
            .await;
            assert!(client.find(Locator::Css("#remote-lost")).await.is_err());
            // Subscribed to changes again: a session written there now shows up without a reopen.
            remote.add_sessions(&[FANOUT]);
            row_appears(&client, FANOUT.id).await;
            row_appears(&client, PIPELINE.id).await;
        },
    )
    .await;
}

/// The processes on this machine (the host's, the same machine) whose command line holds
/// `needle` (a run's unique prompt: its agent and its keeper), by pid.
fn processes_with(needle: &str) -> Vec<u32> {
    let own = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("list /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let holds = cmdline.windows(needle.len()).any(|window| window == needle.as_bytes());
        if holds && pid != own {
            found.push(pid);
        }
    }
    found
}

/// The output lines the window's output view draws, in order: `(seq, text)`.
async fn shown_output(client: &Client) -> Vec<(i64, String)> {
    let script = "return Array.from(document.querySelectorAll('#output .output-line')).map((line) => \
                  [Number(line.getAttribute('data-seq')), line.querySelector('.line-text').textContent]);";
    let shown = client.execute(script, vec![]).await.expect("read the output lines");
    serde_json::from_value(shown).expect("pairs of seq and text")
}

/// The host's store (the studio server's there, `$XDG_DATA_HOME` of the sshd's logins).
fn host_db(sshd: &Sshd) -> std::path::PathBuf {
    sshd.home().join("data/zibby-studio/studio.sqlite")
}

/// The run's output lines as the host's store `db` recorded them: `(seq, text)`.
fn host_output(db: &Path, run_id: &str) -> Vec<(i64, String)> {
    let db = db.to_path_buf();
    let store =
        studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db)).expect("the host's store");
    let lines = store.output_page(run_id, 1, 100_000).expect("the run's output");
    lines.into_iter().map(|line| (line.seq, line.text)).collect()
}

/// The run's status as the host's store `db` records it.
fn host_status(db: &Path, run_id: &str) -> Status {
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.to_path_buf()))
        .expect("the host's store");
    store.run(run_id).expect("the run").status
}

/// The run's id and session, from the Live runs strip once it shows the run.
async fn live_run(client: &Client) -> (String, String) {
    let live = wait_for(client, ".live-run[data-run-id]").await;
    let run_id = live.attr("data-run-id").await.expect("read").expect("a run id");
    let session = live.find(Locator::Css(".live-session-id")).await.expect("its session");
    (run_id, session.text().await.expect("its id"))
}

#[tokio::test]
async fn a_run_that_ends_while_the_link_is_down_shows_every_line_once_on_reconnect() {
    resume_after_a_killed_link("remote-resume-7c1d", true).await;
}

#[tokio::test]
async fn a_run_still_going_when_the_link_is_back_shows_its_lines_live_and_every_line_once() {
    resume_after_a_killed_link("remote-resume-52b0", false).await;
}

/// A run in a remote workspace, its output open in the window, whose link is killed mid-run and
/// comes back (the relay started again on its port) after the run ended on the host
/// (`ends_while_down`) or at once, while it still runs there (then the lines it prints after the
/// reconnect show while it goes on: the new server adopted it): the window then shows the run's
/// end and exactly the lines the host's store has, each once, in order.
async fn resume_after_a_killed_link(prompt: &'static str, ends_while_down: bool) {
    zstudio();
    let sshd = Sshd::start();
    let (mut relay, config) = through_relay(&sshd);
    let here = Workspace::empty();
    let remote = Workspace::with_test_agent(&[
        "--nodes",
        "plan:2500,write:8000,report:1500",
        "--lines",
        "4",
        "--prompt",
        "{prompt}",
    ]);
    trust_on_the_host(&sshd, remote.path());
    let db = host_db(&sshd);
    App::run_on_with_env(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        &[("ZIBBY_STUDIO_SSH_KEEPALIVE", "1")],
        |client| async move {
            wait_for(&client, "#workspace-remote").await;
            start_run(&client, prompt).await;
            let (run_id, session_id) = live_run(&client).await;
            // The run's output open and following it, as lines come.
            row_appears(&client, &session_id).await;
            click(&client, &format!("tr[data-session-id='{session_id}'] .session-id")).await;
            click(&client, "[data-tab='output']").await;
            wait_for(&client, ".live-run .node[data-node='plan'][data-status='success']").await;
            eventually("the output view shows the run's first lines", || async {
                let shown = shown_output(&client).await;
                (!shown.is_empty()).then_some(()).ok_or(format!("{shown:?}"))
            })
            .await;

            // The link dies (its TCP connection closes): the studio server there ends, the run
            // goes on through its keeper, recorded by no one.
            relay.kill();
            wait_for(&client, "#remote-reconnecting").await;
            if ends_while_down {
                eventually("the run's processes on the host ended", || async {
                    let left = processes_with(prompt);
                    left.is_empty().then_some(()).ok_or(format!("{left:?}"))
                })
                .await;
            }
            let shown_while_down = shown_output(&client).await;
            screenshot(&client, "remote-resume-down.png").await;

            relay.restart();
            eventually("the link is back", || async {
                match client.find(Locator::Css("#remote-reconnecting")).await {
                    Ok(_) => Err("still reconnecting".to_owned()),
                    Err(_) => Ok(()),
                }
            })
            .await;
            eprintln!(
                "the link is back; the run's processes on the host: {:?}",
                processes_with(prompt)
            );
            if !ends_while_down {
                // Issue 27: the new server follows the run on (it adopts it): lines the agent
                // prints now show while it still runs there, not only once it ended. Read before
                // the host's record is: what the window shows was there while the run went on.
                let host_when_back = host_output(&db, &run_id).len();
                eventually("lines printed after the reconnect show while the run goes on", || async {
                    let shown = shown_output(&client).await;
                    let status = host_status(&db, &run_id);
                    (status == Status::Running && shown.len() > host_when_back && shown_while_down.len() < shown.len())
                        .then_some(())
                        .ok_or(format!(
                            "{} lines shown, {host_when_back} on the host when the link was back; the run is {status:?}",
                            shown.len()
                        ))
                })
                .await;
                screenshot(&client, "remote-resume-live-again.png").await;
            }
            // The run's end, read from its record on the host: in the strip, then its notice.
            wait_for(
                &client,
                &format!(
                    ".live-run[data-run-id='{run_id}'][data-status='success'], \
                     .toast[data-run-id='{run_id}'][data-status='success']"
                ),
            )
            .await;
            // Its nodes as the host recorded them, those that began and ended while the link
            // was down among them (no event told of them): read again at the reconnect and
            // at the end. The strip holds an ended run a few seconds (ENDED_LINGER_MS).
            if ends_while_down {
                let strip = format!(".live-run[data-run-id='{run_id}'] .node");
                eventually("the strip shows the nodes the run went through while the link was down", || async {
                    let mut nodes = Vec::new();
                    for node in client.find_all(Locator::Css(&strip)).await.map_err(|e| e.to_string())? {
                        let name = node.attr("data-node").await.map_err(|e| e.to_string())?;
                        let status = node.attr("data-status").await.map_err(|e| e.to_string())?;
                        nodes.push(format!("{}:{}", name.unwrap_or_default(), status.unwrap_or_default()));
                    }
                    (nodes == ["plan:success", "write:success", "report:success"])
                        .then_some(())
                        .ok_or(format!("{nodes:?}"))
                })
                .await;
                screenshot(&client, "remote-resume-nodes-read-again.png").await;
            }
            let host = host_output(&db, &run_id);
            assert!(
                shown_while_down.len() < host.len(),
                "lines were written while the link was down ({} shown of {})",
                shown_while_down.len(),
                host.len()
            );
            assert!(host.iter().any(|(_, text)| text.contains("RESULT")), "{host:?}");
            eventually("the window shows every line of the run once, in order", || async {
                let shown = shown_output(&client).await;
                (shown == host)
                    .then_some(())
                    .ok_or(format!("{shown:?}\nthe host has {host:?}"))
            })
            .await;
            let session_view = wait_for(&client, "#session-view")
                .await
                .text()
                .await
                .expect("read the view");
            assert!(
                !session_view.contains("the link is down"),
                "what failed while the link was down is not said any more: {session_view}"
            );
            screenshot(&client, "remote-resume-caught-up.png").await;
            let runs = call_backend(&client, "runsList", vec![serde_json::json!(session_id)]).await;
            assert_eq!(runs["ok"][0]["status"], "success", "{runs}");
        },
    )
    .await;
}

#[tokio::test]
async fn force_stop_ends_a_remote_agent_that_ignores_stop_and_leaves_nothing_running() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::empty();
    let prompt = "remote-force-9e2a";
    let remote = Workspace::with_test_agent(&["--nodes", "plan:60000", "--ignore-stop", "--prompt", "{prompt}"]);
    trust_on_the_host(&sshd, remote.path());
    let config = sshd.ssh_config().display().to_string();
    App::run_on(
        &here,
        &target(&sshd, remote.path()),
        &["--ssh-config", &config],
        |client| async move {
            wait_for(&client, "#workspace-remote").await;
            start_run(&client, prompt).await;
            wait_for(&client, ".live-run .node[data-node='plan'][data-status='running']").await;
            let (_, session_id) = live_run(&client).await;
            assert!(!processes_with(prompt).is_empty(), "the agent runs on the host");
            // Stop asks gracefully (the stop files there): this agent never looks.
            click(&client, ".live-run .stop").await;
            wait_for(&client, ".live-run .force-stop").await;
            assert!(
                !processes_with(prompt).is_empty(),
                "a graceful stop leaves the node running"
            );
            click(&client, ".live-run .force-stop").await;
            wait_for(&client, ".live-run[data-status='cancelled']").await;
            screenshot(&client, "remote-force-stopped.png").await;
            let runs = call_backend(&client, "runsList", vec![serde_json::json!(session_id)]).await;
            assert_eq!(runs["ok"][0]["status"], "cancelled", "{runs}");
            assert_eq!(runs["ok"][0]["stopped_by"], "forced", "signals ended it: {runs}");
            eventually("no process of the run is left on the host", || async {
                let left = processes_with(prompt);
                left.is_empty().then_some(()).ok_or(format!("{left:?}"))
            })
            .await;
        },
    )
    .await;
}

/// `zibby-studio --session ID ssh://host/path` (what `zstudio --remote HOST:PATH open ID` starts)
/// while the app runs on the same store: the running window opens the remote workspace (with the
/// ssh config it was started with), then that session of it.
#[tokio::test]
async fn a_second_launch_hands_its_remote_workspace_and_session_to_the_running_window() {
    zstudio();
    let sshd = Sshd::start();
    let here = Workspace::with_sessions(&[FANOUT]);
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let here_path = here.path().display().to_string();
    let (db, data_home) = (here.db(), here.data_home().to_path_buf());
    let target = target(&sshd, remote.path());
    let expected = format!("{}:{}", sshd.alias(), remote.path().display());
    App::run_on(&here, &here_path, &["--ssh-config", &config], |client| async move {
        row_appears(&client, FANOUT.id).await;
        let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_zibby-studio"))
            .arg("--db")
            .arg(&db)
            .args(["--session", PIPELINE.id])
            .arg(&target)
            .env("XDG_DATA_HOME", &data_home)
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let status = tokio::time::timeout(std::time::Duration::from_secs(60), status)
            .await
            .expect("the second launch exits within 60 s: it handed over")
            .expect("launch the app again");
        assert!(status.success(), "the second launch exits cleanly: {status}");
        eventually("the running window opens the remote workspace", || async {
            let seen = label(&client).await?;
            (seen == expected).then_some(()).ok_or(seen)
        })
        .await;
        row_appears(&client, PIPELINE.id).await;
        let view = format!("#session-view[data-session-id='{}']", PIPELINE.id);
        eventually("the window shows the session the launch asked for", || async {
            client
                .find(Locator::Css(&view))
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .await;
    })
    .await;
}
