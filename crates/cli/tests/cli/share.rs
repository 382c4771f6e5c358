//! `zstudio export` and `zstudio import`: a session recorded by a real run, exported from one
//! workspace and store and imported into another, answers every command as it did; a captured
//! log and a downloaded session folder become sessions too.

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

use super::{agent_binary, captures, copy_dir, json_lines, json_of, node_pairs, zstudio};

/// A workspace and its own store file.
struct Place {
    dir: TempDir,
}

impl Place {
    fn new() -> Place {
        let dir = TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        Place { dir }
    }

    fn root(&self) -> String {
        self.dir.path().join("ws").to_str().unwrap().to_owned()
    }

    fn db(&self) -> String {
        self.dir.path().join("studio.sqlite").to_str().unwrap().to_owned()
    }

    /// `zstudio ARGS --json -w ROOT --db DB`, its output as JSON.
    fn json(&self, args: &[&str]) -> Value {
        let (root, db) = (self.root(), self.db());
        let mut all = args.to_vec();
        all.extend(["--json", "-w", &root, "--db", &db]);
        json_of(&zstudio(&all, None))
    }

    /// `zstudio ARGS -w ROOT --db DB` with `$HOME` set to `home`, not waited for.
    fn command(&self, args: &[&str], home: &Path) -> std::process::Command {
        let (root, db) = (self.root(), self.db());
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"));
        command
            .args(args)
            .args(["-w", &root, "--db", &db])
            .env_remove("ZIBBY_STUDIO_DB")
            .env("XDG_DATA_HOME", super::data_home())
            .env("HOME", home)
            .stdin(std::process::Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let (root, db) = (self.root(), self.db());
        let mut all = args.to_vec();
        all.extend(["-w", &root, "--db", &db]);
        zstudio(&all, None)
    }
}

/// `value` as text with one place's paths written as the other's, and the import mark out:
/// what must be the same in both. (`.session-info.json` says where the engine wrote it: the
/// copy says it too.)
fn comparable(value: &Value, from: &Place, to: &Place) -> String {
    let mut value = value.clone();
    if let Some(object) = value.as_object_mut() {
        object.remove("imported");
        object
            .get_mut("info")
            .and_then(Value::as_object_mut)
            .map(|info| info.remove("session_path"));
    }
    value.to_string().replace(&from.root(), &to.root())
}

/// A session recorded by a real run of the test agent, with a message and a config that holds
/// a secret.
fn recorded_session(place: &Place) -> String {
    let agent = agent_binary();
    let (root, db) = (place.root(), place.db());
    let output = zstudio(
        &[
            "run",
            "--json",
            "-w",
            &root,
            "--db",
            &db,
            "--",
            &agent,
            "--nodes",
            "plan:20,act:20",
        ],
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let session = json_lines(&output)[0]["session_id"].as_str().unwrap().to_owned();
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.into())).unwrap();
    let workspace = studio_core::Workspace::open(&root).unwrap();
    store
        .message_append(
            &workspace,
            &studio_core::SessionId::parse(&session).unwrap(),
            "user",
            "please marimba the plan",
            std::time::SystemTime::now(),
        )
        .unwrap();
    let info = Path::new(&root)
        .join(".zibby/output/sessions")
        .join(&session)
        .join(".session-info.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&info).unwrap()).unwrap();
    value["config"] = serde_json::json!({"apiKey": "sk-zibby-secret-4242"});
    let modified = std::fs::metadata(&info).unwrap().modified().unwrap();
    std::fs::write(&info, serde_json::to_vec(&value).unwrap()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&info)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    session
}

/// Every member of a bundle, unpacked as text.
fn bundle_text(path: &Path) -> String {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut text = String::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
    }
    text
}

fn spans_of(db: &str, session: &str, root: &str) -> Vec<(String, String, i64, String, bool)> {
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.into())).unwrap();
    let workspace = studio_core::Workspace::open(root).unwrap();
    let runs = store
        .runs(&workspace, Some(&studio_core::SessionId::parse(session).unwrap()))
        .unwrap();
    runs.iter()
        .flat_map(|run| store.spans(&run.id).unwrap())
        .map(|s| {
            (
                s.name,
                s.kind.to_string(),
                s.depth,
                s.status.as_str().to_owned(),
                s.parent_id.is_some(),
            )
        })
        .collect()
}

