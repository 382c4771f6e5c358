//! The system's file dialogs, end to end: Export… saves where GTK's save dialog is told, and
//! File > Import… (Ctrl+I) imports what GTK's file dialog is told; a remote workspace's key
//! passphrase is asked in the app's own askpass dialog, a remote agent's trust in the system's
//! trust dialog (`remote_trust`), a folder, a host or a bucket not opened before in the
//! system's question (`opening`), and a new traces endpoint (`traces`). WebDriver reaches neither the GTK menu bar nor the dialogs: the
//! tests type on the keyboard as a user does, through XTEST (x11.rs).
//!
//! A binary of its own, its tests one at a time: the keyboard goes to the window with the X focus,
//! and without a window manager a window that opens takes the focus (GTK focuses a window it
//! presents itself). In the main e2e binary other tests' windows open all the time, and keys
//! typed into a dialog went into one of them (seen in a full run: the display's screenshot showed
//! another test's window, just opened, over the dialog). Here no other window comes or goes.
//!
//! ```sh
//! cd ui && npm run build && cd ..
//! xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test -p zibby-studio --test e2e_dialogs
//! ```

// The harness serves every end-to-end binary; this one uses part of it.
mod buckets;
#[allow(dead_code)]
mod bundles;
#[allow(dead_code)]
mod harness;
mod opening;
mod remote_trust;
mod traces;
#[allow(dead_code)]
mod x11;

use std::process::Command;
use std::time::Duration;

use bundles::{pipeline_bundle, shows_imported};
use harness::{eventually, wait_for, App, Workspace, FANOUT, PIPELINE};

/// The title of the shell's question before a folder not opened before opens.
const OPEN_FOLDER_TITLE: &str = "Open this folder as a workspace?";

