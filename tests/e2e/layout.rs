//! The window as a daily tool (issue 15): the table keeps its rows whatever runs are live, a
//! control never turns into another action under the pointer, and a tooltip goes with its control.

use fantoccini::Client;
use serde_json::{json, Value};

use crate::harness::{click, eventually, screenshot, start_run, wait_for, App, Workspace};

async fn evaluate(client: &Client, script: &str) -> Result<Value, String> {
    client.execute(script, vec![]).await.map_err(|e| e.to_string())
}

/// How many 46 px rows the table has room for below its header.
const ROOM: &str = "const wrap = document.querySelector('.table-wrap'); \
                    const head = wrap.querySelector('thead').getBoundingClientRect().height; \
                    return Math.floor((wrap.clientHeight - head) / 46);";

#[tokio::test]
async fn the_table_keeps_eight_rows_at_1280_by_800_with_three_ended_runs() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300"]);
    App::run(&workspace, |client| async move {
        client.set_window_size(1280, 800).await.expect("size the window");
        for prompt in ["one", "two", "three"] {
            start_run(&client, prompt).await;
            wait_for(&client, "#session-view").await;
        }
        eventually("three runs ended, all still in the strip", || async {
            let ended = evaluate(
                &client,
                "return document.querySelectorAll(\".live-run:not([data-status='running'])\").length",
            )
            .await?;
            (ended == json!(3)).then_some(()).ok_or(format!("{ended} ended"))
        })
        .await;
        let (width, height) = {
            let size = evaluate(&client, "return [innerWidth, innerHeight]").await.unwrap();
            (size[0].as_u64().unwrap_or(0), size[1].as_u64().unwrap_or(0))
        };
        let room = evaluate(&client, ROOM).await.unwrap();
        screenshot(&client, "layout-1280x800.png").await;
        eprintln!("a {width}×{height} page, the session view open, three ended runs: room for {room} rows");
        assert!(
            room.as_u64().unwrap_or(0) >= 8,
            "at least 8 rows of the table stay visible ({width}×{height}): {room}"
        );
        // Ended runs leave the strip on their own; their sessions stay in the table.
        eventually("the ended runs left the strip", || async {
            let left = evaluate(&client, "return document.querySelectorAll('.live-run').length").await?;
            (left == json!(0)).then_some(()).ok_or(format!("{left} still there"))
        })
        .await;
        let rows = evaluate(
            &client,
            "return document.querySelectorAll('tr[data-session-id]').length",
        )
        .await
        .unwrap();
        assert_eq!(rows, json!(3), "the three sessions stay in the table");
    })
    .await;
}

#[tokio::test]
async fn a_click_on_stop_as_its_run_ends_does_nothing_else() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:800"]);
    App::run(&workspace, |client| async move {
        start_run(&client, "end under the pointer").await;
        wait_for(&client, ".live-run[data-status='running'] .stop").await;
        // Where Stop is while the run is live, and what is there once it ended.
        let place = "const r = document.querySelector('.live-run .stop').getBoundingClientRect(); \
                     return [Math.round(r.left), Math.round(r.top)];";
        let before = evaluate(&client, place).await.unwrap();
        wait_for(&client, ".live-run[data-status='success']").await;
        let after = evaluate(&client, place).await.unwrap();
        assert_eq!(before, after, "Stop stays where it was");
        let under = evaluate(
            &client,
            "const r = document.querySelector('.live-run .stop').getBoundingClientRect(); \
             const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); \
             const b = e && e.closest('button'); \
             return b ? [b.className, b.disabled, b.textContent] : null;",
        )
        .await
        .unwrap();
        assert_eq!(
            under[1],
            json!(true),
            "what is under the pointer is the disabled Stop: {under}"
        );
        assert!(under[0].as_str().unwrap_or_default().contains("stop"), "{under}");
        // A click there now: nothing starts, nothing asks, nothing goes.
        click(&client, ".live-run .stop").await;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let state = evaluate(
            &client,
            "return [document.querySelectorAll('.live-run').length, \
                     !!document.querySelector('[role=dialog], [role=alertdialog]'), \
                     document.querySelectorAll('tr[data-session-id]').length]",
        )
        .await
        .unwrap();
        assert_eq!(state, json!([1, false, 1]), "one run, no dialog, one session");
    })
    .await;
}