#[test]
fn a_session_exported_and_imported_elsewhere_answers_every_command_the_same() {
    let (from, to) = (Place::new(), Place::new());
    let session = recorded_session(&from);
    let bundle = from.dir.path().join("shared.zip");
    // A home folder that holds nothing of either place: what is compared is as it was recorded
    // (redaction is `export_redacts_tokens_and_writes_the_home_folder_as_tilde`'s).
    let exported = json_of(
        &from
            .command(
                &["export", &session, "-o", bundle.to_str().unwrap(), "--json"],
                Path::new("/nonexistent-home"),
            )
            .output()
            .unwrap(),
    );
    assert_eq!(exported["session_id"], session.as_str());
    assert_eq!(exported["config_included"], false);
    let text = bundle_text(&bundle);
    assert!(
        !text.contains("sk-zibby-secret-4242"),
        "the config is left out by default"
    );
    assert!(text.contains("\"format_version\": 2"), "the manifest says its version");

    let imported = to.json(&["import", bundle.to_str().unwrap()]);
    assert_eq!(imported["session_id"], session.as_str());

    let show = |place: &Place| place.json(&["show", &session]);
    assert_eq!(
        comparable(&show(&from), &from, &to),
        comparable(&show(&to), &to, &to),
        "show gives the same status, nodes, times and files"
    );
    assert_eq!(show(&to)["status"], "success");
    assert!(show(&to)["imported"]["from"].as_str().unwrap().ends_with("shared.zip"));
    for args in [
        vec!["logs", session.as_str()],
        vec!["runs", "--session", session.as_str()],
        vec!["search", "plan"],
        vec!["search", "marimba"],
        vec!["tail", session.as_str(), "--lines", "50"],
        vec!["sessions"],
    ] {
        let (before, after) = if args[0] == "tail" {
            let lines = |place: &Place| {
                let (root, db) = (place.root(), place.db());
                let mut all = args.clone();
                all.extend(["--json", "-w", &root, "--db", &db]);
                Value::from(json_lines(&zstudio(&all, None)))
            };
            (lines(&from), lines(&to))
        } else {
            (from.json(&args), to.json(&args))
        };
        // Paths of the folder are where it is now; what was recorded (a log's `session_path`) is
        // what it was; a run's `workspace` is the store's own.
        let normal = |value: &Value, place: &Place| {
            let mut value = value.clone();
            for item in value.as_array_mut().into_iter().flatten() {
                if let Some(object) = item.as_object_mut() {
                    object.remove("workspace");
                    // The keeper's folder was of the machine that ran it: not exported.
                    object.remove("keeper_dir");
                }
            }
            match args[0] {
                "tail" | "sessions" => value.to_string().replace(&place.root(), "ROOT"),
                // Hits come newest first by row: the import stores a run's output in fewer,
                // larger blocks than the run did. The same hits, then.
                "search" => {
                    let mut hits: Vec<String> = value.as_array().unwrap().iter().map(Value::to_string).collect();
                    hits.sort();
                    hits.join("\n")
                }
                _ => value.to_string(),
            }
        };
        assert_eq!(
            normal(&before, &from),
            normal(&after, &to),
            "`{}` gives the same answer",
            args.join(" ")
        );
        assert!(
            before.as_array().is_some_and(|a| !a.is_empty()),
            "`{}` has something to compare",
            args.join(" ")
        );
    }
    assert_eq!(
        spans_of(&from.db(), &session, &from.root()),
        spans_of(&to.db(), &session, &to.root()),
        "the Timeline's spans are the same"
    );

    // The same id again is refused, and changes nothing; --as-new gives it a new one.
    let again = to.run(&["import", bundle.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains(&session) && said.contains("--as-new"), "{said}");
    assert_eq!(to.json(&["sessions"]).as_array().unwrap().len(), 1);
    let copy = to.json(&["import", bundle.to_str().unwrap(), "--as-new"]);
    let new_id = copy["session_id"].as_str().unwrap();
    assert_ne!(new_id, session);
    let copied = to.json(&["show", new_id]);
    assert_eq!(copied["status"], "success");
    assert_eq!(copied["nodes"].as_array().unwrap().len(), 2, "{copied}");
    let story = |logs: Value| -> Vec<(String, String)> {
        logs.as_array()
            .unwrap()
            .iter()
            .map(|l| (l["event"].to_string(), l["message"].to_string()))
            .collect()
    };
    assert_eq!(
        story(to.json(&["logs", new_id])),
        story(to.json(&["logs", &session])),
        "the copy has the same log (its runs have ids of their own)"
    );
    assert_eq!(to.json(&["sessions"]).as_array().unwrap().len(), 2);

    // With --include-config the secret goes with it.
    let with_config = from.dir.path().join("with-config.zip");
    from.json(&[
        "export",
        &session,
        "-o",
        with_config.to_str().unwrap(),
        "--include-config",
    ]);
    assert!(bundle_text(&with_config).contains("sk-zibby-secret-4242"));
}

#[test]
fn a_captured_log_is_imported_with_the_timeline_parse_reads() {
    let place = Place::new();
    let capture = captures().join("head-bb10e85-91-throw-custom-throw");
    let (stdout, stderr) = (capture.join("stdout.txt"), capture.join("stderr.txt"));
    let parsed = json_of(&zstudio(
        &[
            "parse",
            "--json",
            "--exit-code",
            "1",
            "--stderr",
            stderr.to_str().unwrap(),
        ],
        Some(&stdout),
    ));
    let imported = place.json(&[
        "import",
        stdout.to_str().unwrap(),
        "--stderr",
        stderr.to_str().unwrap(),
        "--exit-code",
        "1",
    ]);
    assert_eq!(imported["kind"], "log");
    assert_eq!(imported["session_id"], parsed["session_id"], "the log's own session id");
    let session = imported["session_id"].as_str().unwrap();
    let show = place.json(&["show", session]);
    assert_eq!(show["status"], parsed["status"]);
    assert_eq!(
        node_pairs(&show["nodes"]),
        node_pairs(&parsed["nodes"]),
        "the nodes parse reads"
    );
    let runs = place.json(&["runs", "--session", session]);
    assert_eq!(runs[0]["error"], parsed["error"]);
    let logs = place.json(&["logs", session]);
    assert!(
        logs.as_array().unwrap().iter().any(|l| l["event"] == "run.imported"),
        "{logs}"
    );
    let tail = place.run(&["tail", session, "--lines", "100"]);
    assert!(
        String::from_utf8_lossy(&tail.stdout).contains("Session"),
        "the output is stored"
    );
    // A log without an exit status that does not say it ended is not "running" here: how it
    // ended is unknown (docs/cli.md), in the run and the session alike.
    let plain = place.json(&["import", stdout.to_str().unwrap(), "--as-new"]);
    let session = plain["session_id"].as_str().unwrap();
    let shown = place.json(&["show", session]);
    assert_eq!(shown["status"], "unknown", "{shown}");
    let runs = place.json(&["runs", "--session", session]);
    assert_eq!(runs[0]["status"], "unknown", "{runs}");
}

#[test]
fn a_downloaded_session_folder_is_imported_as_it_was() {
    let place = Place::new();
    let download = TempDir::new().unwrap();
    let source = captures().join("head-bb10e85-93-fanout-markers/cwd/.zibby/output/sessions/1795952527924_osmf");
    let folder = download.path().join("1795952527924_osmf");
    copy_dir(&source, &folder);
    let reference = Place::new();
    copy_dir(
        &source,
        &Path::new(&reference.root()).join(".zibby/output/sessions/1795952527924_osmf"),
    );
    // Copies: their times are those of the copy, the same in both.
    let imported = place.json(&["import", folder.to_str().unwrap()]);
    assert_eq!(imported["kind"], "folder");
    let show = place.json(&["show", "1795952527924_osmf"]);
    let expected = reference.json(&["show", "1795952527924_osmf"]);
    assert_eq!(show["status"], expected["status"]);
    assert_eq!(
        show["nodes"].as_array().unwrap().len(),
        expected["nodes"].as_array().unwrap().len()
    );
    for (a, b) in show["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(expected["nodes"].as_array().unwrap())
    {
        assert_eq!((&a["name"], &a["status"]), (&b["name"], &b["status"]));
    }
    assert!(folder.join("left/raw_stream_output.txt").exists(), "copied, not moved");
    let again = place.run(&["import", folder.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "an id the workspace has is refused");
}

#[test]
fn open_starts_the_app_on_the_session_and_refuses_an_unknown_one() {
    let place = Place::new();
    let session = "1795952527924_osmf";
    let source = captures()
        .join("head-bb10e85-93-fanout-markers/cwd/.zibby/output/sessions")
        .join(session);
    copy_dir(
        &source,
        &Path::new(&place.root()).join(".zibby/output/sessions").join(session),
    );
    // The app is faked by a script that writes down how it was started.
    let told = place.dir.path().join("told.txt");
    let app = place.dir.path().join("zibby-studio");
    std::fs::write(
        &app,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
            told.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&app, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (root, db) = (place.root(), place.db());
    let opened = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["open", session, "--json", "-w", &root, "--db", &db])
        .env("ZIBBY_STUDIO_APP", &app)
        .output()
        .unwrap();
    let opened = json_of(&opened);
    assert_eq!(opened["session_id"], session);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !told.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let args = std::fs::read_to_string(&told).unwrap();
    let real_root = std::fs::canonicalize(&root).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        ["--db", db.as_str(), "--session", session, real_root.to_str().unwrap()],
        "the app is asked for the session of the workspace, on the same store"
    );
    let unknown = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["open", "1795952527924_none", "-w", &root, "--db", &db])
        .env("ZIBBY_STUDIO_APP", &app)
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("1795952527924_none"));
}

