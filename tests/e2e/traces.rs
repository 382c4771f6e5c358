//! Issue 45, point 2: the window's Traces setting. A new collector endpoint is asked about in the
//! system's dialog (the page may only ask: sending every run somewhere is the user's decision);
//! closed unanswered, nothing is written; after the user's yes it is the workspace's `[otlp]`
//! table, and the next run the window starts reaches a real Arize Phoenix on 127.0.0.1
//! (`test_servers::phoenix`), read back through Phoenix's own API.

use std::time::Duration;

use test_servers::phoenix::Phoenix;

use crate::harness::{self, click, eventually, wait_for, App, Workspace};
use crate::{answer_natively, display_screenshot, within, x11, DISPLAY};

const TRACES_TITLE: &str = "Send this workspace's runs as traces?";

/// Types `endpoint` into the Traces form (opened from the top bar) and presses Save.
async fn save_endpoint(client: &fantoccini::Client, endpoint: &str) {
    click(client, "#traces-open").await;
    let field = wait_for(client, "#traces-endpoint").await;
    eventually("the setting is read", || async {
        field
            .is_enabled()
            .await
            .map_err(|e| e.to_string())?
            .then_some(())
            .ok_or("disabled".to_owned())
    })
    .await;
    field.clear().await.expect("clear the field");
    field.send_keys(endpoint).await.expect("type the endpoint");
    click(client, "#traces-save").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_traces_setting_asks_then_the_next_run_reaches_phoenix() {
    let _display = DISPLAY.lock().await;
    let phoenix = Phoenix::start();
    let agent = harness::test_agent().display().to_string();
    let workspace = Workspace::with_agent(
        "test-agent",
        &[
            &agent,
            "--nodes",
            "plan:30,write:30",
            "--usage",
            "plan=claude-code",
            "--prompt",
            "{prompt}",
        ],
    );
    let studio_toml = workspace.path().join(".zibby/studio.toml");
    let before = std::fs::read_to_string(&studio_toml).unwrap();
    let (db, root) = (workspace.db(), workspace.path().to_owned());
    let endpoint = phoenix.endpoint();
    App::run(&workspace, move |client| async move {
        // Closed unanswered: nothing written.
        save_endpoint(&client, "http://127.0.0.1:9/elsewhere").await;
        assert!(
            within(Duration::from_secs(15), || x11::has_window(TRACES_TITLE)).await,
            "the shell asks before the workspace's runs are sent anywhere"
        );
        display_screenshot("traces-question.png");
        x11::ask_to_close(TRACES_TITLE).expect("close the dialog");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            std::fs::read_to_string(&studio_toml).unwrap(),
            before,
            "nothing written on a no"
        );
        click(&client, "[data-testid='cancel-traces']").await;

        // Yes: the table is written, and the window says where runs go.
        save_endpoint(&client, &endpoint).await;
        answer_natively(TRACES_TITLE, "Alt_L+s", "traces-question-answered.png").await;
        eventually("the form closes once saved", || async {
            match client
                .find(fantoccini::Locator::Css("[data-testid='traces-form']"))
                .await
            {
                Ok(_) => Err("still open".to_owned()),
                Err(_) => Ok(()),
            }
        })
        .await;
        let written = std::fs::read_to_string(&studio_toml).unwrap();
        assert!(written.contains("[otlp]") && written.contains(&endpoint), "{written}");
        assert!(
            written.contains("name = \"test-agent\""),
            "the agent is kept: {written}"
        );
        click(&client, "#traces-open").await;
        eventually("the setting says where runs go", || async {
            let said = wait_for(&client, "#traces-now")
                .await
                .text()
                .await
                .map_err(|e| e.to_string())?;
            said.contains(&format!("{endpoint}/v1/traces"))
                .then_some(())
                .ok_or(said)
        })
        .await;
        harness::screenshot(&client, "traces-setting.png").await;
        click(&client, "[data-testid='cancel-traces']").await;

        harness::start_run(&client, "hello").await;
        wait_for(&client, ".live-run[data-status='success']").await;
        let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.clone()))
            .expect("open the app's store");
        let opened = studio_core::Workspace::open(&root).expect("open the workspace");
        let runs = store.runs(&opened, None).expect("the runs");
        let trace: String = studio_core::share::otlp::trace_id(&runs[0].id)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let spans = eventually("Phoenix has the run and its two nodes", || async {
            let spans = phoenix.spans(&trace);
            (spans.len() >= 3)
                .then_some(spans.clone())
                .ok_or(format!("{} spans: {spans:?}", spans.len()))
        })
        .await;
        let names: Vec<&str> = spans.iter().filter_map(|span| span["name"].as_str()).collect();
        assert!(
            names.contains(&"invoke_agent plan") && names.contains(&"invoke_agent write"),
            "{names:?}"
        );
    })
    .await;
}