#[tokio::test]
async fn a_tooltip_goes_with_its_control() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:1500"]);
    App::run(&workspace, |client| async move {
        start_run(&client, "tooltips").await;
        let stop = wait_for(&client, ".live-run[data-status='running'] .stop").await;
        client
            .execute(
                "arguments[0].dispatchEvent(new PointerEvent('pointerenter'));",
                vec![serde_json::to_value(&stop).unwrap()],
            )
            .await
            .unwrap();
        let shown =
            "return [...document.querySelectorAll('.tooltip')].filter((t) => !t.hidden).map((t) => t.textContent)";
        eventually("Stop's tooltip shows", || async {
            let tips = evaluate(&client, shown).await?;
            (tips == json!(["Stop after the current node (S)"]))
                .then_some(())
                .ok_or(format!("{tips}"))
        })
        .await;
        wait_for(&client, ".live-run[data-status='success']").await;
        let tips = evaluate(&client, shown).await.unwrap();
        assert_eq!(tips, json!([]), "no tooltip once Stop cannot stop");
        eventually("the run left the strip, its tooltip with it", || async {
            let left = evaluate(
                &client,
                "return [document.querySelectorAll('.live-run').length, document.querySelectorAll('.tooltip').length \
                 - document.querySelectorAll('[aria-describedby]').length]",
            )
            .await?;
            (left[0] == json!(0) && left[1].as_i64().unwrap_or(1) <= 0)
                .then_some(())
                .ok_or(format!("{left}"))
        })
        .await;
    })
    .await;
}

/// A window of 1024×700 stacks the table above the session view, both usable (the README's
/// screenshots at that size and larger ones come from `benches/app.rs -- screenshots`).
#[tokio::test]
async fn a_small_window_stacks_the_table_above_the_session_view() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:300,check:300"]);
    App::run(&workspace, |client| async move {
        for prompt in ["first", "second"] {
            start_run(&client, prompt).await;
            wait_for(&client, "#session-view").await;
        }
        eventually("both runs ended", || async {
            let ended = evaluate(
                &client,
                "return document.querySelectorAll(\".live-run[data-status='success']\").length",
            )
            .await?;
            (ended == json!(2)).then_some(()).ok_or(format!("{ended}"))
        })
        .await;
        client.set_window_size(1024, 700).await.expect("size the window");
        eventually(
            "stacked: the table above the session view, both on screen, all columns",
            || async {
                let layout = evaluate(
                    &client,
                    "const t = document.querySelector('.sessions-slot').getBoundingClientRect(); \
                 const s = document.querySelector('#session-view').getBoundingClientRect(); \
                 return [document.querySelector('.workbench').classList.contains('stacked'), \
                         t.bottom <= s.top, Math.round(t.height), Math.round(s.height), \
                         document.querySelector('#split-handle').getAttribute('aria-orientation'), \
                         document.querySelector('.sessions th.col-agent') !== null];",
                )
                .await?;
                // Stacked, the table has the window's width: all its columns, the agent's too.
                (layout[0] == json!(true)
                    && layout[1] == json!(true)
                    && layout[4] == json!("horizontal")
                    && layout[5] == json!(true))
                .then_some(layout.clone())
                .ok_or(format!("{layout}"))
            },
        )
        .await;
    })
    .await;
}

/// `.zibby/studio.toml` is watched: an agent added appears in the Run bar without Refresh; a
/// broken file shows its error where the agents are chosen, the last good agents kept.
#[tokio::test]
async fn an_agent_added_to_studio_toml_appears_without_refresh() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:100"]);
    let file = workspace.path().join(".zibby/studio.toml");
    App::run(&workspace, |client| async move {
        let options = "return [...document.querySelectorAll('#run-agent option')].map((o) => o.textContent)";
        wait_for(&client, "#run-agent option").await;
        assert_eq!(evaluate(&client, options).await.unwrap(), json!(["test-agent"]));

        let mut toml = std::fs::read_to_string(&file).unwrap();
        toml.push_str("\n[[agent]]\nname = \"reviewer\"\nrun = [\"true\"]\n");
        std::fs::write(&file, &toml).unwrap();
        eventually("the new agent is offered", || async {
            let names = evaluate(&client, options).await?;
            (names == json!(["test-agent", "reviewer"]))
                .then_some(())
                .ok_or(format!("{names}"))
        })
        .await;

        std::fs::write(&file, format!("{toml}\n[[agent]\nname = ")).unwrap();
        eventually(
            "the broken file's error shows in the Run bar, the agents kept",
            || async {
                let seen = evaluate(
                    &client,
                    "return [!!document.querySelector('#run-bar .error[data-error-code]'), \
                 [...document.querySelectorAll('#run-agent option')].map((o) => o.textContent)]",
                )
                .await?;
                (seen == json!([true, ["test-agent", "reviewer"]]))
                    .then_some(())
                    .ok_or(format!("{seen}"))
            },
        )
        .await;
        screenshot(&client, "agents-file-broken.png").await;
    })
    .await;
}