/// The members of a bundle that hold what the studio recorded of how the session ran.
fn recorded_members(path: &Path) -> String {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut text = String::new();
    for name in [
        "records/runs.jsonl",
        "records/logs.jsonl",
        "session/.session-info.json",
        "manifest.json",
    ] {
        let mut entry = archive.by_name(name).unwrap();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
    }
    text
}

/// Issue 26, point 8: a token in the command line and the home folder are not in the default
/// export, and the manifest and the command say what was redacted.
#[test]
fn export_redacts_a_token_on_the_command_line_and_the_home_folder() {
    let place = Place::new();
    let home = place.dir.path().to_owned();
    let agent = agent_binary();
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let (root, db) = (place.root(), place.db());
    let output = zstudio(
        &[
            "run",
            "--json",
            "-w",
            &root,
            "--db",
            &db,
            "--",
            "env",
            &format!("GITHUB_TOKEN={token}"),
            &agent,
            "--nodes",
            "plan:20",
        ],
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let session = json_lines(&output)[0]["session_id"].as_str().unwrap().to_owned();
    let bundle = place.dir.path().join("shared.zip");
    let exported = place
        .command(&["export", &session, "-o", bundle.to_str().unwrap()], &home)
        .output()
        .unwrap();
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let said = String::from_utf8_lossy(&exported.stdout);
    assert!(said.contains("the home folder written as ~"), "{said}");
    // Issue 40, point 9: what the bundle carries as it is, said every time.
    assert!(
        said.contains("included as they are: the prompts, what the agent printed and wrote"),
        "{said}"
    );
    let text = recorded_members(&bundle);
    assert!(!text.contains(token), "the token is redacted:\n{text}");
    assert!(text.contains("GITHUB_TOKEN=[redacted]"), "{text}");
    assert!(
        !text.contains(home.to_str().unwrap()),
        "the home folder is written as ~:\n{text}"
    );
    assert!(text.contains("~/ws/.zibby/output/sessions/"), "{text}");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&bundle).unwrap()).unwrap();
    let manifest: Value = serde_json::from_reader(archive.by_name("manifest.json").unwrap()).unwrap();
    assert_eq!(manifest["redaction"]["home_as_tilde"], true, "{manifest}");
    assert!(
        manifest["redaction"]["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["what"] == "a GitHub gh…_ token" && s["member"] == "records/runs.jsonl"),
        "{manifest}"
    );
}

