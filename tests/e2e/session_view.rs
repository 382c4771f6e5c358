//! The session view in the real window: a run followed live, its output, logs and files; Stop from
//! the view; Re-run node; search; and a table of 10,000 sessions.

use std::fs;
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use serde_json::json;

use crate::harness::{
    call_backend, click, eventually, generated_session_id, screenshot, tooltip_of, wait_for, App, Workspace,
};
use crate::texts;

const XSS: &str = "<img src=x onerror=alert(1)>";

async fn start_run(client: &Client, prompt: &str) -> String {
    crate::harness::start_run(client, prompt).await;
    eventually("the run has a session", || async {
        let ids = read(client, ".live-run .live-session-id").await?;
        ids.into_iter()
            .find(|id| !id.is_empty())
            .ok_or_else(|| "no session yet".to_owned())
    })
    .await
}

async fn read(client: &Client, css: &str) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.map_err(|e| e.to_string())? {
        found.push(element.text().await.map_err(|e| e.to_string())?);
    }
    Ok(found)
}

async fn attribute(client: &Client, css: &str, name: &str) -> Result<String, String> {
    let element = client
        .find(Locator::Css(css))
        .await
        .map_err(|e| format!("no `{css}`: {e}"))?;
    element
        .attr(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("`{css}` has no {name}"))
}

/// Opens a session's view from its row in the table.
async fn open_session(client: &Client, session_id: &str) {
    if attribute(client, "#session-view", "data-session-id")
        .await
        .ok()
        .as_deref()
        == Some(session_id)
    {
        return;
    }
    click(client, &format!("tr[data-session-id='{session_id}'] .session-title")).await;
    wait_for(client, &format!("#session-view[data-session-id='{session_id}']")).await;
}

async fn session_status_becomes(client: &Client, status: &str) {
    eventually(&format!("the session view says `{status}`"), || async {
        let seen = attribute(client, "#session-status", "data-status").await?;
        (seen == status).then_some(()).ok_or(seen)
    })
    .await;
}

async fn show_tab(client: &Client, tab: &str) {
    click(client, &format!("[data-tab='{tab}']")).await;
    wait_for(client, &format!("[data-panel='{tab}']")).await;
}

#[tokio::test]
async fn a_run_opens_in_the_session_view_with_its_timeline_output_logs_and_files() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:300", "--prompt", "{prompt}"]);
    App::run(&workspace, |client| async move {
        let prompt = format!("{XSS} kyotoplan");
        let session_id = start_run(&client, &prompt).await;
        open_session(&client, &session_id).await;
        session_status_becomes(&client, "success").await;

        show_tab(&client, "timeline").await;
        eventually("the timeline shows both nodes done", || async {
            let plan = attribute(&client, ".timeline-node[data-node='plan']", "data-status").await?;
            let write = attribute(&client, ".timeline-node[data-node='write']", "data-status").await?;
            (plan == "success" && write == "success")
                .then_some(())
                .ok_or(format!("plan {plan}, write {write}"))
        })
        .await;

        show_tab(&client, "output").await;
        let expected = format!("prompt: {prompt}");
        eventually("the output shows the prompt line, as text", || async {
            let lines = read(&client, "#output .output-line .line-text").await?;
            lines
                .iter()
                .any(|line| line.contains(&expected))
                .then_some(())
                .ok_or(format!("{lines:?}"))
        })
        .await;
        let images = client.find_all(Locator::Css("img")).await.expect("query the page");
        assert!(images.is_empty(), "no element was made from the agent's output");
        screenshot(&client, "session-output.png").await;
        // Find in output: the store reads the output for it (case ignored).
        let find = wait_for(&client, "#output-find").await;
        find.send_keys("KYOTOPLAN\u{E007}")
            .await
            .expect("type a find and press Enter");
        let found = eventually("Find marks the prompt line", || async {
            let status = read(&client, ".find-status").await?.join("");
            let marked = read(&client, "#output .output-line.marked .line-text").await?.join("");
            (status.starts_with("line ") && marked.contains(&expected))
                .then_some(status.clone())
                .ok_or(format!("status `{status}`, marked `{marked}`"))
        })
        .await;
        eprintln!("found: {found}");
        for (run, query, code) in [
            ("no-such-run", "x", "run_not_found"),
            (session_id.as_str(), "", "invalid_query"),
        ] {
            let args = vec![json!(run), json!({ "fromSeq": 1, "backward": false, "query": query })];
            let said = call_backend(&client, "runOutputFind", args).await;
            assert_eq!(said["error"]["code"], code, "{said}");
        }

        show_tab(&client, "logs").await;
        eventually("the logs say the run started", || async {
            let events = client
                .find_all(Locator::Css(".log-line[data-event='run.started']"))
                .await
                .map_err(|e| e.to_string())?;
            (!events.is_empty()).then_some(()).ok_or("no run.started".to_owned())
        })
        .await;

        show_tab(&client, "files").await;
        click(&client, ".file-entry[data-path='plan/raw_stream_output.txt']").await;
        eventually("the file is shown in place", || async {
            let text = read(&client, "#file-viewer").await?.join("\n");
            text.contains("plan").then_some(()).ok_or(text)
        })
        .await;
        screenshot(&client, "session-files.png").await;

        // Search: the store's full-text index over the run's output.
        let search = wait_for(&client, "#search").await;
        search.send_keys("kyotoplan").await.expect("type a search");
        eventually("the search finds the session", || async {
            let hits = client
                .find_all(Locator::Css(&format!(".search-hit[data-session-id='{session_id}']")))
                .await
                .map_err(|e| e.to_string())?;
            (!hits.is_empty()).then_some(()).ok_or("no hit".to_owned())
        })
        .await;
        screenshot(&client, "search.png").await;
    })
    .await;
}

