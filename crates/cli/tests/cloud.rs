//! `zstudio --source s3://…` against moto's S3 server on 127.0.0.1 (`test_servers::moto`): real
//! captured sessions uploaded with boto3, then listed, shown, priced, compared with a
//! local run and imported, by the real binary with the provider's standard variables.

// `zstudio mcp --source URL`, driven by the MCP SDK's client.
#[path = "cloud/mcp.rs"]
mod mcp;
// The official Python MCP SDK's client, running `mcp_client/drive.py`.
#[path = "mcp_client/python.rs"]
mod mcp_python_client;
// The MCP SDK's own client.
#[path = "mcp_client/rust.rs"]
mod mcp_rust_client;
// The injection fixture.
#[path = "mcp_client/injection.rs"]
mod mcp_injection;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use tempfile::TempDir;
use test_servers::emulators::{Emulator, Kind};
use test_servers::moto::Moto;

/// The shared captures of real engine runs, as copied into the repo.
fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zibby-captures")
}

const BUCKET: &str = "team-runs";
const URL: &str = "s3://team-runs/ci";

/// The pipeline capture's session, its id, and the same session with a priced node (a Claude
/// Code stream as the plan's output).
const PIPELINE: &str = "head-bb10e85-02-pipeline-markers";
const PIPELINE_ID: &str = "1795952464415_3prb";
const FANOUT: &str = "head-bb10e85-93-fanout-markers";

struct Setup {
    moto: Moto,
    home: TempDir,
    /// A local workspace holding the same sessions as the bucket.
    local: TempDir,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The bucket's sessions: the pipeline (its plan priced) and the fanout, each complete; the
/// local workspace holds the same.
fn setup() -> Setup {
    let moto = Moto::start();
    let (local, ops) = bucket_sessions();
    moto.upload(BUCKET, true, json!(ops));
    Setup {
        moto,
        home: TempDir::new().unwrap(),
        local,
    }
}

/// A local workspace holding the bucket's sessions, and the uploads that put them under `ci/`,
/// each complete.
fn bucket_sessions() -> (TempDir, Vec<Value>) {
    let local = TempDir::new().unwrap();
    let sessions = local.path().join(".zibby/output/sessions");
    for capture in [PIPELINE, FANOUT] {
        for session in std::fs::read_dir(captures().join(capture).join("cwd/.zibby/output/sessions")).unwrap() {
            let session = session.unwrap();
            copy_dir(&session.path(), &sessions.join(session.file_name()));
        }
    }
    let usage = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/usage/claude-code-stream-json.jsonl");
    std::fs::copy(usage, sessions.join(PIPELINE_ID).join("plan/raw_stream_output.txt")).unwrap();
    let mut ops = Vec::new();
    for session in std::fs::read_dir(&sessions).unwrap() {
        let session = session.unwrap();
        let id = session.file_name().into_string().unwrap();
        ops.push(json!({"copy_tree": session.path(), "prefix": format!("ci/{id}/")}));
        ops.push(json!({"put": format!("ci/{id}/.upload-complete"), "text": ""}));
    }
    (local, ops)
}

fn zstudio(setup: &Setup, args: &[&str]) -> Output {
    zstudio_at(&setup.moto.env(), setup.home.path(), &[], args)
}

fn zstudio_with(setup: &Setup, vars: &[(&str, &str)], args: &[&str]) -> Output {
    zstudio_at(&setup.moto.env(), setup.home.path(), vars, args)
}

/// The real binary with the provider's standard variables `server` (pointing at a test server),
/// its cache and data folders in `home`.
fn zstudio_at(server: &[(&str, String)], home: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
    command
        .args(args)
        .env_remove("ZIBBY_STUDIO_DB")
        .env_remove("AWS_PROFILE")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("HOME", home)
        .envs(server.iter().map(|(name, value)| (*name, value)))
        .envs(vars.iter().copied())
        .stdin(Stdio::null());
    command.output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "zstudio failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What a listing says of each session that does not depend on where its folder is.
fn listed(sessions: &Value) -> Vec<(String, Value, Value)> {
    let mut listed: Vec<_> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["status"].clone(),
                s["usage"].clone(),
            )
        })
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    listed
}

