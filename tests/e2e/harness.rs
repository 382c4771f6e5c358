//! The harness of the end-to-end tests: workspaces made from the captured runs, and the real app
//! started through `tauri-driver` (which starts `WebKitWebDriver`, which starts the app).

use std::fs::{self, File, FileTimes};
use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// How long the page may take to show what a test waits for.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(20);

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Saves a PNG of the window to `e2e-screenshots/<name>` (gitignored), so a person can look at what
/// the test saw.
pub async fn screenshot(client: &Client, name: &str) -> PathBuf {
    // Let the page paint what the test just read first: without this, WebKit's snapshot sometimes
    // shows an older frame.
    let after_two_frames = "const done = arguments[arguments.length - 1]; \
                            requestAnimationFrame(() => requestAnimationFrame(() => done()));";
    client
        .execute_async(after_two_frames, Vec::new())
        .await
        .expect("wait for the page to paint");
    // WebDriver's screenshot waits for the page's next presentation; a still page painted without
    // compositing (the app's choice without a GPU) presents nothing: one pixel of the page's
    // corner changes, frame after frame, until the screenshot is taken.
    let keep_presenting = "const dot = document.createElement('div'); dot.id = 'e2e-frame-dot'; \
        dot.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;pointer-events:none;z-index:2147483647'; \
        document.body.append(dot); let on = false; \
        const tick = () => { if (!dot.isConnected) return; on = !on; dot.style.background = on ? 'rgb(0 0 0 / 1%)' : 'rgb(0 0 0 / 2%)'; requestAnimationFrame(tick); }; \
        requestAnimationFrame(tick); return null;";
    client
        .execute(keep_presenting, Vec::new())
        .await
        .expect("keep the page presenting");
    let png = client.screenshot().await;
    client
        .execute(
            "document.getElementById('e2e-frame-dot')?.remove(); return null;",
            Vec::new(),
        )
        .await
        .expect("stop presenting");
    let png = png.expect("take a screenshot");
    let dir = repo_root().join("e2e-screenshots");
    fs::create_dir_all(&dir).expect("create e2e-screenshots/");
    let path = dir.join(name);
    fs::write(&path, png).expect("write the screenshot");
    path
}

/// A control's tooltip: the window's own (`aria-describedby`), not a native `title`, which
/// WebKitGTK can leave on screen; "" when it has none.
pub async fn tooltip_of(client: &Client, control: &fantoccini::elements::Element) -> Result<String, String> {
    let text = client
        .execute(
            "const id = arguments[0].getAttribute('aria-describedby'); \
             return id ? document.getElementById(id)?.textContent ?? '' : '';",
            vec![serde_json::to_value(control).map_err(|e| e.to_string())?],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(text.as_str().unwrap_or_default().to_owned())
}

/// A temporary project folder the app is opened on, and a store of its own (so that the tests
/// never touch the user's).
pub struct Workspace {
    dir: tempfile::TempDir,
    store_dir: tempfile::TempDir,
}

/// One captured run to copy in, with its nodes in the order they ran and how long ago it last wrote.
pub struct CapturedSession {
    pub capture: &'static str,
    pub id: &'static str,
    pub nodes_in_order: &'static [&'static str],
    pub quiet_for: Duration,
}

/// The pipeline capture's session: three nodes, finished two hours ago.
pub const PIPELINE: CapturedSession = CapturedSession {
    capture: "head-bb10e85-02-pipeline-markers",
    id: "1795952464415_3prb",
    nodes_in_order: &["plan", "execute", "report"],
    quiet_for: Duration::from_secs(2 * 60 * 60),
};

/// Written 90 s "ago": recent enough (< 2 min) for the core to take it for a running session.
pub const FANOUT: CapturedSession = CapturedSession {
    capture: "head-bb10e85-93-fanout-markers",
    id: "1795952527924_osmf",
    nodes_in_order: &["start", "left", "left2", "right", "join"],
    quiet_for: Duration::from_secs(90),
};

