//! What the studio writes: never through a symbolic link a workspace (or an agent) planted, and
//! for its owner's eyes only. Real runs, real folders, a real SQLite store.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use studio_core::runner::{RunEvent, RunRequest, STOP_FILES};
use studio_core::{Error, SessionId, Status};

use crate::harness::{self, keeper_binary, wait_for, Bench};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn bench(kept: bool) -> Bench {
    // The data folder does not exist yet: the store creates it.
    harness::bench("data/studio.sqlite", kept)
}

fn request(b: &Bench, args: &[&str]) -> RunRequest {
    RunRequest {
        prompt: Some("a private prompt".into()),
        ..harness::request(b, args)
    }
}

fn finished(run_id: &str) -> impl Fn(&RunEvent) -> bool + '_ {
    move |e| matches!(e, RunEvent::RunFinished { run_id: id, .. } if id == run_id)
}

#[test]
fn stop_files_are_never_written_through_a_symbolic_link() {
    let b = bench(false);
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "long:20000", "--ignore-stop"]))
        .unwrap();
    wait_for(&b.events, |e| matches!(e, RunEvent::NodeBegin { .. }));
    // The agent (or the workspace) put links where the stop files go: to a file of the user's,
    // and to a place where nothing is yet.
    let precious = b.dir.path().join("precious");
    std::fs::write(&precious, "keep me\n").unwrap();
    let nowhere = b.dir.path().join("created-through-a-link");
    symlink(&nowhere, run.session_path.join(STOP_FILES[0])).unwrap();
    symlink(&precious, run.session_path.join(STOP_FILES[1])).unwrap();

    match b.supervisor.stop(&run.run_id, false) {
        Err(Error::SymlinkRefused { path }) => assert_eq!(path, run.session_path.join(STOP_FILES[0])),
        other => panic!("a graceful stop through symbolic links: {other:?}"),
    }
    let message = Error::SymlinkRefused {
        path: run.session_path.join(STOP_FILES[0]),
    }
    .to_string();
    assert!(
        message.contains(&run.session_path.join(STOP_FILES[0]).display().to_string()),
        "{message}"
    );
    // Through another process's stop, and through a link to the session folder, the same.
    let store = b.supervisor.store();
    let elsewhere = studio_core::runner::stop_elsewhere(store, &run.run_id, &run.session_path, false);
    assert!(matches!(elsewhere, Err(Error::SymlinkRefused { .. })), "{elsewhere:?}");
    for name in STOP_FILES {
        std::fs::remove_file(run.session_path.join(name)).unwrap();
    }
    let alias = b.dir.path().join("alias");
    symlink(&run.session_path, &alias).unwrap();
    match studio_core::runner::stop_elsewhere(store, &run.run_id, &alias, false) {
        Err(Error::SymlinkRefused { path }) => assert_eq!(path, alias),
        other => panic!("a stop through a linked session folder: {other:?}"),
    }
    assert!(
        !run.session_path.join(STOP_FILES[0]).exists(),
        "nothing written through the alias"
    );
    for name in STOP_FILES {
        symlink(&nowhere, run.session_path.join(name)).unwrap();
    }

    // A forced stop does not need the files: it ends the run, and writes through no link.
    b.supervisor.stop(&run.run_id, true).unwrap();
    wait_for(&b.events, finished(&run.run_id));
    assert_eq!(store.run(&run.run_id).unwrap().status, Status::Cancelled);
    assert!(!nowhere.exists(), "a stop file was created through a dangling link");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
}

#[test]
fn a_run_does_not_start_in_a_session_folder_that_is_a_symbolic_link() {
    let b = bench(false);
    let elsewhere = b.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let session = SessionId::parse("1795952600000_link").unwrap();
    let folder = b.workspace.session_path(&session);
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    symlink(&elsewhere, &folder).unwrap();
    let mut linked = request(&b, &["--nodes", "a:10"]);
    linked.session = Some(session);
    match b.supervisor.start(linked) {
        Err(Error::SymlinkRefused { path }) => assert_eq!(path, folder),
        other => panic!("a run in a linked session folder: {other:?}"),
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written there"
    );
}

#[test]
fn the_store_run_folders_and_messages_are_the_owners_alone() {
    let b = bench(true);
    let run = b
        .supervisor
        .start(request(&b, &["--nodes", "long:20000", "--ignore-stop"]))
        .unwrap();
    wait_for(&b.events, |e| matches!(e, RunEvent::NodeBegin { .. }));
    let data = b.dir.path().join("data");
    let keeper_dir = data.join("runs").join(&run.run_id);
    // A kept run's conversation file is beside the keeper's files (removed with them).
    let messages = keeper_dir.join("messages.json");
    let expected = [
        (data.clone(), 0o700),
        (data.join("studio.sqlite"), 0o600),
        (data.join("studio.sqlite-wal"), 0o600),
        (data.join("studio.sqlite-shm"), 0o600),
        (data.join("runs"), 0o700),
        (keeper_dir.clone(), 0o700),
        (keeper_dir.join("stdout"), 0o600),
        (keeper_dir.join("stderr"), 0o600),
        (messages, 0o600),
        (run.session_path.clone(), 0o700),
    ];
    let found: Vec<(String, String)> = expected
        .iter()
        .map(|(path, _)| (path.display().to_string(), format!("{:o}", mode(path))))
        .collect();
    b.supervisor.stop(&run.run_id, true).unwrap();
    wait_for(&b.events, finished(&run.run_id));
    let wanted: Vec<(String, String)> = expected
        .iter()
        .map(|(path, mode)| (path.display().to_string(), format!("{mode:o}")))
        .collect();
    assert_eq!(found, wanted);

    // The keeper's exit file, from the keeper itself.
    let run_dir = b.dir.path().join("kept");
    let status = std::process::Command::new(keeper_binary())
        .arg("keep")
        .arg("--run-dir")
        .arg(&run_dir)
        .args(["--", "true"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!([mode(&run_dir), mode(&run_dir.join("exit"))], [0o700, 0o600]);
}
