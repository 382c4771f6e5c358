//! README's picture of the studio's traces in a real backend (issue 45): the demo
//! (`zibby-test-agent fill-demo`, as `scripts/open-studio.sh` fills it) sent to Arize Phoenix on
//! 127.0.0.1 (`test_servers::phoenix`) by `zstudio otlp push`, then Phoenix's own UI on the port
//! the test server started, opened in WebKitGTK's MiniBrowser through WebDriver (no app: the
//! page is Phoenix's): the run's trace with its nodes nested as the timeline nests them, the node
//! picked showing the model, tokens and cost the studio sent. Saved as `phoenix-trace.png`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use serde_json::{json, Value};
use test_servers::phoenix::Phoenix;

use crate::harness::{self, eventually, screenshot, Workspace};

/// WebKitWebDriver on a free port of 127.0.0.1, killed (by its pid) when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let port = test_servers::process::free_port();
        let child = Command::new("WebKitWebDriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("WebKitWebDriver (the package webkit2gtk-driver) runs");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "WebKitWebDriver never listened");
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// WebKitGTK's own browser, next to the library the app uses.
fn minibrowser() -> String {
    [
        "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
        "/usr/lib/webkit2gtk-4.1/MiniBrowser",
    ]
    .into_iter()
    .find(|path| std::path::Path::new(path).is_file())
    .expect("WebKitGTK's MiniBrowser (the package libwebkit2gtk-4.1-0)")
    .to_owned()
}

/// What the page shows as text, its dialogs too (WebDriver's text of `body` leaves out the
/// trace's panel, drawn in a layer of its own).
async fn page_text(client: &fantoccini::Client) -> String {
    let text = client.execute("return document.body.innerText", Vec::new()).await;
    text.ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_in_phoenixs_own_ui() {
    let phoenix = Phoenix::start();
    let workspace = Workspace::empty();
    harness::succeeded(
        Command::new(harness::test_agent())
            .arg("fill-demo")
            .arg(workspace.path())
            .arg("--db")
            .arg(workspace.db())
            .output(),
        "fill-demo",
    );
    // The demo's runs, as a user's `otlp push --since` sends them.
    let pushed = harness::succeeded(
        Command::new(harness::zstudio())
            .args(["otlp", "push", "--since", "1d", "--json", "--db"])
            .arg(workspace.db())
            .arg("-w")
            .arg(workspace.path())
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.endpoint())
            .stdin(Stdio::null())
            .output(),
        "zstudio otlp push",
    );
    let pushed: Value = serde_json::from_slice(&pushed).unwrap();
    // The demo's richest run: the one with the most spans.
    let session = pushed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|s| s["spans"].as_u64())
        .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = workspace.path().join("trace.json");
    harness::succeeded(
        Command::new(harness::zstudio())
            .args(["export", &session, "--otlp"])
            .arg(&file)
            .arg("--db")
            .arg(workspace.db())
            .arg("-w")
            .arg(workspace.path())
            .output(),
        "zstudio export --otlp",
    );
    let exported: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let all = exported["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .clone();
    // The session's runs are a trace each: the one with the most spans, its root first.
    let trace_of = |s: &Value| s["traceId"].as_str().unwrap().to_lowercase();
    let trace_id = all
        .iter()
        .map(trace_of)
        .max_by_key(|t| all.iter().filter(|s| trace_of(s) == *t).count())
        .unwrap();
    let spans: Vec<Value> = all.into_iter().filter(|s| trace_of(s) == trace_id).collect();
    let nodes: Vec<String> = spans[1..]
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    let with_model = spans
        .iter()
        .find(|s| {
            s["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["key"] == "gen_ai.request.model")
        })
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .expect("a node of the demo names its model");
    // Phoenix takes the spans from a queue: its API holds them all before the page is opened.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while phoenix.spans(&trace_id).len() < spans.len() {
        assert!(std::time::Instant::now() < deadline, "Phoenix: {}", phoenix.log());
        std::thread::sleep(Duration::from_millis(200));
    }

    let driver = Driver::start();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "webkitgtk:browserOptions".into(),
        json!({ "binary": minibrowser(), "args": ["--automation"] }),
    );
    let client = ClientBuilder::native()
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a MiniBrowser session");
    client.set_window_size(1440, 900).await.expect("the window's size");
    // Phoenix's default project (`Project:1`, as its GraphQL ids are written) and the trace.
    let url = format!("{}/projects/UHJvamVjdDox/traces/{trace_id}", phoenix.endpoint());
    client.goto(&url).await.expect("Phoenix's page");
    // Every node of the run, in the trace's tree as Phoenix draws it (a loaded machine's
    // Phoenix takes a while: a minute, then what the page showed is saved and said).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = page_text(&client).await;
        let missing: Vec<&String> = nodes.iter().filter(|n| !text.contains(n.as_str())).collect();
        if missing.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let seen = screenshot(&client, "phoenix-trace-missing.png").await;
            panic!("{missing:?} not in Phoenix's page ({}):\n{text}", seen.display());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // The node that names its model, picked: its attributes are what the studio sent.
    eventually("the node picked shows its model", || async {
        let node = client
            .find(Locator::XPath(&format!("//*[normalize-space(text())='{with_model}']")))
            .await
            .map_err(|e| e.to_string())?;
        node.click().await.map_err(|e| e.to_string())?;
        let text = page_text(&client).await;
        (text.contains("gen_ai.request.model") && text.contains("zibby.cost_usd"))
            .then_some(())
            .ok_or_else(|| "its attributes are not shown yet".to_owned())
    })
    .await;
    screenshot(&client, "phoenix-trace.png").await;
    client.close().await.expect("end the session");
}