/// The display, one test at a time: each test's window is the only one, and so keeps the focus.
static DISPLAY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits up to `timeout` for `check` to hold.
async fn within(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while !check() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Presses `chord` (a button's mnemonic, `Alt_L+o`) in the system's dialog titled `title`, as a
/// user does: once the dialog is up and holds the keyboard focus, with a screenshot of the display
/// (`screenshot`) just before; made again, up to three times, when the keys went astray. Returns
/// once the dialog is gone; panics, saying where the keys went, when it stays.
async fn answer_natively(title: &str, chord: &str, screenshot: &str) {
    assert!(
        within(Duration::from_secs(15), || x11::has_window(title)).await,
        "no dialog {title:?} came up"
    );
    let mut astray = Vec::new();
    for _ in 0..3 {
        if let Err(why) = x11::focus(Some(title)) {
            astray.push(why);
            continue;
        }
        if !within(Duration::from_secs(5), || x11::has_focus(title)).await {
            astray.push("the dialog did not take the keyboard focus".to_owned());
            continue;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        display_screenshot(screenshot);
        x11::press(chord).unwrap_or_else(|e| panic!("press {chord}: {e}"));
        if within(Duration::from_secs(5), || !x11::has_window(title)).await {
            return;
        }
        astray.push(format!("the dialog is still up after {chord}"));
    }
    panic!("the dialog {title:?} was not answered: {astray:?}");
}

/// Types `path` into the system's file dialog titled `title` (GTK's), as a user does, and
/// accepts it: the dialog up and holding the keyboard focus, its location field (Ctrl+L) emptied
/// and typed into, what the field holds read back (copied to the clipboard) before Enter, and the
/// dialog gone after. `Err` says where the gesture went astray (keys typed before the dialog was
/// ready, the focus taken by another test's window as it opened), for the caller to make it again.
async fn type_into_file_dialog(title: &str, path: &std::path::Path) -> Result<(), String> {
    let path = path.to_str().expect("a UTF-8 path");
    if !within(Duration::from_secs(15), || x11::has_window(title)).await {
        return Err(format!("no dialog {title:?} came up"));
    }
    x11::focus(Some(title))?;
    if !within(Duration::from_secs(5), || x11::has_focus(title)).await {
        return Err(format!("the dialog {title:?} did not take the keyboard focus"));
    }
    // GTK fills the dialog (its folder, its fields) once it is shown.
    tokio::time::sleep(Duration::from_millis(500)).await;
    x11::press("Control_L+l")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    x11::press("Control_L+a")?;
    x11::type_text(path)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    if !x11::has_focus(title) {
        return Err(format!("the focus left the dialog {title:?} as the path was typed"));
    }
    x11::press("Control_L+a")?;
    x11::press("Control_L+c")?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = x11::clipboard_text()?;
    if held != path {
        return Err(format!("the dialog's field holds {held:?}, not {path:?}"));
    }
    if !x11::has_focus(title) {
        return Err(format!("the focus left the dialog {title:?} before Enter"));
    }
    x11::press("Return")?;
    if !within(Duration::from_secs(5), || !x11::has_window(title)).await {
        return Err(format!("the dialog {title:?} is still up after Enter"));
    }
    Ok(())
}

/// Makes `gesture` (which opens the file dialog titled `title`) and types `path` into the
/// dialog, again after a close of what is left when keys went astray: three times at most.
async fn choose_in_file_dialog<F, Fut>(title: &str, path: &std::path::Path, mut gesture: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut astray = Vec::new();
    for _ in 0..3 {
        gesture().await;
        match type_into_file_dialog(title, path).await {
            Ok(()) => return,
            Err(why) => {
                let shot = display_screenshot(&format!("astray-{}-{}.png", title.replace(' ', "-"), astray.len()));
                eprintln!("typing into {title:?} went astray: {why}; again (the display: {shot})");
                astray.push(why);
                let _ = x11::ask_to_close(title);
                within(Duration::from_secs(5), || !x11::has_window(title)).await;
            }
        }
    }
    panic!("the dialog {title:?} did not take {}: {astray:?}", path.display());
}

/// Saves a PNG of the whole display (every window, dialogs too) to `e2e-screenshots/<name>`,
/// with ImageMagick's `import`; says where, or why not.
fn display_screenshot(name: &str) -> String {
    let dir = harness::repo_root().join("e2e-screenshots");
    let path = dir.join(name);
    let taken = std::fs::create_dir_all(&dir).map_err(|e| e.to_string()).and_then(|()| {
        Command::new("import")
            .args(["-window", "root"])
            .arg(&path)
            .status()
            .map_err(|e| e.to_string())
    });
    match taken {
        Ok(status) if status.success() => path.display().to_string(),
        Ok(status) => format!("no screenshot: import {status}"),
        Err(e) => format!("no screenshot: {e}"),
    }
}

/// Export… asks where with the system's save dialog, from the shell (the window gets no dialog
/// API): closing the dialog cancels, and the session view says nothing was exported; a path
/// typed there gets the bundle, which `zstudio import` reads back.
#[tokio::test]
async fn export_asks_where_with_the_native_save_dialog_and_writes_there() {
    let _display = DISPLAY.lock().await;
    let workspace = Workspace::with_sessions(&[PIPELINE]);
    let target = workspace.data_home().join("exported.zip");
    let written = target.clone();
    App::run(&workspace, move |client| async move {
        harness::click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        harness::click(&client, "#session-export").await;
        eventually("the save dialog comes up, titled Export session", || async {
            x11::ask_to_close("Export session")
        })
        .await;
        // Cancelled: nothing said, nothing refused, and the view goes on working.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(client.find(fantoccini::Locator::Css(".sv-exported")).await.is_err());
        assert!(client.find(fantoccini::Locator::Css(".sv-form-slot")).await.is_err());
        harness::click(&client, "[data-tab='logs']").await;
        wait_for(&client, "[data-panel='logs']").await;

        choose_in_file_dialog("Export session", &written, || {
            harness::click(&client, "#session-export")
        })
        .await;
        let said = wait_for(&client, ".sv-exported")
            .await
            .text()
            .await
            .expect("read the notice");
        assert_eq!(said, format!("Exported to {}", written.display()));
        // Issue 40, point 9: what went in as it is, and what was redacted.
        let note = wait_for(&client, "#session-exported-note")
            .await
            .text()
            .await
            .expect("read the note");
        assert!(
            note.starts_with("Included as they are: the prompts and what the agent printed"),
            "{note}"
        );
        assert!(
            note.contains("secrets in its commands, errors and log lines") || note.contains("1 secret in"),
            "{note}"
        );
        assert!(written.is_file(), "the bundle is where the dialog was told");
    })
    .await;
    // A bundle: another workspace imports it.
    let elsewhere = Workspace::empty();
    let imported = harness::zstudio_in(
        &elsewhere.db(),
        elsewhere.path(),
        &["import".as_ref(), target.as_os_str(), "--json".as_ref()],
    );
    let imported: serde_json::Value = serde_json::from_slice(&imported).expect("--json prints JSON");
    assert_eq!(imported["session_id"], PIPELINE.id);
}

/// File > Import… (its accelerator, Ctrl+I, pressed on the keyboard) asks for a file with the
/// system's dialog; the bundle chosen there is imported and opens in the window, marked imported.
#[tokio::test]
async fn import_from_the_file_menu_opens_the_imported_session() {
    let _display = DISPLAY.lock().await;
    let (_elsewhere, bundle) = pipeline_bundle();
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let title = workspace.window_title();
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        choose_in_file_dialog("Import a session", &bundle, || async {
            eventually("the window has the keyboard focus", || async {
                x11::focus(Some(&title))?;
                x11::has_focus(&title).then_some(()).ok_or("not yet".to_owned())
            })
            .await;
            x11::press("Control_L+i").expect("press Ctrl+I");
        })
        .await;
        shows_imported(&client, PIPELINE.id, "pipeline.zip").await;
    })
    .await;
}

/// The system's trust question's title (the shell's, src-tauri/src/consent.rs).
const TRUST_TITLE: &str = "Trust this agent";

/// How many runs and trusted launches the app's store holds for `workspace`.
fn runs_and_trust(db: &std::path::Path, root: &std::path::Path) -> (usize, bool) {
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.to_owned()))
        .expect("open the app's store");
    let opened = studio_core::Workspace::open(root).expect("open the workspace");
    let found = studio_core::agents::find(root, "test-agent", false).expect("the agent");
    (
        store.runs(&opened, None).expect("the runs").len(),
        store.launch_trusted(&opened, &found.launch).expect("read the trust"),
    )
}