impl Workspace {
    pub fn empty() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("create a temp folder"),
            store_dir: tempfile::tempdir().expect("create a temp folder for the store"),
        }
    }

    /// An empty workspace whose `.zibby/studio.toml` declares one agent, `test-agent`: the test
    /// agent with these arguments (`{prompt}` and the other placeholders are filled per run).
    pub fn with_test_agent(args: &[&str]) -> Workspace {
        let agent = test_agent().display().to_string();
        let run: Vec<&str> = std::iter::once(agent.as_str()).chain(args.iter().copied()).collect();
        Workspace::with_agent("test-agent", &run)
    }

    /// An empty workspace whose `.zibby/studio.toml` declares one agent that runs `run`, the file
    /// trusted in the app's store (as if the user had said yes once).
    pub fn with_agent(name: &str, run: &[&str]) -> Workspace {
        let workspace = Workspace::with_untrusted_agent(name, run);
        workspace.trust_agents_file();
        workspace
    }

    /// [`Workspace::with_agent`], the file not trusted yet: the first run asks.
    pub fn with_untrusted_agent(name: &str, run: &[&str]) -> Workspace {
        let workspace = Workspace::empty();
        // A JSON string is a TOML basic string, and a JSON array of them a TOML array.
        let toml = format!(
            "[[agent]]\nname = {}\nrun = {}\n",
            serde_json::to_string(name).expect("a string serialises"),
            serde_json::to_string(run).expect("strings serialise")
        );
        fs::create_dir_all(workspace.path().join(".zibby")).expect("create .zibby/");
        fs::write(workspace.path().join(".zibby/studio.toml"), toml).expect("write .zibby/studio.toml");
        workspace
    }

    /// Copies sessions from `tests/fixtures/zibby-captures/<capture>/cwd/.zibby/output/sessions/`.
    ///
    /// A copy gets fresh modification times, and the core reads both node order (folder times) and
    /// status (quiet time) from them, so each copy is given times as if it had last written
    /// `quiet_for` ago, its nodes one second apart in the order they ran.
    pub fn with_sessions(sessions: &[CapturedSession]) -> Workspace {
        let workspace = Workspace::empty();
        workspace.add_sessions(sessions);
        workspace
    }

    /// Copies `sessions` in as [`Workspace::with_sessions`] does, beside what the workspace has.
    pub fn add_sessions(&self, sessions: &[CapturedSession]) {
        let sessions_dir = self.path().join(".zibby/output/sessions");
        let captures = repo_root().join("tests/fixtures/zibby-captures");
        for session in sessions {
            let from = captures
                .join(session.capture)
                .join("cwd/.zibby/output/sessions")
                .join(session.id);
            let to = sessions_dir.join(session.id);
            copy_folder(&from, &to);

            let last_write = SystemTime::now() - session.quiet_for;
            let ran = session.nodes_in_order.len() as u32;
            let node_time = |i: usize| last_write - Duration::from_secs(u64::from(ran) - i as u64);
            let start = node_time(0) - Duration::from_secs(1);
            set_times_under(&to, start);
            for (i, node) in session.nodes_in_order.iter().enumerate() {
                let node_dir = to.join(node);
                assert!(
                    node_dir.is_dir(),
                    "the capture {} has no node folder {node}",
                    session.capture
                );
                set_times_under(&node_dir, node_time(i));
            }
            set_mtime(&to.join(".session-info.json"), last_write);
            set_mtime(&to, last_write);
        }
    }

    /// An empty workspace with `count` small finished sessions, one second apart (the newest
    /// last): `<1795900000000 + i s>_<i as 4 digits>`.
    pub fn with_generated_sessions(count: u64) -> Workspace {
        let workspace = Workspace::empty();
        workspace.add_generated_sessions(count);
        workspace
    }

    /// Adds the sessions of [`Workspace::with_generated_sessions`] to what the workspace has.
    pub fn add_generated_sessions(&self, count: u64) {
        let sessions_dir = self.path().join(".zibby/output/sessions");
        for i in 0..count {
            let folder = sessions_dir.join(generated_session_id(i));
            fs::create_dir_all(folder.join("plan")).expect("create a session folder");
            fs::write(
                folder.join(".session-info.json"),
                json!({"currentNode": "plan"}).to_string(),
            )
            .expect("write .session-info.json");
            fs::write(folder.join("result.json"), r#"{"success":true}"#).expect("write result.json");
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The title of the window opened on this workspace, which names it (other tests' windows
    /// share the display).
    pub fn window_title(&self) -> String {
        format!(
            "{} - Zibby Studio",
            self.path().file_name().expect("a named folder").to_string_lossy()
        )
    }

    /// Trusts every agent of the workspace's `.zibby/studio.toml` as it is now (their run and
    /// replay commands), in the app's store.
    pub fn trust_agents_file(&self) {
        let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(self.db()))
            .expect("open the app's store");
        let workspace = studio_core::Workspace::open(self.path()).expect("open the workspace");
        for agent in studio_core::agents::load(self.path()).expect("read .zibby/studio.toml") {
            for replay in [false, true].into_iter().filter(|r| !r || agent.replay.is_some()) {
                let found = studio_core::agents::find(self.path(), &agent.name, replay).expect("the agent");
                store
                    .trust_launch(&workspace, &found.launch, SystemTime::now())
                    .expect("trust the agent");
            }
        }
    }

    /// Records `roots` in the app's store as workspaces the window opened before (Open Recent's:
    /// a host's `ssh://…`, a bucket's URL with its endpoint and profile): the window's forms then
    /// open them without the system's question (which the dialogs binary answers).
    pub fn opened_before<S: AsRef<str>>(&self, roots: &[S]) {
        let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(self.db()))
            .expect("open the app's store");
        for root in roots {
            let recorded = studio_core::Workspace::from_canonical_root(PathBuf::from(root.as_ref()));
            store
                .workspace_opened(&recorded, SystemTime::now())
                .expect("record a workspace opened before");
        }
    }

    /// The store the app is opened with (`--db`), outside the workspace.
    pub fn db(&self) -> PathBuf {
        self.store_dir.path().join("studio.sqlite")
    }

    /// The app's data folder (`XDG_DATA_HOME`: its trash is `Trash/` in it).
    pub fn data_home(&self) -> &Path {
        self.store_dir.path()
    }
}

/// The id of the `i`th session of [`Workspace::with_generated_sessions`].
pub fn generated_session_id(i: u64) -> String {
    format!("{}_{:04}", 1_795_900_000_000 + i * 1000, i % 10_000)
}

/// `zstudio`, built into the same target folder as the app (`cargo build -p zstudio`).
pub fn zstudio() -> PathBuf {
    let zstudio = Path::new(env!("CARGO_BIN_EXE_zibby-studio")).with_file_name("zstudio");
    assert!(
        zstudio.is_file(),
        "zstudio is not built at {}: run `cargo build -p zstudio` with the same target folder",
        zstudio.display()
    );
    zstudio
}

/// `zstudio ARGS` on the workspace `root` and the store `db`; what it printed on stdout. Fails
/// the test, with what zstudio said, if it fails.
pub fn zstudio_in(db: &Path, root: &Path, args: &[&std::ffi::OsStr]) -> Vec<u8> {
    succeeded(
        Command::new(zstudio())
            .args(args)
            .arg("--db")
            .arg(db)
            .arg("-w")
            .arg(root)
            .stdin(Stdio::null())
            .output(),
        "zstudio",
    )
}

/// The stdout of a command that ran and succeeded; fails the test with its stderr otherwise.
pub fn succeeded(output: std::io::Result<std::process::Output>, what: &str) -> Vec<u8> {
    let output = output.unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The test agent, built into the same target folder as the app (`cargo test --workspace` builds
/// it; alone: `cargo build -p zibby-test-agent`).
pub fn test_agent() -> PathBuf {
    let app = Path::new(env!("CARGO_BIN_EXE_zibby-studio"));
    let agent = app.with_file_name("zibby-test-agent");
    assert!(
        agent.is_file(),
        "the test agent is not built at {}: run `cargo build -p zibby-test-agent` with the same target folder",
        agent.display()
    );
    agent
}

fn copy_folder(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    let entries = fs::read_dir(from).unwrap_or_else(|e| panic!("read the fixture {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.expect("list a fixture folder");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("stat a fixture entry").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap_or_else(|e| panic!("copy {}: {e}", entry.path().display()));
        }
    }
}

/// Sets the modification time of `path` and everything under it (children first).
pub fn set_times_under(path: &Path, time: SystemTime) {
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("list a copied folder") {
            set_times_under(&entry.expect("list a copied folder").path(), time);
        }
    }
    set_mtime(path, time);
}

fn set_mtime(path: &Path, time: SystemTime) {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.set_times(FileTimes::new().set_modified(time).set_accessed(time))
        .unwrap_or_else(|e| panic!("set the times of {}: {e}", path.display()));
}

/// The app under test, driven over WebDriver. Close it with [`App::close`].
/// The app under test: the one this build made, or `ZIBBY_STUDIO_APP` (a benchmark measures an
/// earlier build against this one in the same conditions that way).
pub fn app_binary() -> PathBuf {
    std::env::var_os("ZIBBY_STUDIO_APP")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zibby-studio")), PathBuf::from)
}

pub struct App {
    pub client: Client,
    driver: Driver,
    db: PathBuf,
}

impl App {
    /// Starts `zibby-studio --db <db> <workspace>` with `data_home` as its data folder (its
    /// trash, among others: never the user's) and connects to its window.
    #[allow(dead_code)] // benches/app.rs launches this way; the tests go through `App::run*`.
    pub async fn launch(workspace: &Path, db: &Path, data_home: &Path) -> App {
        App::launch_with_env(workspace, db, data_home, &[]).await
    }

    /// [`App::launch`] with environment variables of the app's own (the desktop's settings).
    pub async fn launch_with_env(workspace: &Path, db: &Path, data_home: &Path, env: &[(&str, &str)]) -> App {
        App::launch_with(workspace, db, data_home, env, &[]).await
    }

    /// [`App::launch_with_env`] with more arguments on the app's command line (`--session ID`).
    pub async fn launch_with(
        workspace: &Path,
        db: &Path,
        data_home: &Path,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> App {
        require_display();
        let mut command_line = vec![json!("--db"), json!(db)];
        command_line.extend(args.iter().map(|arg| json!(arg)));
        command_line.push(json!(workspace));
        let driver = Driver::start(data_home, env);
        let capabilities = json!({
            "browserName": "wry",
            "tauri:options": {
                "application": app_binary(),
                "args": command_line,
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        // A window that never comes up must fail the test, not hang it (and CI with it). A
        // session refused because WebKitWebDriver did not answer tauri-driver (seen on a loaded
        // CI machine) is asked for again, twice at most.
        let mut attempts = 0;
        let connected = loop {
            attempts += 1;
            let connected = tokio::time::timeout(
                Duration::from_secs(90),
                ClientBuilder::native()
                    .capabilities(capabilities.clone())
                    .connect(&format!("http://127.0.0.1:{}", driver.port)),
            )
            .await;
            match &connected {
                Ok(Err(e)) if attempts < 3 && e.to_string().contains("did not respond") => {
                    eprintln!("warning: WebDriver session refused ({e}); asking again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                _ => break connected,
            }
        };
        match connected {
            Ok(Ok(client)) => App {
                client,
                driver,
                db: db.to_path_buf(),
            },
            Ok(Err(e)) => panic!("could not open a WebDriver session on the app: {e}\n{}", driver.log()),
            Err(_) => panic!("the app's window did not come up within 90 s\n{}", driver.log()),
        }
    }

    /// Runs `test` against the app opened on `workspace` and its store, then closes the app even
    /// if `test` panicked.
    pub async fn run<F, Fut>(workspace: &Workspace, test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        App::run_in(workspace.path(), &workspace.db(), workspace.data_home(), &[], &[], test).await;
    }

    /// [`App::run`] with more arguments on the app's command line (`--session ID`).
    pub async fn run_with_args<F, Fut>(workspace: &Workspace, args: &[&str], test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        App::run_in(
            workspace.path(),
            &workspace.db(),
            workspace.data_home(),
            &[],
            args,
            test,
        )
        .await;
    }

    /// [`App::run`] with environment variables of the app's own (the desktop's settings).
    pub async fn run_with_env<F, Fut>(workspace: &Workspace, env: &[(&str, &str)], test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        App::run_in(workspace.path(), &workspace.db(), workspace.data_home(), env, &[], test).await;
    }

    /// [`App::run`] with `target` as the app's WORKSPACE argument (a remote workspace's
    /// `ssh://host/path`) and more arguments before it, on `workspace`'s store and data folder.
    pub async fn run_on<F, Fut>(workspace: &Workspace, target: &str, args: &[&str], test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        App::run_on_with_env(workspace, target, args, &[], test).await;
    }

    /// [`App::run_on`] with environment variables of the app's own (a link's keep-alives, a
    /// bucket's endpoint and keys).
    pub async fn run_on_with_env<F, Fut>(
        workspace: &Workspace,
        target: &str,
        args: &[&str],
        env: &[(&str, &str)],
        test: F,
    ) where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        App::run_in(
            Path::new(target),
            &workspace.db(),
            workspace.data_home(),
            env,
            args,
            test,
        )
        .await;
    }

    /// [`App::run`] on any path, one that may not exist.
    pub async fn run_at<F, Fut>(workspace: &Path, db: &Path, test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let data_home = tempfile::tempdir().expect("create a temp folder for the app's data");
        App::run_in(workspace, db, data_home.path(), &[], &[], test).await;
    }

    async fn run_in<F, Fut>(workspace: &Path, db: &Path, data_home: &Path, env: &[(&str, &str)], args: &[&str], test: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let app = App::launch_with(workspace, db, data_home, env, args).await;
        // A panic inside the spawned task comes back as a JoinError instead of unwinding past the
        // close below, which would leave the window (and the drivers) running.
        let outcome = tokio::time::timeout(Duration::from_secs(240), tokio::spawn(test(app.client.clone()))).await;
        let log = app.driver.log();
        app.close().await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                eprintln!("{log}");
                std::panic::resume_unwind(error.into_panic());
            }
            Err(_) => panic!("the test did not end within 240 s\n{log}"),
        }
    }

    pub async fn close(self) {
        // Ending the session closes the window; then the driver is stopped by Drop.
        if let Err(e) = self.client.close().await {
            eprintln!("warning: closing the WebDriver session failed: {e}");
        }
        // A test that launches the app again on the same store waits for this one to be gone:
        // a second app on a store hands over to the first (one window per store).
        if !quits(&self.db).await {
            eprintln!("warning: the app on {} did not exit within 30 s", self.db.display());
        }
    }
}

/// Whether the app opened on the store `db` is gone within 30 s.
pub async fn quits(db: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !app_processes(db).is_empty() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// The `zibby-studio` processes opened on the store `db`.
pub fn app_processes(db: &Path) -> Vec<u32> {
    let needle = db.to_string_lossy().into_owned();
    let binary = app_binary();
    let name = binary
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            let is_app = cmdline.split('\0').next()?.ends_with(name.as_str());
            (is_app && cmdline.contains(&needle)).then_some(pid)
        })
        .collect()
}

/// Waits for an element, failing with what the page showed instead.
/// Every error is retried until the deadline: besides "no such element", WebKitWebDriver answers
/// "stale element" when the page redraws during the query (seen under load in CI).
pub async fn wait_for(client: &Client, css: &str) -> fantoccini::elements::Element {
    let deadline = Instant::now() + PAGE_TIMEOUT;
    loop {
        let e = match client.find(Locator::Css(css)).await {
            Ok(element) => return element,
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            let body = match client.find(Locator::Css("body")).await {
                Ok(body) => body.text().await.unwrap_or_default(),
                Err(_) => String::from("(no body)"),
            };
            panic!("`{css}` did not appear within {PAGE_TIMEOUT:?} ({e}); the page shows:\n{body}")
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts a run from the Run bar: the workspace's first agent, `prompt`, Run.
pub async fn start_run(client: &Client, prompt: &str) {
    wait_for(client, "#run-agent option").await;
    wait_for(client, "#run-prompt")
        .await
        .send_keys(prompt)
        .await
        .expect("type the prompt");
    click(client, "#run-button").await;
}

/// Waits until `check` returns `Ok`, failing with `what` and the last `Err` it returned.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + PAGE_TIMEOUT;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if Instant::now() >= deadline => {
                panic!("{what}: not so within {PAGE_TIMEOUT:?}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Clicks the element `css` finds, finding it again if the page redrew it in between (a stale
/// element is not clicked, so a retry never clicks twice).
pub async fn click(client: &Client, css: &str) {
    eventually(&format!("click `{css}`"), || async {
        let element = client.find(Locator::Css(css)).await.map_err(|e| e.to_string())?;
        element.click().await.map_err(|e| e.to_string())
    })
    .await
}

/// Calls a method of the UI's backend (`window.zibbyStudio.backend`) in the page, and returns
/// what it resolved to (`{"ok": value}`) or rejected with (`{"error": {code, message}}`).
pub async fn call_backend(client: &Client, method: &str, args: Vec<serde_json::Value>) -> serde_json::Value {
    let script = "const [method, args, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]]; \
                  window.zibbyStudio.backend[method](...args).then( \
                    (value) => done({ ok: value === undefined ? null : value }), \
                    (error) => done({ error: { code: error.code, message: error.message } }));";
    client
        .execute_async(script, vec![json!(method), json!(args)])
        .await
        .unwrap_or_else(|e| panic!("call the backend's {method} in the page: {e}"))
}

/// The e2e tests need a display: fail (never skip) without one, saying how to get one.
fn require_display() {
    let has = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    assert!(
        has("DISPLAY") || has("WAYLAND_DISPLAY"),
        "DISPLAY is not set: the end-to-end tests open the app's window, so they need a display. Run them under Xvfb:\n  \
         xvfb-run -a -s \"-screen 0 1280x800x24\" cargo test -p zibby-studio --test e2e_app"
    );
}

/// Finds a program on PATH, or in cargo's bin folder (where `cargo install` puts it).
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .map(|cargo_home| cargo_home.join("bin"));
    std::env::split_paths(&path)
        .chain(cargo_bin)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A running `tauri-driver`; stopped with SIGTERM on drop, so that it stops `WebKitWebDriver` too
/// (SIGKILL would orphan it, holding its port).
struct Driver {
    child: Child,
    /// Where WebKitWebDriver listens (tauri-driver starts it and forwards sessions to it).
    native_port: u16,
    port: u16,
    log_path: PathBuf,
    _log_dir: tempfile::TempDir,
}

impl Driver {
    fn start(data_home: &Path, env: &[(&str, &str)]) -> Driver {
        let tauri_driver = find_program("tauri-driver").unwrap_or_else(|| {
            panic!(
                "tauri-driver was not found on PATH nor in $CARGO_HOME/bin. Install it with:\n  \
                 cargo install tauri-driver --locked --version 2.1.0"
            )
        });
        assert!(
            find_program("WebKitWebDriver").is_some(),
            "WebKitWebDriver was not found on PATH; tauri-driver needs it. On Debian/Ubuntu:\n  \
             apt-get install webkit2gtk-driver"
        );
        // The ports of the servers the tests start (sshd, relays, moto) come from the same hand:
        // a port handed out twice let WebKitWebDriver fail to bind while another test's relay
        // answered on it, and tauri-driver forwarded the session there (seen in CI).
        let port = test_servers::process::free_port();
        let native_port = test_servers::process::free_port();
        let log_dir = tempfile::tempdir().expect("create a temp folder for the driver log");
        let log_path = log_dir.path().join("driver.log");
        let log = File::create(&log_path).expect("create the driver log");
        let child = Command::new(&tauri_driver)
            .args(["--port", &port.to_string(), "--native-port", &native_port.to_string()])
            .env("XDG_DATA_HOME", data_home)
            // The window's remembered size and position: the test's own, never the user's.
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            // The app is started by WebKitWebDriver, started by tauri-driver: it inherits these.
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", tauri_driver.display()));
        let mut driver = Driver {
            child,
            port,
            native_port,
            log_path,
            _log_dir: log_dir,
        };
        driver.wait_until_listening();
        driver
    }

    /// Until tauri-driver and the WebKitWebDriver it starts both accept connections: a session
    /// asked for before WebKitWebDriver listens fails (seen on a loaded CI machine).
    fn wait_until_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (who, port) in [("tauri-driver", self.port), ("WebKitWebDriver", self.native_port)] {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if let Ok(Some(status)) = self.child.try_wait() {
                    panic!(
                        "tauri-driver exited ({status}) before accepting connections\n{}",
                        self.log()
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "{who} did not listen on port {port} within 30 s\n{}",
                    self.log()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// What tauri-driver, WebKitWebDriver and the app printed so far.
    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&self.log_path) {
            let _ = file.read_to_string(&mut text);
        }
        format!("--- tauri-driver / WebKitWebDriver / app output ---\n{text}--- end ---")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("warning: tauri-driver ignored SIGTERM for 5 s; killing it (WebKitWebDriver may be orphaned)");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Scrolls the sessions table to its last row (its rows are drawn only in view and a margin).
pub async fn scroll_table_to_the_end(client: &Client) {
    client
        .execute(
            "document.querySelector('.table-wrap').scrollTop = 1e9; return null;",
            vec![],
        )
        .await
        .expect("scroll the table");
}

/// The test agent's arguments for a run of three nodes, `plan`, `research` and `write`, lasting
/// the milliseconds given, each printing Claude Code's usage (so each node is priced).
pub fn spender_args(plan_ms: u64, research_ms: u64, write_ms: u64) -> Vec<String> {
    vec![
        "--nodes".to_owned(),
        format!("plan:{plan_ms},research:{research_ms},write:{write_ms}"),
        "--usage".to_owned(),
        "plan=claude-code,research=claude-code,write=claude-code".to_owned(),
    ]
}

/// What each node of a run of the test agent with `args` costs on `prompt` (the test agent's
/// figures are steady), learnt by running it with `zstudio run` in a workspace of its own.
pub fn node_costs(args: &[String], prompt: &str) -> Vec<(String, f64)> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let learning = Workspace::with_test_agent(&args);
    let run = ["run", "--json", "--agent", "test-agent", "--prompt", prompt].map(std::ffi::OsStr::new);
    let printed = zstudio_in(&learning.db(), learning.path(), &run);
    let first = String::from_utf8_lossy(&printed).lines().next().map(str::to_owned);
    let started: serde_json::Value = serde_json::from_str(&first.unwrap_or_default()).expect("run --json's first line");
    let session = started["session_id"].as_str().expect("the run's session").to_owned();
    let show = ["show", session.as_str(), "--json"].map(std::ffi::OsStr::new);
    let shown: serde_json::Value =
        serde_json::from_slice(&zstudio_in(&learning.db(), learning.path(), &show)).expect("show --json");
    shown["nodes"]
        .as_array()
        .expect("the session's nodes")
        .iter()
        .map(|node| {
            let cost = node["usage"]["cost_usd"].as_f64();
            (
                node["name"].as_str().unwrap_or_default().to_owned(),
                cost.expect("a priced node"),
            )
        })
        .collect()
}