#[tokio::test]
async fn stop_in_the_session_view_cancels_the_run_and_keeps_its_partial_output() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:800,write:60000", "--prompt", "{prompt}"]);
    App::run(&workspace, |client| async move {
        let session_id = start_run(&client, "stop me").await;
        open_session(&client, &session_id).await;
        show_tab(&client, "timeline").await;
        eventually("plan turns done live", || async {
            let plan = attribute(&client, ".timeline-node[data-node='plan']", "data-status").await?;
            (plan == "success").then_some(()).ok_or(plan)
        })
        .await;
        session_status_becomes(&client, "running").await;
        screenshot(&client, "session-live.png").await;

        click(&client, "#session-stop").await;
        let stop = wait_for(&client, "#session-stop[data-phase='stopping']").await;
        let (label, title) = (
            stop.text().await.unwrap_or_default(),
            tooltip_of(&client, &stop).await.unwrap(),
        );
        assert_eq!(label, "Stopping…", "the button says it is stopping");
        assert_eq!(
            title, "Stopping: the current node finishes first",
            "and its tooltip what Stop does"
        );
        // `write` would run for a minute: the view's Force stop ends it now.
        click(&client, "#session-force-stop").await;
        session_status_becomes(&client, "cancelled").await;

        show_tab(&client, "output").await;
        eventually("the partial output is kept", || async {
            let lines = read(&client, "#output .output-line .line-text").await?;
            lines
                .iter()
                .any(|line| line.contains("plan: working"))
                .then_some(())
                .ok_or(format!("{lines:?}"))
        })
        .await;
        show_tab(&client, "logs").await;
        let cancelled = eventually("a run.cancelled log line says how long it ran", || async {
            let lines = read(&client, ".log-line[data-event='run.cancelled']").await?;
            lines.into_iter().next().ok_or("no run.cancelled".to_owned())
        })
        .await;
        assert!(cancelled.contains("forced"), "{cancelled}");
        let delete = wait_for(&client, "#session-delete").await;
        assert_eq!(
            delete.is_enabled().await.ok(),
            Some(true),
            "a stopped session can be deleted"
        );
    })
    .await;
}