#[test]
fn a_bucket_prefix_is_listed_shown_priced_and_exported_as_a_local_workspace() {
    let setup = setup();
    let local_root = setup.local.path().to_str().unwrap();
    let cloud = json_of(&zstudio(&setup, &["--source", URL, "sessions", "--json", "--memory"]));
    let local = json_of(&zstudio(&setup, &["-w", local_root, "sessions", "--json", "--memory"]));
    assert_eq!(listed(&cloud).len(), 2);
    assert_eq!(
        listed(&cloud),
        listed(&local),
        "ids, statuses and usage as the local sessions'"
    );
    let priced = listed(&cloud).into_iter().find(|s| s.0 == PIPELINE_ID).unwrap();
    assert!(
        priced.2["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "priced: {}",
        priced.2
    );

    let shown = json_of(&zstudio(
        &setup,
        &["--source", URL, "show", PIPELINE_ID, "--json", "--memory"],
    ));
    assert_eq!(shown["id"], PIPELINE_ID);
    let bundle = setup.home.path().join("cloud.zip");
    let exported = zstudio(
        &setup,
        &[
            "--source",
            URL,
            "export",
            PIPELINE_ID,
            "-o",
            bundle.to_str().unwrap(),
            "--memory",
        ],
    );
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    assert!(std::fs::metadata(&bundle).unwrap().len() > 0);
}

#[test]
fn a_cloud_session_is_compared_with_a_local_one_and_imported() {
    let setup = setup();
    let work = TempDir::new().unwrap();
    let (_, fanout_id) = {
        let session = std::fs::read_dir(captures().join(FANOUT).join("cwd/.zibby/output/sessions"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        (session.path(), session.file_name().into_string().unwrap())
    };
    // A local run of the same pipeline, but with the plan's original output.
    let local_id = "1795952999999_here";
    copy_dir(
        &captures()
            .join(PIPELINE)
            .join("cwd/.zibby/output/sessions")
            .join(PIPELINE_ID),
        &work.path().join(".zibby/output/sessions").join(local_id),
    );
    let root = work.path().to_str().unwrap();
    let diff = zstudio(
        &setup,
        &[
            "--source",
            URL,
            "-w",
            root,
            "diff",
            PIPELINE_ID,
            local_id,
            "--json",
            "--memory",
        ],
    );
    assert_eq!(
        diff.status.code(),
        Some(1),
        "the runs differ in the plan: {}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let compared: Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert!(compared.to_string().contains("plan"), "{compared}");

    let db = setup.home.path().join("local.sqlite");
    let imported = zstudio(
        &setup,
        &[
            "--source",
            URL,
            "-w",
            root,
            "--db",
            db.to_str().unwrap(),
            "import",
            &fanout_id,
            "--json",
        ],
    );
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let here = work.path().join(".zibby/output/sessions").join(&fanout_id);
    let original = captures()
        .join(FANOUT)
        .join("cwd/.zibby/output/sessions")
        .join(&fanout_id);
    assert_eq!(
        std::fs::read(here.join(".session-info.json")).unwrap(),
        std::fs::read(original.join(".session-info.json")).unwrap()
    );
    let sessions = json_of(&zstudio(
        &setup,
        &["-w", root, "--db", db.to_str().unwrap(), "sessions", "--json"],
    ));
    assert!(sessions
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == fanout_id.as_str()));
}

/// What a bucket's session printed (its node output files, in the mirror) is searched as a local
/// terminal run's is: `search` finds it and names the file; `logs` reads the session's log.
#[test]
fn a_bucket_sessions_printed_text_is_searched() {
    let setup = setup();
    let found = json_of(&zstudio(
        &setup,
        &["--source", URL, "search", "write the code", "--json", "--memory"],
    ));
    let hits = found.as_array().unwrap();
    let files: Vec<(&str, &str, &str)> = hits
        .iter()
        .filter(|hit| hit["kind"] == "file")
        .map(|hit| {
            (
                hit["session_id"].as_str().unwrap(),
                hit["path"].as_str().unwrap(),
                hit["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        files.contains(&(
            PIPELINE_ID,
            "execute/raw_stream_output.txt",
            r#"{"completed":["Read the spec","Write the code"]}"#
        )),
        "{found}"
    );
    assert!(hits.iter().all(|hit| hit["node"].is_string()), "{found}");

    let human = zstudio(&setup, &["--source", URL, "search", "completed", "--memory"]);
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(human.status.success(), "{}", String::from_utf8_lossy(&human.stderr));
    assert!(
        stdout.contains(&format!("{PIPELINE_ID}  file 1 execute/raw_stream_output.txt")),
        "{stdout}"
    );
    assert!(
        zstudio(&setup, &["--source", URL, "search", "zzyzxnotthere", "--memory"])
            .stdout
            .is_empty()
    );

    let logs = zstudio(&setup, &["--source", URL, "logs", PIPELINE_ID, "--memory"]);
    assert!(logs.status.success(), "{}", String::from_utf8_lossy(&logs.stderr));
    let missing = zstudio(&setup, &["--source", URL, "logs", "1795952464415_none", "--memory"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("1795952464415_none"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

#[test]
fn commands_that_change_sessions_are_refused_with_a_source() {
    let home = TempDir::new().unwrap();
    for args in [
        &["--source", URL, "delete", PIPELINE_ID, "--yes"][..],
        &["--source", URL, "run", "--", "true"][..],
        &["--source", URL, "stop", PIPELINE_ID][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(args)
            .env("XDG_CACHE_HOME", home.path())
            .env("XDG_DATA_HOME", home.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("does not take --source") && stderr.contains("read-only"),
            "{stderr}"
        );
    }
    // The cache options mean nothing without a bucket: refused, not ignored.
    for args in [
        &["sessions", "--clear-cache"][..],
        &["sessions", "--cache-limit", "1G"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
            .args(args)
            .env("XDG_CACHE_HOME", home.path())
            .env("XDG_DATA_HOME", home.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("give --source URL with them"), "{stderr}");
    }
}

#[test]
fn access_refused_and_a_session_mid_upload_are_said_on_stderr() {
    let refusing = Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    let home = TempDir::new().unwrap();
    let output = zstudio_at(
        &refusing.env(),
        home.path(),
        &[],
        &["--source", URL, "sessions", "--memory"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("zstudio: s3://team-runs/ci: access refused for access key …ting (AWS_ACCESS_KEY_ID)"),
        "{stderr}"
    );

    let setup = setup();
    setup.moto.upload(
        BUCKET,
        false,
        json!([{"put": "ci/1795953000000_half/plan/raw_stream_output.txt", "text": "half\n"}]),
    );
    let output = zstudio(&setup, &["--source", URL, "sessions", "--json", "--memory"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("session `1795953000000_half` is still being uploaded (1 objects so far)"),
        "{stderr}"
    );
    let listed = json_of(&output);
    assert_eq!(listed.as_array().unwrap().len(), 3);
    // Issue 41, point 8: said by `show` of that session, not of another one.
    let other = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .find(|id| *id != "1795953000000_half")
        .unwrap()
        .to_owned();
    for (id, says) in [(other.as_str(), false), ("1795953000000_half", true)] {
        let output = zstudio(&setup, &["--source", URL, "show", id, "--memory"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.contains("still being uploaded"), says, "show {id}: {stderr}");
    }
}

/// The pipeline's session under `id` in `sessions`, its plan's raw stream 3 MiB of numbered
/// lines (more than the listing fetches whole: it fetches that file's last 1 MiB only).
fn large_output_session(sessions: &Path, id: &str) -> Vec<u8> {
    let session = sessions.join(id);
    copy_dir(
        &captures()
            .join(PIPELINE)
            .join("cwd/.zibby/output/sessions")
            .join(PIPELINE_ID),
        &session,
    );
    let mut output = Vec::new();
    let mut line = 0;
    while output.len() < 3 << 20 {
        output.extend_from_slice(format!("line {line} of a long output\n").as_bytes());
        line += 1;
    }
    std::fs::write(session.join("plan/raw_stream_output.txt"), &output).unwrap();
    output
}

#[test]
fn a_large_cloud_output_is_exported_compared_and_imported_whole_never_as_zeros() {
    let setup = setup();
    let big_id = "1795953100000_big";
    let upload = TempDir::new().unwrap();
    let output = large_output_session(upload.path(), big_id);
    setup.moto.upload(
        BUCKET,
        false,
        json!([
            {"copy_tree": upload.path().join(big_id), "prefix": format!("ci/{big_id}/")},
            {"put": format!("ci/{big_id}/.upload-complete"), "text": ""},
        ]),
    );
    let work = TempDir::new().unwrap();
    let local_id = "1795953100001_here";
    large_output_session(&work.path().join(".zibby/output/sessions"), local_id);
    let root = work.path().to_str().unwrap();

    let bundle = setup.home.path().join("big.zip");
    let exported = zstudio(
        &setup,
        &[
            "--source",
            URL,
            "export",
            big_id,
            "-o",
            bundle.to_str().unwrap(),
            "--memory",
        ],
    );
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&bundle).unwrap()).unwrap();
    let name = (0..zip.len())
        .map(|index| zip.by_index(index).unwrap().name().unwrap().into_owned())
        .find(|name| name.ends_with("plan/raw_stream_output.txt"))
        .unwrap();
    let mut exported_output = Vec::new();
    std::io::Read::read_to_end(&mut zip.by_name(&name).unwrap(), &mut exported_output).unwrap();
    assert!(
        exported_output == output,
        "the bundle holds the output, not the sparse file's zeros"
    );

    let diff = zstudio(
        &setup,
        &[
            "--source", URL, "-w", root, "diff", big_id, local_id, "--json", "--memory",
        ],
    );
    assert_eq!(
        diff.status.code(),
        Some(0),
        "the same run in the bucket and here: {}{}",
        String::from_utf8_lossy(&diff.stdout),
        String::from_utf8_lossy(&diff.stderr)
    );

    // The import copies the session once, from the mirror: nothing is staged in the temp folder
    // (here one that cannot be written).
    let db = setup.home.path().join("local.sqlite");
    let imported = zstudio_with(
        &setup,
        &[("TMPDIR", "/nonexistent/zstudio-tmp")],
        &[
            "--source",
            URL,
            "-w",
            root,
            "--db",
            db.to_str().unwrap(),
            "import",
            big_id,
        ],
    );
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let copied = std::fs::read(
        work.path()
            .join(".zibby/output/sessions")
            .join(big_id)
            .join("plan/raw_stream_output.txt"),
    )
    .unwrap();
    assert!(copied == output, "the imported output is whole");
}

/// `--source 's3://…?profile=NAME'`: the credential chain's profile gives the keys (the shared
/// files' `[NAME]`), none in the variables; without it, the chain has none and says so.
#[test]
fn a_profile_in_the_url_gives_the_credential_chain_its_keys() {
    let setup = setup();
    let home = setup.home.path();
    let (credentials, config) = (home.join("aws-credentials"), home.join("aws-config"));
    std::fs::write(
        &credentials,
        "[moto-reader]\naws_access_key_id = testing\naws_secret_access_key = testing\n",
    )
    .unwrap();
    std::fs::write(&config, "[profile moto-reader]\nregion = us-east-1\n").unwrap();
    let run = |url: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zstudio"));
        command
            .args(["--source", url, "sessions", "--json", "--memory"])
            .env_remove("ZIBBY_STUDIO_DB")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env("AWS_ENDPOINT_URL", setup.moto.endpoint())
            .env("AWS_SHARED_CREDENTIALS_FILE", &credentials)
            .env("AWS_CONFIG_FILE", &config)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("HOME", home)
            .stdin(Stdio::null());
        command.output().unwrap()
    };
    let refused = run(URL);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(URL), "{stderr}");

    let listed = json_of(&run(&format!("{URL}?profile=moto-reader")));
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
}

/// `az://` and `gs://` through the same library as `s3://`, against each provider's emulator
/// (Azurite's blob service; gcp-storage-emulator) pointed at by the provider's own variable
/// (`AZURE_STORAGE_CONNECTION_STRING`; `STORAGE_EMULATOR_HOST`, as Google's libraries read it): the
/// same sessions as the local folders, with their statuses and usage, one shown and exported.
/// A wrong Azure key is refused, naming the identity used.
#[test]
fn azure_and_cloud_storage_prefixes_are_read_as_s3_ones_are() {
    let (local, ops) = bucket_sessions();
    let home = TempDir::new().unwrap();
    let local_root = local.path().to_str().unwrap();
    let here = json_of(&zstudio_at(
        &[],
        home.path(),
        &[],
        &["-w", local_root, "sessions", "--json", "--memory"],
    ));
    for (kind, url) in [
        (Kind::Azurite, "az://team-runs/ci"),
        (Kind::CloudStorage, "gs://team-runs/ci"),
    ] {
        let emulator = Emulator::start(kind);
        emulator.upload(BUCKET, json!(ops));
        let run = |args: &[&str]| zstudio_at(&emulator.env(), home.path(), &[], args);
        let listed_there = json_of(&run(&["--source", url, "sessions", "--json", "--memory"]));
        assert_eq!(listed(&listed_there), listed(&here), "{url}: {}", emulator.log());
        let shown = json_of(&run(&["--source", url, "show", PIPELINE_ID, "--json", "--memory"]));
        assert_eq!(shown["nodes"].as_array().map(Vec::len), Some(3), "{url}: {shown}");
        let bundle = home.path().join(format!("{}.zip", &url[..2]));
        let export = [
            "--source",
            url,
            "export",
            PIPELINE_ID,
            "-o",
            bundle.to_str().unwrap(),
            "--memory",
        ];
        let exported = run(&export);
        assert!(
            exported.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&exported.stderr)
        );
        assert!(
            std::fs::read(&bundle).unwrap().starts_with(b"PK"),
            "{url}: a zip archive"
        );

        if kind == Kind::Azurite {
            let wrong = emulator.connection_string("d3Jvbmcga2V5");
            let refused = zstudio_at(
                &[("AZURE_STORAGE_CONNECTION_STRING", wrong)],
                home.path(),
                &[],
                &["--source", url, "sessions", "--clear-cache", "--memory"],
            );
            let stderr = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(refused.status.code(), Some(1), "{stderr}");
            assert!(
                stderr.contains(url) && stderr.contains("AZURE_STORAGE_CONNECTION_STRING"),
                "{stderr}"
            );
        }
    }
}

/// Tags, notes and views of a bucket's sessions are kept in the local store (the bucket is never
/// written), keyed by the bucket's mirror and the session id: listed, filtered, shown, searched.
#[test]
fn a_bucket_sessions_tags_and_notes_are_kept_in_the_local_store() {
    let setup = setup();
    let tagged = json_of(&zstudio(
        &setup,
        &["--source", URL, "tag", PIPELINE_ID, "nightly", "--json"],
    ));
    assert_eq!(tagged, json!({"session_id": PIPELINE_ID, "tags": ["nightly"]}));
    json_of(&zstudio(
        &setup,
        &["--source", URL, "note", PIPELINE_ID, "the wombat build", "--json"],
    ));
    let listed = json_of(&zstudio(
        &setup,
        &["--source", URL, "sessions", "--tag", "nightly", "--json"],
    ));
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [PIPELINE_ID]);
    assert_eq!(listed[0]["tags"], json!(["nightly"]));
    assert_eq!(listed[0]["has_note"], true);
    let shown = json_of(&zstudio(&setup, &["--source", URL, "show", PIPELINE_ID, "--json"]));
    assert_eq!(
        (&shown["tags"], &shown["note"]),
        (&json!(["nightly"]), &json!("the wombat build"))
    );
    let hits = json_of(&zstudio(&setup, &["--source", URL, "search", "wombat", "--json"]));
    assert_eq!(
        (&hits[0]["kind"], &hits[0]["session_id"]),
        (&json!("note"), &json!(PIPELINE_ID))
    );
    json_of(&zstudio(
        &setup,
        &["--source", URL, "view", "save", "nightly", "--tag", "nightly", "--json"],
    ));
    let through = json_of(&zstudio(
        &setup,
        &["--source", URL, "sessions", "--view", "nightly", "--json"],
    ));
    assert_eq!(through.as_array().unwrap().len(), 1);
    // The local workspace holding the same sessions is another workspace: none of them.
    let local = setup.local.path().to_str().unwrap();
    let here = json_of(&zstudio(
        &setup,
        &["sessions", "-w", local, "--tag", "nightly", "--json"],
    ));
    assert_eq!(here, json!([]));
}

/// A bucket's session (a CI run) is exported as OpenTelemetry traces as the same folder here
/// is: the same ids, parents, names and attributes (its times are its files', which a download
/// sets anew); its priced node carries its cost.
#[test]
fn a_bucket_session_exports_the_trace_its_folder_here_does() {
    use opentelemetry_proto::tonic::trace::v1::TracesData;
    let setup = setup();
    let local_root = setup.local.path().to_str().unwrap();
    let export = |place: &[&str], file: &str| {
        let path = setup.home.path().join(file);
        let mut args = place.to_vec();
        args.extend([
            "export",
            PIPELINE_ID,
            "--otlp",
            path.to_str().unwrap(),
            "--json",
            "--memory",
        ]);
        json_of(&zstudio(&setup, &args));
        let traces: TracesData = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        traces.resource_spans[0].scope_spans[0]
            .spans
            .iter()
            .map(|s| {
                (
                    s.span_id.clone(),
                    s.parent_span_id.clone(),
                    s.name.clone(),
                    serde_json::to_string(&s.attributes).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let mut cloud = export(&["--source", URL], "cloud.json");
    let mut local = export(&["-w", local_root], "local.json");
    assert!(cloud.len() > 2, "a root and the pipeline's nodes: {cloud:?}");
    // The same spans; their order follows the folder's node order, which a copy whose objects
    // were uploaded within one second does not keep (docs/cli.md: the order is not certain).
    cloud.sort();
    local.sort();
    assert_eq!(cloud, local);
    assert!(
        cloud
            .iter()
            .any(|(_, _, name, attributes)| name == "invoke_agent plan" && attributes.contains("zibby.cost_usd")),
        "{cloud:?}"
    );
}
