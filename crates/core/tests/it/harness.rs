//! Small helpers shared by the integration tests.

use std::path::PathBuf;

/// The repository's root folder (the workspace's, above `crates/core`).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's copy of the shared engine captures (`tests/fixtures/zibby-captures`).
pub fn captures_dir() -> PathBuf {
    project_root().join("tests/fixtures/zibby-captures")
}

pub fn capture(name: &str) -> PathBuf {
    let dir = captures_dir().join(name);
    assert!(dir.is_dir(), "missing capture {}", dir.display());
    dir
}

/// The exit status a capture recorded (`exit_code.txt`, first word).
pub fn capture_exit_status(dir: &std::path::Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("exit_code.txt")).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// Copies a folder tree (the tests never write into the fixtures).
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The test agent (`tests/agent`), built by `cargo test --workspace` next to this test binary.
pub fn agent_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("zibby-test-agent");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p zibby-test-agent` first)",
        path.display()
    );
    path
}

/// `zstudio` (the run keeper), built by `cargo build -p zstudio` next to this test binary.
pub fn keeper_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("zstudio");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p zstudio` first",
        path.display()
    );
    path
}

/// Whether a process still runs (a zombie waiting for its reaper does not).
pub fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Processes of a process group that still run (zombies excluded).
pub fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        // After the command: state, ppid, pgrp.
        if fields.len() > 2 && fields[2] == group.to_string() && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}

/// A supervisor over a real store in a temporary folder, its workspace (`project/`), and its
/// event stream: what the runner tests start runs on.
pub struct Bench {
    pub dir: tempfile::TempDir,
    /// The store file.
    pub db: PathBuf,
    pub workspace: studio_core::Workspace,
    pub supervisor: studio_core::runner::Supervisor,
    pub events: studio_core::runner::RunEvents,
}

/// A [`Bench`] whose store is `store_file` below its folder (missing folders are made by the
/// store); with `kept`, runs go through the run keeper (`zstudio keep`), as `zstudio run` starts them.
pub fn bench(store_file: &str, kept: bool) -> Bench {
    use studio_core::runner::{Keeper, Supervisor};
    use studio_core::store::{Store, StoreLocation};
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let workspace = studio_core::Workspace::open(dir.path().join("project")).unwrap();
    let db = dir.path().join(store_file);
    let location = StoreLocation::File(db.clone());
    let store = std::sync::Arc::new(Store::open(&location).unwrap());
    let supervisor = if kept {
        Supervisor::with_keeper(
            store,
            Keeper {
                program: keeper_binary(),
                // Beside the bench's store, in its own folder (a store that is not the default
                // one has its keeper's folders in the data folder, which would outlive the test).
                runs_dir: db.parent().unwrap().join("runs"),
            },
        )
    } else {
        Supervisor::new(store)
    };
    let events = supervisor.subscribe();
    Bench {
        dir,
        db,
        workspace,
        supervisor,
        events,
    }
}

/// A run of the test agent with `args` in the bench's workspace, in a new session.
pub fn request(bench: &Bench, args: &[&str]) -> studio_core::runner::RunRequest {
    request_in(&bench.workspace, args)
}

/// A run of the test agent with `args` in `workspace`.
pub fn request_in(workspace: &studio_core::Workspace, args: &[&str]) -> studio_core::runner::RunRequest {
    let mut command = vec![agent_binary().to_string_lossy().into_owned()];
    command.extend(args.iter().map(|a| a.to_string()));
    studio_core::runner::RunRequest {
        workspace: workspace.clone(),
        agent: None,
        command,
        cwd: None,
        env: Vec::new(),
        inherit_env: Default::default(),
        session: None,
        prompt: None,
        node: None,
        grace: studio_core::runner::DEFAULT_GRACE,
        budget: Default::default(),
        over_budget: false,
    }
}

/// The first event `what` accepts, within 30 s of each other.
pub fn wait_for(
    events: &studio_core::runner::RunEvents,
    what: impl Fn(&studio_core::runner::RunEvent) -> bool,
) -> studio_core::runner::RunEvent {
    loop {
        let event = events
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the awaited event came");
        if what(&event) {
            return event;
        }
    }
}

/// An empty workspace (`project/`, its sessions folder made) and where a store file beside it
/// goes (`data/studio.sqlite`, not made).
pub struct StoreSetup {
    pub _dir: tempfile::TempDir,
    pub db: PathBuf,
    pub workspace: studio_core::Workspace,
}

pub fn store_setup() -> StoreSetup {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join(".zibby/output/sessions")).unwrap();
    StoreSetup {
        db: dir.path().join("data/studio.sqlite"),
        workspace: studio_core::Workspace::open(&root).unwrap(),
        _dir: dir,
    }
}

/// An empty workspace (its sessions folder made) with a store file of its own.
pub fn empty_workspace_with_store() -> (tempfile::TempDir, studio_core::Workspace, studio_core::store::Store) {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join(".zibby/output/sessions")).unwrap();
    let workspace = studio_core::Workspace::open(root.path()).unwrap();
    let location = studio_core::store::StoreLocation::File(root.path().join("studio.db"));
    let store = studio_core::store::Store::open(&location).unwrap();
    (root, workspace, store)
}

/// Imports a captured stdout of a run that exited 0 (as `zstudio import LOG --exit-code 0`).
pub fn import_log(
    store: &studio_core::store::Store,
    workspace: &studio_core::Workspace,
    log: &std::path::Path,
) -> studio_core::share::ImportedSession {
    let options = studio_core::share::ImportOptions {
        exit_code: Some(0),
        ..Default::default()
    };
    studio_core::share::import(store, workspace, log, &options, std::time::SystemTime::now()).unwrap()
}