#[tokio::test]
async fn re_run_node_replays_one_node_of_the_session() {
    let workspace = Workspace::empty();
    let agent = crate::harness::test_agent().display().to_string();
    let toml = format!(
        "[[agent]]\nname = \"test-agent\"\nrun = {}\nreplay = {}\n",
        json!([agent, "--nodes", "plan:200,write:200", "--prompt", "{prompt}"]),
        json!([agent, "--nodes", "{node}:200"]),
    );
    fs::create_dir_all(workspace.path().join(".zibby")).unwrap();
    fs::write(workspace.path().join(".zibby/studio.toml"), toml).unwrap();
    workspace.trust_agents_file();
    App::run(&workspace, |client| async move {
        let session_id = start_run(&client, "first").await;
        open_session(&client, &session_id).await;
        session_status_becomes(&client, "success").await;

        click(&client, "#session-rerun").await;
        eventually("choose the node `write`", || async {
            let node = client
                .find(Locator::Css("#rerun-node"))
                .await
                .map_err(|e| e.to_string())?;
            node.select_by_value("write").await.map_err(|e| e.to_string())
        })
        .await;
        click(&client, "#rerun-start").await;

        let replay = eventually("a second run replays `write` and succeeds", || async {
            let runs = call_backend(&client, "runsList", vec![json!(session_id)]).await;
            let runs = runs["ok"].as_array().cloned().unwrap_or_default();
            let replay = runs.iter().find(|run| run["replayed_node"] == "write").cloned();
            match replay {
                Some(run) if run["status"] == "success" => Ok(run),
                other => Err(format!("{other:?} of {} runs", runs.len())),
            }
        })
        .await;
        assert!(
            replay["command"]
                .as_array()
                .unwrap()
                .iter()
                .any(|arg| arg == "write:200"),
            "the replay command, with {{node}} filled: {replay}"
        );
    })
    .await;
}

/// 10,000 session folders: the table opens with them, draws only what is in view, and scrolls to
/// the last. Prints how long the launch took to a usable table (docs/benchmarks.md).
#[tokio::test]
async fn ten_thousand_sessions_open_and_scroll() {
    const SESSIONS: u64 = 10_000;
    let workspace = Workspace::with_generated_sessions(SESSIONS);
    let newest = generated_session_id(SESSIONS - 1);
    let oldest = generated_session_id(0);
    let launched = Instant::now();
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let usable = launched.elapsed();
        eprintln!(
            "launch to a usable table with {SESSIONS} sessions: {} ms",
            usable.as_millis()
        );
        let drawn = texts(&client, "tr[data-session-id] .session-id").await;
        assert!(
            drawn.iter().any(|id| id.contains(&newest)),
            "the newest first: {drawn:?}"
        );
        assert!(
            drawn.len() < 300,
            "only the rows in view (and a margin) are drawn, not {SESSIONS}: {}",
            drawn.len()
        );
        let count = read(&client, ".sessions-count, .count")
            .await
            .unwrap_or_default()
            .join(" ");
        eprintln!("count label: {count}");

        // The table stands for every session (its scroll height is the total's) and holds a page
        // at a time: scrolled to its end, it reads the last rows, not the 49 pages between.
        let rowcount = client
            .execute(
                "return document.querySelector('table.sessions').getAttribute('aria-rowcount');",
                vec![],
            )
            .await
            .expect("read the table");
        assert_eq!(
            rowcount,
            json!((SESSIONS + 1).to_string()),
            "the grid counts every session"
        );
        let scrolled = Instant::now();
        // Scrolled again while it is not drawn: on a first launch the read-ahead may still be
        // filling the table (a reload with the rows of the moment) as the first scroll lands.
        let oldest_row = format!("tr[data-session-id='{oldest}']");
        eventually("the oldest session is drawn at the end of the table", || async {
            crate::harness::scroll_table_to_the_end(&client).await;
            let drawn = client
                .find_all(Locator::Css(&oldest_row))
                .await
                .map_err(|e| e.to_string())?;
            (!drawn.is_empty())
                .then_some(())
                .ok_or_else(|| "not drawn yet".to_owned())
        })
        .await;
        let held = client
            .execute("return document.querySelectorAll('tr.session-row').length;", vec![])
            .await
            .expect("count the rows drawn");
        assert!(
            held.as_u64().is_some_and(|rows| rows < 300),
            "only the rows in view are drawn at the end too: {held}"
        );
        eprintln!(
            "scroll to the last of {SESSIONS} rows drawn in {} ms",
            scrolled.elapsed().as_millis()
        );
        screenshot(&client, "ten-thousand.png").await;
        // Wait so that the launch figure is not taken while the index is still being written.
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await;
}

/// The test agent run as from a terminal in the workspace: a child of the test, not of the studio.
/// Killed if the test ends before it.
struct OutsideRun(std::process::Child);

