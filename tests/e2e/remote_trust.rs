//! Issue 27, point 4: trust of a remote workspace's agents is asked for in the window as for
//! local ones: the same window prompt, then the system's dialog showing the launch the host's
//! studio server worked out; the user's yes is recorded in the host's store (never here), and the
//! run starts there. Quitting then asks nothing about it: it is the host's run, and goes on
//! there. The real loopback sshd and `zstudio serve --stdio` on the other end, as in `remote.rs`.

use std::path::Path;
use std::time::Duration;

use test_servers::sshd::Sshd;

use crate::harness::{self, eventually, wait_for, App, Workspace};
use crate::{within, x11, DISPLAY, TRUST_TITLE};

/// The store of the sshd's logins (the remote studio server's), opened as `zstudio` opens it:
/// the runs no studio process follows any more settled first.
fn host_store(sshd: &Sshd) -> studio_core::store::Store {
    let db = sshd.home().join("data/zibby-studio/studio.sqlite");
    studio_core::app::open_store(&studio_core::store::StoreLocation::File(db)).expect("open the host's store")
}

/// Whether `store` trusts the test agent of the workspace at `root`, and the statuses of its runs
/// there, oldest first.
fn trust_and_runs(store: &studio_core::store::Store, root: &Path) -> (bool, Vec<studio_core::Status>) {
    let workspace = studio_core::Workspace::open(root).expect("open the workspace");
    let found = studio_core::agents::find(root, "test-agent", false).expect("the agent");
    let trusted = store.launch_trusted(&workspace, &found.launch).expect("read the trust");
    let mut runs = store.runs(&workspace, None).expect("the runs");
    runs.reverse();
    (trusted, runs.into_iter().map(|run| run.status).collect())
}

#[tokio::test]
async fn an_untrusted_remote_agent_asks_then_runs_on_the_host_and_quitting_leaves_it_there() {
    let _display = DISPLAY.lock().await;
    harness::zstudio();
    let sshd = Sshd::start();
    let here = Workspace::empty();
    let agent = harness::test_agent().display().to_string();
    let remote = Workspace::with_untrusted_agent(
        "test-agent",
        &[&agent, "--nodes", "plan:10,write:4000", "--prompt", "{prompt}"],
    );
    let (root, db) = (remote.path().to_owned(), here.db());
    assert_eq!(trust_and_runs(&host_store(&sshd), &root), (false, vec![]));
    let config = sshd.ssh_config().display().to_string();
    let target = format!("ssh://{}{}", sshd.alias(), remote.path().display());
    let folder = remote.path().file_name().unwrap().to_string_lossy().into_owned();
    let host_db = sshd.home().join("data/zibby-studio/studio.sqlite");
    App::run_on(&here, &target, &["--ssh-config", &config], move |client| async move {
        wait_for(&client, "#workspace-remote").await;
        harness::start_run(&client, "trust me there").await;
        wait_for(&client, "#trust-dialog").await;
        harness::click(&client, "#trust-run").await;
        assert!(
            within(Duration::from_secs(15), || x11::has_window(TRUST_TITLE)).await,
            "the shell asks the user in the system's dialog"
        );
        let host = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(host_db.clone()))
            .expect("open the host's store");
        assert_eq!(
            trust_and_runs(&host, &root),
            (false, vec![]),
            "nothing before the user's yes"
        );
        // The button "_Trust and run": its mnemonic.
        crate::answer_natively(TRUST_TITLE, "Alt_L+t", "remote-trust-native.png").await;
        wait_for(&client, ".live-run[data-status='success']").await;
        eventually("the host's store has the trust and the run", || async {
            let seen = trust_and_runs(&host, &root);
            (seen == (true, vec![studio_core::Status::Success]))
                .then_some(())
                .ok_or(format!("{seen:?}"))
        })
        .await;

        // The next run asks nothing; quitting while it runs asks nothing either: it is the host's.
        harness::click(&client, ".live-run .dismiss").await;
        harness::start_run(&client, "go on without me").await;
        wait_for(&client, ".live-run .node[data-node='write'][data-status='running']").await;
        assert!(client.find(fantoccini::Locator::Css("#trust-dialog")).await.is_err());
        x11::ask_to_close(&folder).expect("ask the window to close");
    })
    .await;
    assert!(
        harness::quits(&db).await,
        "the app quits without asking about the host's run"
    );
    let store = host_store(&sshd);
    let workspace = studio_core::Workspace::open(remote.path()).expect("open the workspace");
    let ended = std::time::Instant::now();
    loop {
        let (trusted, runs) = trust_and_runs(&store, remote.path());
        assert!(trusted);
        if runs == [studio_core::Status::Success, studio_core::Status::Success] {
            break;
        }
        assert!(
            ended.elapsed() < Duration::from_secs(60),
            "the host's run goes on after the app quit and ends well: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        studio_core::runner::reconcile(&store, std::time::SystemTime::now()).expect("settle the host's runs");
    }
    let here_store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(here.db()))
        .expect("open the app's store");
    assert!(
        here_store.runs(&workspace, None).expect("the runs").is_empty(),
        "no run recorded here"
    );
    let found = studio_core::agents::find(remote.path(), "test-agent", false).expect("the agent");
    assert!(
        !here_store
            .launch_trusted(&workspace, &found.launch)
            .expect("read the trust"),
        "no trust recorded here"
    );
}