fn untrusted_test_agent() -> Workspace {
    let agent = harness::test_agent().display().to_string();
    Workspace::with_untrusted_agent("test-agent", &[&agent, "--nodes", "plan:10", "--prompt", "{prompt}"])
}

/// Issue 26, point 4: a compromised page cannot trust a launch. The page calls `agents_trust`
/// itself (as a script in it could, with no click in the window's dialog), with the digest the
/// refused run gave it: the shell shows the system's dialog, and while nobody answers, or when it
/// is closed, nothing is trusted and nothing runs. (Before, `agents_trust` recorded the page's
/// digest at once: this test then fails on "nothing is trusted while the user has not answered".)
#[tokio::test]
async fn a_trust_the_page_asks_for_records_nothing_without_the_users_answer() {
    let _display = DISPLAY.lock().await;
    let workspace = untrusted_test_agent();
    let (db, root) = (workspace.db(), workspace.path().to_owned());
    let check = move || runs_and_trust(&db, &root);
    assert_eq!(check(), (0, false));
    App::run(&workspace, move |client| async move {
        wait_for(&client, "#run-prompt").await;
        client
            .execute(
                "window.trustAnswer = 'pending'; \
                 const invoke = window.__TAURI_INTERNALS__.invoke; \
                 invoke('run_start', { agent: 'test-agent', prompt: 'rm -rf', session_id: null }) \
                 .catch((refusal) => invoke('agents_trust', { digest: refusal.details.digest, \
                   agent: 'test-agent', prompt: 'rm -rf', session_id: null, node: null })) \
                 .then((value) => { window.trustAnswer = value; }, (error) => { window.trustAnswer = error; });",
                Vec::new(),
            )
            .await
            .expect("call agents_trust from the page");
        assert!(
            within(Duration::from_secs(15), || x11::has_window(TRUST_TITLE)).await,
            "the shell asks the user in the system's dialog"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            check(),
            (0, false),
            "nothing is trusted while the user has not answered"
        );
        display_screenshot("trust-native-unanswered.png");
        x11::ask_to_close(TRUST_TITLE).expect("close the system's dialog");
        eventually("the page hears the answer: not trusted", || async {
            let answer = client
                .execute("return window.trustAnswer;", Vec::new())
                .await
                .map_err(|e| e.to_string())?;
            (answer == serde_json::json!(false))
                .then_some(())
                .ok_or_else(|| format!("the page holds {answer}"))
        })
        .await;
        assert_eq!(check(), (0, false), "closed unanswered: nothing trusted, nothing ran");
    })
    .await;
}