impl Drop for OutsideRun {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The node folders a session holds, by name.
fn node_folders(session: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(session)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Issue 29 point 3: a run the studio did not start (the test agent started from outside it) reads
/// `running`; its view offers Stop, graceful only, its limit said in its tooltip before pressing
/// and under the header after; the run ends after its current node (the next ones never start).
#[tokio::test]
async fn stop_in_the_session_view_asks_a_run_the_studio_did_not_start_to_stop() {
    let workspace = Workspace::empty();
    let root = workspace.path().to_path_buf();
    App::run(&workspace, |client| async move {
        let mut terminal = OutsideRun(
            std::process::Command::new(crate::harness::test_agent())
                .args(["run", "--nodes", "first:2500,second:2500,third:2500,fourth:2500"])
                .current_dir(&root)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start the test agent from outside the studio"),
        );
        let sessions = root.join(".zibby/output/sessions");
        let session_id = eventually("the outside run has a session folder", || async {
            fs::read_dir(&sessions)
                .into_iter()
                .flatten()
                .flatten()
                .find(|entry| entry.path().join(".session-info.json").is_file())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .ok_or_else(|| "no session folder yet".to_owned())
        })
        .await;
        let folder = sessions.join(&session_id);
        // Its row has no title (the engine was given no prompt): opened by its id.
        click(&client, &format!("tr[data-session-id='{session_id}'] .session-id")).await;
        wait_for(&client, &format!("#session-view[data-session-id='{session_id}']")).await;
        session_status_becomes(&client, "running").await;

        let stop = wait_for(&client, "#session-stop[data-phase='outside']").await;
        assert_eq!(stop.is_enabled().await.ok(), Some(true), "Stop is offered");
        assert_eq!(
            tooltip_of(&client, &stop).await.unwrap(),
            "Stop before its next node. The studio did not start this run, so it cannot force it (S)",
            "its tooltip says what it cannot do before it is pressed"
        );
        assert!(
            client.find(Locator::Css("#session-force-stop")).await.is_err(),
            "no Force stop for a run the studio did not start"
        );
        // Watched from before the press: the engine deletes `.zibby-stop` at its next node, and
        // the studio the rest once it ended, which a busy machine reaches before the text below.
        // The nodes ended when they appear (a node's folder is written as it ends) are those the
        // stop allows, with the one running then.
        let watched = folder.clone();
        let stop_files_seen = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if watched.join(".zibby-stop").is_file() && watched.join(".zibby-studio-stop").is_file() {
                    return Some(node_folders(&watched));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            None
        });
        click(&client, "#session-stop").await;
        let said = wait_for(&client, "#session-outside-stop").await.text().await.unwrap();
        assert_eq!(
            said,
            "Asked to stop before its next node. The studio did not start this run, so it cannot force it."
        );
        let ended_at_stop = stop_files_seen.join().unwrap().expect("the stop files are written");
        assert!(
            client.find(Locator::Css("#session-force-stop")).await.is_err(),
            "still no Force stop"
        );
        screenshot(&client, "session-outside-stop.png").await;

        let started = Instant::now();
        let ran = tokio::task::spawn_blocking(move || {
            let mut out = String::new();
            std::io::Read::read_to_string(terminal.0.stdout.as_mut().unwrap(), &mut out).unwrap();
            let status = terminal.0.wait().unwrap();
            (status, out)
        })
        .await
        .unwrap();
        assert!(ran.1.contains("stopped"), "the engine saw the stop files: {}", ran.1);
        assert!(
            started.elapsed() < Duration::from_millis(2500 + 1500),
            "it ended after its current node, not after its last: {:?}",
            started.elapsed()
        );
        let ended = node_folders(&folder);
        assert!(
            ended.len() <= ended_at_stop.len() + 1 && !ended.iter().any(|name| name == "fourth"),
            "no node began after the one running when the stop files were written: {ended_at_stop:?} then {ended:?}"
        );
        eventually("Stop has nothing more to stop once the run ended", || async {
            let phase = attribute(&client, "#session-stop", "data-phase").await?;
            (phase == "idle").then_some(()).ok_or(phase)
        })
        .await;
        assert_eq!(
            wait_for(&client, "#session-outside-stop").await.text().await.unwrap(),
            said,
            "what was asked stays said"
        );
    })
    .await;
}