/// Issue 26, point 7: an import killed part-way (SIGKILL while it copies) leaves its staging
/// folder; the next import removes it.
#[test]
fn the_staging_folder_of_an_import_killed_part_way_is_swept_by_the_next() {
    let place = Place::new();
    let download = TempDir::new().unwrap();
    let folder = download.path().join("1796000000000_kill");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(".session-info.json"), "{}").unwrap();
    // 600 MiB to copy (a sparse file: nothing on disk until the import writes it).
    std::fs::File::create(folder.join("big.bin"))
        .unwrap()
        .set_len(600 << 20)
        .unwrap();
    let output = Path::new(&place.root()).join(".zibby/output");
    let staging = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&output)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".import-"))
            .collect()
    };
    let mut import = place
        .command(&["import", folder.to_str().unwrap()], Path::new("/nonexistent-home"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while staging().is_empty() {
        assert!(started.elapsed().as_secs() < 30, "the import never began");
        assert!(
            import.try_wait().unwrap().is_none(),
            "the import ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    import.kill().unwrap();
    import.wait().unwrap();
    let left = staging();
    assert_eq!(left.len(), 1, "the killed import left its folder: {left:?}");

    // Another import (of something else) sweeps it; the folder can be imported again.
    let log = download.path().join("run.log");
    std::fs::write(&log, "hello\n").unwrap();
    place.json(&["import", log.to_str().unwrap()]);
    assert!(staging().is_empty(), "swept: {:?}", staging());
    assert!(!left[0].exists());
}

/// Issue 26, point 7: `--max-bytes` sets what an import may write; the error says the limit.
#[test]
fn max_bytes_bounds_an_import_and_the_error_says_how_to_raise_it() {
    let place = Place::new();
    let download = TempDir::new().unwrap();
    let log = download.path().join("run.log");
    std::fs::write(&log, "a line of output\n".repeat(200)).unwrap();
    let refused = place.run(&["import", log.to_str().unwrap(), "--max-bytes", "1K"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    for part in ["run.log", "1 KiB (1024 bytes)", "--max-bytes"] {
        assert!(said.contains(part), "{part}: {said}");
    }
    let imported = place.json(&["import", log.to_str().unwrap(), "--max-bytes", "4KiB"]);
    assert_eq!(imported["kind"], "log");
    let wrong = place.run(&["import", log.to_str().unwrap(), "--max-bytes", "4 parsecs"]);
    assert_eq!(
        wrong.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}