/// Trust and run in the window, then the user's yes in the system's dialog: the launch is
/// trusted and the run starts; the next run asks nothing.
#[tokio::test]
async fn answering_yes_in_the_system_dialog_trusts_and_the_run_starts() {
    let _display = DISPLAY.lock().await;
    let workspace = untrusted_test_agent();
    let (db, root) = (workspace.db(), workspace.path().to_owned());
    let check = move || runs_and_trust(&db, &root);
    App::run(&workspace, move |client| async move {
        harness::start_run(&client, "first").await;
        wait_for(&client, "#trust-dialog").await;
        harness::click(&client, "#trust-run").await;
        assert!(
            within(Duration::from_secs(15), || x11::has_window(TRUST_TITLE)).await,
            "the shell asks the user in the system's dialog"
        );
        assert_eq!(check(), (0, false), "nothing before the user's yes");
        // The button "_Trust and run": its mnemonic.
        answer_natively(TRUST_TITLE, "Alt_L+t", "trust-native.png").await;
        wait_for(&client, ".live-run[data-status='success']").await;
        assert_eq!(check(), (1, true), "trusted, and the run ran");

        harness::click(&client, ".live-run .dismiss").await;
        harness::start_run(&client, "second").await;
        eventually("the second run ran without asking", || async {
            if client.find(fantoccini::Locator::Css("#trust-dialog")).await.is_ok() || x11::has_window(TRUST_TITLE) {
                return Err("asked again".to_owned());
            }
            (check().0 == 2)
                .then_some(())
                .ok_or_else(|| "one run so far".to_owned())
        })
        .await;
    })
    .await;
}

/// Issue 26, point 8: a link switched the window to any folder without asking and added it to
/// Open Recent. A link to a folder the studio has not opened is asked about in the system's
/// dialog: closed unanswered, nothing changes; "Open" opens it.
#[tokio::test]
async fn a_link_to_a_folder_not_opened_before_asks_first() {
    let _display = DISPLAY.lock().await;
    let first = Workspace::with_sessions(&[FANOUT]);
    let stranger = Workspace::with_sessions(&[PIPELINE]);
    let (db, data_home) = (first.db(), first.data_home().to_path_buf());
    let first_root = first.path().canonicalize().unwrap().display().to_string();
    let stranger_root = stranger.path().canonicalize().unwrap();
    let mut link = url::Url::parse("zibby-studio://open").unwrap();
    link.query_pairs_mut()
        .append_pair("workspace", stranger_root.to_str().unwrap());
    let link = link.to_string();
    let recent = {
        let db = db.clone();
        move || {
            studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.clone()))
                .unwrap()
                .recent_workspaces(10)
                .unwrap()
        }
    };
    App::run(&first, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let open_link = || launch_link(&link, &db, &data_home);
        assert!(open_link().success(), "the link's launch hands over and exits");
        assert!(
            within(Duration::from_secs(15), || x11::has_window(OPEN_FOLDER_TITLE)).await,
            "the shell asks before opening the link's folder"
        );
        display_screenshot("link-unknown-folder.png");
        x11::ask_to_close(OPEN_FOLDER_TITLE).expect("close the dialog");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let shown = texts(&client, ".workspace-path").await;
        assert_eq!(shown, [first_root], "the window stays where it was");
        assert!(
            !recent().contains(&stranger_root),
            "nor is the folder added to Open Recent"
        );

        assert!(open_link().success());
        answer_natively(OPEN_FOLDER_TITLE, "Alt_L+o", "link-unknown-folder-open.png").await;
        eventually("the window shows the link's folder", || async {
            let shown = texts(&client, ".workspace-path").await;
            (shown == [stranger_root.display().to_string()])
                .then_some(())
                .ok_or(format!("{shown:?}"))
        })
        .await;
        assert!(recent().contains(&stranger_root));
    })
    .await;
}

/// Launches the app with `link` on the store `db` and data folder `data_home` (as the desktop
/// opens a `zibby-studio://` link): it hands the link to the running window and exits.
fn launch_link(link: &str, db: &std::path::Path, data_home: &std::path::Path) -> std::process::ExitStatus {
    Command::new(harness::app_binary())
        .arg(link)
        .env("ZIBBY_STUDIO_DB", db)
        .env("XDG_DATA_HOME", data_home)
        .env("XDG_CONFIG_HOME", data_home.join("config"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("open the link")
}

/// The texts of the elements `css` finds.
async fn texts(client: &fantoccini::Client, css: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for element in client
        .find_all(fantoccini::Locator::Css(css))
        .await
        .expect("query the page")
    {
        texts.push(element.text().await.expect("read a text"));
    }
    texts
}

/// The title of the app's askpass dialog (`src-tauri/src/askpass.rs`).
const ASKPASS_TITLE: &str = "Zibby Studio: ssh asks";

#[tokio::test]
async fn a_remote_workspaces_key_passphrase_is_asked_in_the_apps_own_dialog() {
    let _display = DISPLAY.lock().await;
    harness::zstudio();
    let passphrase = "open sesame 27";
    let sshd = test_servers::sshd::Sshd::start_with_key_passphrase(passphrase);
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let target = format!("ssh://{}{}", sshd.alias(), remote.path().display());
    let expected = format!("{}:{}", sshd.alias(), remote.path().display());
    let target_shown = target.clone();
    App::run_on(&here, &target, &["--ssh-config", &config], |client| async move {
        // ssh runs the app as its SSH_ASKPASS: a dialog of its own, not the window.
        assert!(
            within(Duration::from_secs(20), || x11::has_window(ASKPASS_TITLE)).await,
            "no askpass dialog came up"
        );
        // Meanwhile the window says what it is connecting to, not that no workspace is open.
        let connecting = wait_for(&client, "#remote-connecting").await;
        let said = connecting.text().await.unwrap_or_default();
        assert!(said.contains(&target_shown), "{said}");
        x11::focus(Some(ASKPASS_TITLE)).expect("focus the dialog");
        assert!(
            within(Duration::from_secs(5), || x11::has_focus(ASKPASS_TITLE)).await,
            "the askpass dialog did not take the keyboard focus"
        );
        // GTK fills the dialog once it is shown.
        tokio::time::sleep(Duration::from_millis(300)).await;
        x11::type_text(passphrase).expect("type the passphrase");
        display_screenshot("remote-askpass.png");
        x11::press("Return").expect("press Enter");
        eventually(
            "the remote workspace opens with the key the passphrase unlocked",
            || async {
                let label = client
                    .find(fantoccini::Locator::Css("#workspace-remote"))
                    .await
                    .map_err(|e| e.to_string())?;
                let seen = label.text().await.map_err(|e| e.to_string())?;
                (seen == expected).then_some(()).ok_or(seen)
            },
        )
        .await;
        wait_for(&client, &format!("tr[data-session-id='{}']", PIPELINE.id)).await;
        assert!(!x11::has_window(ASKPASS_TITLE), "the dialog is gone");
    })
    .await;
}

/// Export… in a remote workspace: the bundle is written on the host and streamed back to the
/// file the save dialog was told here.
#[tokio::test]
async fn export_in_a_remote_workspace_brings_the_bundle_here() {
    let _display = DISPLAY.lock().await;
    harness::zstudio();
    let sshd = test_servers::sshd::Sshd::start();
    let here = Workspace::empty();
    let remote = Workspace::with_sessions(&[PIPELINE]);
    let config = sshd.ssh_config().display().to_string();
    let target = format!("ssh://{}{}", sshd.alias(), remote.path().display());
    let written = here.data_home().join("from-the-host.zip");
    let bundle = written.clone();
    App::run_on(&here, &target, &["--ssh-config", &config], move |client| async move {
        wait_for(&client, "#workspace-remote").await;
        harness::click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        choose_in_file_dialog("Export session", &written, || {
            harness::click(&client, "#session-export")
        })
        .await;
        let said = wait_for(&client, ".sv-exported")
            .await
            .text()
            .await
            .expect("read the notice");
        assert_eq!(said, format!("Exported to {}", written.display()));
    })
    .await;
    assert!(bundle.is_file(), "the bundle came back here");
    let elsewhere = Workspace::empty();
    let imported = harness::zstudio_in(
        &elsewhere.db(),
        elsewhere.path(),
        &["import".as_ref(), bundle.as_os_str(), "--json".as_ref()],
    );
    let imported: serde_json::Value = serde_json::from_slice(&imported).expect("--json prints JSON");
    assert_eq!(imported["session_id"], PIPELINE.id);
}
