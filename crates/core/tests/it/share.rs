//! Importing untrusted bundles and folders (`share`): each hostile case refused with an
//! error naming its entry, and nothing left behind (no folder in the workspace, no row in the
//! store, nothing outside). Hostile archives are built here with the `zip` crate's writer.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use studio_core::share::{self, ImportLimits, ImportOptions};
use studio_core::store::{Store, StoreLocation};
use studio_core::Workspace;
use tempfile::TempDir;
use zip::write::SimpleFileOptions;

const ID: &str = "1796000000000_abcd";

/// A workspace inside a folder of its own (so that a file written beside it is seen), and a
/// store file.
struct Bench {
    dir: TempDir,
    workspace: Workspace,
    store: Store,
}

impl Bench {
    fn new() -> Bench {
        let dir = TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let workspace = Workspace::open(dir.path().join("ws")).unwrap();
        let store = Store::open(&StoreLocation::File(dir.path().join("studio.sqlite"))).unwrap();
        Bench { dir, workspace, store }
    }

    fn bundle(&self, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path().join("in.zip");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn import(&self, source: &Path, limits: ImportLimits) -> Result<share::ImportedSession, studio_core::Error> {
        let options = ImportOptions {
            limits,
            ..ImportOptions::default()
        };
        share::import(&self.store, &self.workspace, source, &options, SystemTime::now())
    }

    /// Nothing of a refused import is anywhere: no session folder, no staging folder, no row,
    /// and nothing beside the workspace but what the test put there.
    fn assert_nothing_written(&self, why: &str) {
        // The workspace had no .zibby: the folders made for the import go with it.
        let left: Vec<String> = walk(self.workspace.root())
            .into_iter()
            .map(|p| p.strip_prefix(self.workspace.root()).unwrap().display().to_string())
            .collect();
        assert!(left.is_empty(), "{why}: the import left {left:?} in the workspace");
        let beside: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| {
                !name.starts_with("studio.sqlite") && name != "ws" && !name.ends_with(".zip") && name != "source"
            })
            .collect();
        assert!(
            beside.is_empty(),
            "{why}: the import wrote {beside:?} outside the workspace"
        );
        let conn = rusqlite::Connection::open(self.dir.path().join("studio.sqlite")).unwrap();
        for table in ["sessions", "runs", "output_blocks", "spans", "logs", "messages"] {
            let rows: i64 = conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            assert_eq!(rows, 0, "{why}: the import left rows in {table}");
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        found.push(path.clone());
        if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            found.extend(walk(&path));
        }
    }
    found
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What a bundle holds, to be written as a zip.
struct Bundle {
    /// (name, bytes) of the files, manifest excluded.
    files: Vec<(String, Vec<u8>)>,
    format_version: serde_json::Value,
    /// Checksums to put in the manifest instead of the true ones.
    wrong_checksum: Option<String>,
}

impl Bundle {
    /// A valid bundle of one session with a file in a node folder and no records.
    fn valid() -> Bundle {
        let mut files = vec![
            (
                "session/.session-info.json".to_owned(),
                br#"{"sessionPath":"/x","currentNode":"plan"}"#.to_vec(),
            ),
            ("session/plan/raw_stream_output.txt".to_owned(), b"planned\n".to_vec()),
            ("records/session.json".to_owned(), b"{}".to_vec()),
        ];
        for name in ["runs", "spans", "output", "logs", "messages"] {
            files.push((format!("records/{name}.jsonl"), Vec::new()));
        }
        Bundle {
            files,
            format_version: 1.into(),
            wrong_checksum: None,
        }
    }

    fn manifest(&self) -> Vec<u8> {
        let members: Vec<serde_json::Value> = self
            .files
            .iter()
            .map(|(name, bytes)| {
                let sha = match &self.wrong_checksum {
                    Some(wrong) if wrong == name => sha256(b"something else"),
                    _ => sha256(bytes),
                };
                serde_json::json!({"name": name, "bytes": bytes.len(), "sha256": sha, "modified_ms": null})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "format": "zibby-studio-session",
            "format_version": self.format_version,
            "studio_version": "0.1.0",
            "session_id": ID,
            "exported_at_ms": 0,
            "config_included": false,
            "members": members,
            "folders": [],
        }))
        .unwrap()
    }

    /// The zip, with `extra` written by the test's own hand after the bundle's files.
    fn zip_with(&self, extra: impl FnOnce(&mut zip::ZipWriter<Cursor<Vec<u8>>>)) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default();
        for (name, bytes) in &self.files {
            writer.start_file(name.as_str(), options).unwrap();
            writer.write_all(bytes).unwrap();
        }
        extra(&mut writer);
        writer.start_file("manifest.json", options).unwrap();
        writer.write_all(&self.manifest()).unwrap();
        writer.finish().unwrap().into_inner()
    }

    fn zip(&self) -> Vec<u8> {
        self.zip_with(|_| {})
    }
}

/// Asserts a refusal with `code`, whose message names `entry`, and that nothing was written.
fn assert_refused(bench: &Bench, result: Result<share::ImportedSession, studio_core::Error>, code: &str, entry: &str) {
    let error = result.expect_err("a hostile import must be refused");
    assert_eq!(error.code(), code, "{error}");
    assert!(
        error.to_string().contains(entry),
        "the error names the entry `{entry}`: {error}"
    );
    bench.assert_nothing_written(&error.to_string());
}

#[test]
fn a_valid_bundle_is_imported_with_its_files() {
    let bench = Bench::new();
    let imported = bench
        .import(&bench.bundle(&Bundle::valid().zip()), ImportLimits::default())
        .unwrap();
    assert_eq!(imported.session_id.as_str(), ID);
    let file = bench
        .workspace
        .sessions_dir()
        .join(ID)
        .join("plan/raw_stream_output.txt");
    assert_eq!(std::fs::read(file).unwrap(), b"planned\n");
    let marked = bench.store.imported(&bench.workspace, &imported.session_id).unwrap();
    assert!(
        marked.is_some_and(|m| m.from.ends_with("in.zip")),
        "the session is marked as imported"
    );
}

#[test]
fn an_entry_going_up_with_dot_dot_is_refused() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        w.start_file("session/../../evil.txt", SimpleFileOptions::default())
            .unwrap();
        w.write_all(b"x").unwrap();
    });
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    assert_refused(&bench, result, "import_entry_refused", "session/../../evil.txt");
}

#[test]
fn an_absolute_entry_is_refused() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        w.start_file("/tmp/zibby-evil.txt", SimpleFileOptions::default())
            .unwrap();
        w.write_all(b"x").unwrap();
    });
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    assert_refused(&bench, result, "import_entry_refused", "/tmp/zibby-evil.txt");
    assert!(!Path::new("/tmp/zibby-evil.txt").exists());
}

#[test]
fn a_symbolic_link_entry_is_refused() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        w.add_symlink("session/plan/result.json", "/etc/passwd", SimpleFileOptions::default())
            .unwrap();
    });
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    assert_refused(&bench, result, "import_entry_refused", "session/plan/result.json");
}

#[test]
fn a_second_entry_of_one_name_never_overwrites_the_first() {
    // A zip's nearest thing to a hard link: two entries, one name. The reader keeps one entry
    // per name and says it merged some: the archive is refused before anything is read.
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        w.start_file("session/plan/zzzzzzzzzzzzzzzzz.txt", SimpleFileOptions::default())
            .unwrap();
        w.write_all(b"second").unwrap();
    });
    // The writer refuses duplicate names: rename the second entry, in its local and central
    // headers, to the name of the first.
    let zip = replace_all(
        &zip,
        b"session/plan/zzzzzzzzzzzzzzzzz.txt",
        b"session/plan/raw_stream_output.txt",
    );
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    assert_refused(&bench, result, "import_entry_refused", "two entries of one name");
}

fn replace_all(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = bytes.to_vec();
    let mut at = 0;
    let mut replaced = 0;
    while let Some(found) = out[at..].windows(from.len()).position(|w| w == from) {
        out[at + found..at + found + from.len()].copy_from_slice(to);
        at += found + from.len();
        replaced += 1;
    }
    assert!(replaced >= 2, "the name is in the local and the central header");
    out
}

#[test]
fn a_device_entry_is_refused() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        // A character device, as the Unix mode in the external attributes says.
        let options = SimpleFileOptions::default().external_attributes(0o020644 << 16);
        w.start_file("session/plan/tty", options).unwrap();
    });
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    assert_refused(&bench, result, "import_entry_refused", "session/plan/tty");
}

#[test]
fn a_name_the_session_layout_cannot_hold_is_refused() {
    for name in [
        "session/plan/re\u{202E}txt.json",
        "session/plan\\result.json",
        "elsewhere/file.txt",
    ] {
        let bench = Bench::new();
        let zip = Bundle::valid().zip_with(|w| {
            w.start_file(name, SimpleFileOptions::default()).unwrap();
            w.write_all(b"x").unwrap();
        });
        let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
        assert_refused(&bench, result, "import_entry_refused", &name.escape_debug().to_string());
    }
}

#[test]
fn more_entries_than_the_bound_are_refused() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        for i in 0..20 {
            w.start_file(format!("session/plan/f{i}.txt"), SimpleFileOptions::default())
                .unwrap();
        }
    });
    let limits = ImportLimits {
        max_entries: 12,
        ..ImportLimits::default()
    };
    let result = bench.import(&bench.bundle(&zip), limits);
    // Told from the archive's end record, before its entries are read.
    assert_refused(&bench, result, "import_too_large", "central directory lists 29 entries");
}

#[test]
fn more_declared_bytes_than_the_bound_are_refused_before_anything_is_written() {
    let bench = Bench::new();
    let mut bundle = Bundle::valid();
    bundle
        .files
        .push(("session/plan/big.txt".to_owned(), vec![b'a'; 64 * 1024]));
    let limits = ImportLimits {
        max_bytes: 16 * 1024,
        ..ImportLimits::default()
    };
    let result = bench.import(&bench.bundle(&bundle.zip()), limits);
    assert_refused(&bench, result, "import_too_large", "session/plan/big.txt");
}

/// A zip bomb: an entry that declares 8 bytes and inflates to 64 MiB. The declared sizes pass
/// the bound; the zip reader fails the entry as soon as it grows past its declared size (the
/// import counts no bytes of its own: `copy_entry` in share/import/bundle.rs says why), so this
/// fails if a `zip` upgrade stops bounding entries by their declared size.
#[test]
fn a_zip_bomb_lying_about_its_size_stops_at_its_declared_size() {
    // In a file of the session folder, and in a record (read inside the store's transaction).
    for name in ["session/plan/bomb.txt", "records/logs.jsonl"] {
        let bench = Bench::new();
        let mut bundle = Bundle::valid();
        // 64 MiB of newlines deflate to about 64 KiB.
        let bomb = vec![b'\n'; 64 << 20];
        match bundle.files.iter_mut().find(|(n, _)| n == name) {
            Some((_, bytes)) => *bytes = bomb,
            None => bundle.files.push((name.to_owned(), bomb)),
        }
        let zip = lie_about_size(&bundle.zip(), name.as_bytes(), 8);
        let limits = ImportLimits {
            max_bytes: 1 << 20,
            ..ImportLimits::default()
        };
        let result = bench.import(&bench.bundle(&zip), limits);
        let error = result.expect_err("a zip bomb must be refused");
        assert_eq!(error.code().as_str(), "bundle_invalid", "{error}");
        let said = error.to_string();
        assert!(said.contains(name) && said.contains("declared"), "{said}");
        bench.assert_nothing_written(&said);
    }
}

/// Rewrites the uncompressed size of entry `name` in its local header (offset 22) and its
/// central directory header (offset 24) to `size`.
fn lie_about_size(zip: &[u8], name: &[u8], size: u32) -> Vec<u8> {
    let mut out = zip.to_vec();
    let mut patched = 0;
    let mut at = 0;
    while let Some(found) = out[at..].windows(name.len()).position(|w| w == name) {
        let name_at = at + found;
        // A local header's name is at offset 30, a central header's at 46.
        for (header, size_at) in [(30usize, 22usize), (46, 24)] {
            if name_at >= header {
                let start = name_at - header;
                let signature = &out[start..start + 4];
                let wanted: &[u8] = if header == 30 { b"PK\x03\x04" } else { b"PK\x01\x02" };
                if signature == wanted {
                    out[start + size_at..start + size_at + 4].copy_from_slice(&size.to_le_bytes());
                    patched += 1;
                }
            }
        }
        at = name_at + name.len();
    }
    assert_eq!(patched, 2, "both headers patched");
    out
}

#[test]
fn a_manifest_of_an_unknown_version_is_refused() {
    let bench = Bench::new();
    let mut bundle = Bundle::valid();
    bundle.format_version = 3.into();
    let result = bench.import(&bench.bundle(&bundle.zip()), ImportLimits::default());
    assert_refused(&bench, result, "bundle_version_unknown", "manifest.json");
}

#[test]
fn a_file_that_does_not_match_its_checksum_is_refused() {
    let bench = Bench::new();
    let mut bundle = Bundle::valid();
    bundle.wrong_checksum = Some("session/plan/raw_stream_output.txt".to_owned());
    let result = bench.import(&bench.bundle(&bundle.zip()), ImportLimits::default());
    assert_refused(
        &bench,
        result,
        "bundle_checksum_mismatch",
        "session/plan/raw_stream_output.txt",
    );
}

#[test]
fn a_record_that_does_not_match_its_checksum_stores_nothing() {
    // Records are checked as they are written, inside the transaction: the rows go with it.
    let bench = Bench::new();
    let mut bundle = Bundle::valid();
    let run = serde_json::json!({"id": "r1", "agent": null, "command": [], "status": "success",
        "started_at_ms": 1, "ended_at_ms": 2, "exit_code": 0, "error": null, "stopped_by": null,
        "replayed_node": null});
    let runs = bundle
        .files
        .iter_mut()
        .find(|(n, _)| n == "records/runs.jsonl")
        .unwrap();
    runs.1 = format!("{run}\n").into_bytes();
    bundle.wrong_checksum = Some("records/runs.jsonl".to_owned());
    let result = bench.import(&bench.bundle(&bundle.zip()), ImportLimits::default());
    assert_refused(&bench, result, "bundle_checksum_mismatch", "records/runs.jsonl");
}

#[test]
fn a_session_folder_with_a_link_or_a_hard_link_is_refused() {
    for case in ["symlink", "hardlink", "fifo"] {
        let bench = Bench::new();
        let source = bench.dir.path().join("source").join(ID);
        std::fs::create_dir_all(source.join("plan")).unwrap();
        std::fs::write(source.join(".session-info.json"), br#"{"currentNode":"plan"}"#).unwrap();
        std::fs::write(source.join("plan/raw_stream_output.txt"), b"planned\n").unwrap();
        let secret = bench.dir.path().join("source/secret.txt");
        std::fs::write(&secret, b"secret").unwrap();
        let entry = match case {
            "symlink" => {
                std::os::unix::fs::symlink(&secret, source.join("plan/result.json")).unwrap();
                "plan/result.json"
            }
            "hardlink" => {
                std::fs::hard_link(&secret, source.join("plan/result.json")).unwrap();
                "plan/result.json"
            }
            _ => {
                nix::unistd::mkfifo(&source.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
                "pipe"
            }
        };
        let result = bench.import(&source, ImportLimits::default());
        let error = result.expect_err(case);
        assert_eq!(error.code(), "import_entry_refused", "{case}: {error}");
        assert!(error.to_string().contains(entry), "{case}: {error}");
        bench.assert_nothing_written(case);
    }
}

/// Dropped onto the window by mistake, or given to `zstudio import`: a picture, a folder of
/// notes. Neither is a bundle, a session folder or a captured log: refused, naming it, and
/// nothing is written (a picture is not read as a log, a folder is not copied in as a session).
#[test]
fn what_is_not_a_bundle_a_session_folder_or_a_log_is_refused() {
    let bench = Bench::new();
    let source = bench.dir.path().join("source");
    std::fs::create_dir_all(source.join("notes/drafts")).unwrap();
    std::fs::write(source.join("notes/drafts/todo.txt"), b"write the report\n").unwrap();
    std::fs::write(source.join("notes/README.md"), b"# notes\n").unwrap();
    // A PNG's signature and header: binary from its first bytes on.
    let picture = source.join("screenshot.png");
    std::fs::write(&picture, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x04\0").unwrap();
    for (given, named) in [(picture, "screenshot.png"), (source.join("notes"), "notes")] {
        let error = bench.import(&given, ImportLimits::default()).unwrap_err();
        assert_eq!(error.code(), "not_importable", "{error}");
        let said = error.to_string();
        assert!(said.contains(named) && said.contains("nothing was imported"), "{said}");
        bench.assert_nothing_written(&said);
    }
    // Text with no marker of a run is still a captured log (the human timeline reads it).
    std::fs::write(source.join("ci.log"), b"npm ci\nadded 12 packages\n").unwrap();
    let imported = bench.import(&source.join("ci.log"), ImportLimits::default()).unwrap();
    assert_eq!(imported.kind, share::ImportKind::Log);
}

#[test]
fn a_session_folder_is_copied_in_with_its_times() {
    let bench = Bench::new();
    let source = bench.dir.path().join("source").join(ID);
    std::fs::create_dir_all(source.join("nodes/plan")).unwrap();
    std::fs::write(source.join("nodes/plan/result.json"), br#"{"ok":true}"#).unwrap();
    std::fs::write(source.join("result.json"), br#"{"success":true}"#).unwrap();
    let old = SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in ["nodes/plan/result.json", "result.json", "nodes/plan", "nodes", ""] {
        std::fs::File::open(source.join(path))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let imported = bench.import(&source, ImportLimits::default()).unwrap();
    assert_eq!(imported.session_id.as_str(), ID);
    let session = bench
        .store
        .read_session(&bench.workspace, &imported.session_id, SystemTime::now())
        .unwrap();
    assert_eq!(session.status, studio_core::Status::Success);
    assert_eq!(
        session.updated_at,
        studio_core::session::Timestamp::from_system_time(old),
        "the folder's times came with it"
    );
    assert!(source.join("result.json").exists(), "the source is copied, not moved");
    let again = bench.import(&source, ImportLimits::default()).unwrap_err();
    assert_eq!(again.code(), "session_exists", "{again}");
}

#[test]
fn export_leaves_out_links_special_files_and_names_an_import_would_refuse() {
    let from = Bench::new();
    let folder = from.workspace.sessions_dir().join(ID);
    std::fs::create_dir_all(folder.join("plan")).unwrap();
    std::fs::write(folder.join("plan/raw_stream_output.txt"), b"planned\n").unwrap();
    std::fs::write(folder.join("plan/bad\u{202E}name.txt"), b"x").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", folder.join("plan/result.json")).unwrap();
    nix::unistd::mkfifo(&folder.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(
        folder.join(".session-info.json"),
        br#"{"currentNode":"plan","config":{"apiKey":"sk-secret"}}"#,
    )
    .unwrap();
    let id = studio_core::SessionId::parse(ID).unwrap();
    let bundle = from.dir.path().join("out.zip");
    let exported = share::export_session(&from.store, &from.workspace, &id, &bundle, false, SystemTime::now()).unwrap();
    assert_eq!(
        exported.members, 8,
        "two files of the session and the six records: {exported:?}"
    );

    let to = Bench::new();
    to.import(&bundle, ImportLimits::default()).unwrap();
    let imported = to.workspace.sessions_dir().join(ID);
    let mut names: Vec<String> = walk(&imported)
        .into_iter()
        .map(|p| p.strip_prefix(&imported).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(names, [".session-info.json", "plan", "plan/raw_stream_output.txt"]);
    let info = std::fs::read_to_string(imported.join(".session-info.json")).unwrap();
    assert!(!info.contains("sk-secret") && info.contains("currentNode"), "{info}");
}

/// Issue 26, point 7: an import killed part-way (here, its staging folder as a killed import
/// leaves it: named by a process that is gone) is swept by the next import and when the studio
/// opens the workspace; the folder of an import still under way (this process) never is.
#[test]
fn the_staging_folders_of_killed_imports_are_swept_and_a_live_ones_is_kept() {
    let bench = Bench::new();
    let output = bench.workspace.root().join(".zibby/output");
    std::fs::create_dir_all(output.join("sessions")).unwrap();
    let me = studio_core::process::ProcessIdentity::of(std::process::id()).unwrap();
    let boot: String = me.boot_id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    // A child that has ended: its process is gone.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let ended = studio_core::process::ProcessIdentity::of(child.id()).unwrap();
    child.wait().unwrap();
    let stale = [
        format!(".import-{boot}-{}-{}-0190aaaa", ended.pid, ended.start_time),
        // This process's id, another start time: the id was reused.
        format!(".import-{boot}-{}-{}-0190bbbb", me.pid, me.start_time + 1),
        // Another boot.
        format!(".import-00000000-{}-{}-0190cccc", me.pid, me.start_time),
    ];
    let live = format!(".import-{boot}-{}-{}-0190dddd", me.pid, me.start_time);
    let older_studio = ".import-0190eeee0190eeee0190eeee0190eeee".to_owned();
    for name in stale.iter().chain([&live, &older_studio]) {
        std::fs::create_dir_all(output.join(name).join("session/plan")).unwrap();
        std::fs::write(output.join(name).join("session/plan/big.bin"), vec![0u8; 1 << 20]).unwrap();
    }
    let present = |name: &str| output.join(name).exists();

    let log = bench.dir.path().join("run.log");
    std::fs::write(&log, "hello\n").unwrap();
    bench.import(&log, ImportLimits::default()).unwrap();
    for name in &stale {
        assert!(!present(name), "the next import sweeps {name}");
    }
    assert!(present(&live), "a live import's folder stays");
    assert!(present(&older_studio), "a folder whose owner cannot be told stays");

    // The studio sweeps when it opens the workspace too.
    let again = output.join(&stale[0]);
    std::fs::create_dir_all(&again).unwrap();
    let (studio, _) = studio_core::app::Studio::open(
        Some(bench.workspace.root()),
        Ok(StoreLocation::File(bench.dir.path().join("studio.sqlite"))),
    );
    assert!(!again.exists(), "opening the workspace sweeps it");
    assert!(present(&live));
    studio.shut_down();
}

/// Issue 26, point 7: a central directory that lists more entries than an import takes is
/// refused from its end record, before the zip reader reads (and holds) a single entry. This
/// one says 60,000 entries and holds 10: the reader would fail on the eleventh (a
/// `bundle_invalid`) after reading the ten; the end record alone refuses it.
#[test]
fn a_central_directory_listing_too_many_entries_is_refused_from_its_end_record() {
    let bench = Bench::new();
    let mut zip = Bundle::valid().zip();
    let end = zip.windows(4).rposition(|w| w == b"PK\x05\x06").unwrap();
    for at in [end + 8, end + 10] {
        zip[at..at + 2].copy_from_slice(&60_000u16.to_le_bytes());
    }
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    let error = result.expect_err("refused");
    assert_eq!(error.code(), "import_too_large", "{error}");
    assert!(
        error.to_string().contains("central directory lists 60000 entries"),
        "{error}"
    );
    bench.assert_nothing_written(&error.to_string());
}

/// The same through a zip64 end record (more than 65,535 entries): read from it, not from the
/// 32-bit record that says 0xFFFF.
#[test]
fn a_zip64_central_directory_of_too_many_entries_is_refused_from_its_end_record() {
    let bench = Bench::new();
    let zip = Bundle::valid().zip_with(|w| {
        for i in 0..70_000 {
            w.add_directory(format!("session/d{i}"), SimpleFileOptions::default())
                .unwrap();
        }
    });
    let result = bench.import(&bench.bundle(&zip), ImportLimits::default());
    let error = result.expect_err("refused");
    assert_eq!(error.code(), "import_too_large", "{error}");
    assert!(
        error.to_string().contains("central directory lists 70009 entries"),
        "{error}"
    );
}

/// Issue 26, point 7: a bundle of a few KiB that declares 1.75 GiB (a 3.9 MB bundle once wrote
/// 4 GB) is refused by the default limit before anything is written, the error naming the
/// bundle, the limit and how to raise it; raised, the limit lets it past (to fail on what it is).
#[test]
fn a_bundle_declaring_more_than_the_default_limit_is_refused_naming_the_limit() {
    let bench = Bench::new();
    let mut bundle = Bundle::valid();
    bundle
        .files
        .push(("session/plan/zeros.bin".to_owned(), vec![0u8; 1 << 20]));
    let zip = lie_about_size(&bundle.zip(), b"session/plan/zeros.bin", 0x7000_0000);
    let source = bench.bundle(&zip);
    let error = bench.import(&source, ImportLimits::default()).expect_err("refused");
    assert_eq!(error.code(), "import_too_large", "{error}");
    let said = error.to_string();
    for part in [source.to_str().unwrap(), "1 GiB", "1073741824 bytes", "--max-bytes"] {
        assert!(said.contains(part), "the error says {part}: {said}");
    }
    bench.assert_nothing_written(&said);
    assert_eq!(ImportLimits::default().max_bytes, share::DEFAULT_MAX_BYTES);

    let raised = ImportLimits {
        max_bytes: 2 << 30,
        ..ImportLimits::default()
    };
    // What it holds (1 MiB) is all the reader gives, and matches the manifest.
    let imported = bench.import(&source, raised).expect("the raised limit lets it past");
    assert_eq!(
        std::fs::metadata(imported.path.join("plan/zeros.bin")).unwrap().len(),
        1 << 20
    );
}

/// Issue 26, point 7: a 1.5 GiB sparse file (a few KiB on disk) in a session folder counts by
/// its length: the copy would write all of it.
#[test]
fn a_sparse_file_in_a_session_folder_counts_by_its_length() {
    let bench = Bench::new();
    let source = bench.dir.path().join("source").join(ID);
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join(".session-info.json"), "{}").unwrap();
    std::fs::File::create(source.join("sparse.bin"))
        .unwrap()
        .set_len(3 << 29)
        .unwrap();
    let error = bench.import(&source, ImportLimits::default()).expect_err("refused");
    assert_eq!(error.code(), "import_too_large", "{error}");
    assert!(error.to_string().contains("sparse.bin") && error.to_string().contains("--max-bytes"));
    bench.assert_nothing_written(&error.to_string());
}

/// Issue 26, point 7: a captured log is bounded like the rest, before it is read.
#[test]
fn a_log_larger_than_the_limit_is_refused_before_it_is_read() {
    let bench = Bench::new();
    std::fs::create_dir_all(bench.dir.path().join("source")).unwrap();
    let log = bench.dir.path().join("source/run.log");
    std::fs::write(&log, "a line of output\n".repeat(1000)).unwrap();
    let limits = ImportLimits {
        max_bytes: 4096,
        ..ImportLimits::default()
    };
    let error = bench.import(&log, limits).expect_err("refused");
    assert_eq!(error.code(), "import_too_large", "{error}");
    assert!(error.to_string().contains("run.log"), "{error}");
    bench.assert_nothing_written(&error.to_string());
}

/// Issue 26, point 8: the default export writes no token of the recorded command, its log lines
/// or `.session-info.json`, and writes the home folder as `~`; its manifest says so.
#[test]
fn export_redacts_tokens_and_writes_the_home_folder_as_tilde() {
    let bench = Bench::new();
    let home = std::env::var("HOME").expect("HOME is set");
    assert!(home.starts_with('/') && home.len() > 1, "HOME is a folder: {home}");
    let id = studio_core::SessionId::parse(ID).unwrap();
    let folder = bench.workspace.root().join(".zibby/output/sessions").join(ID);
    std::fs::create_dir_all(&folder).unwrap();
    let info = serde_json::json!({
        "sessionPath": format!("{home}/project/.zibby/output/sessions/{ID}"),
        "currentNode": "plan",
        "config": {"apiKey": "sk-config-secret-000000000"},
    });
    std::fs::write(folder.join(".session-info.json"), info.to_string()).unwrap();
    let command: Vec<String> = [
        format!("{home}/bin/agent"),
        "--api-key=sk-live-abcdefghijklmnop1234".to_owned(),
        "--token".to_owned(),
        "ghp_abcdefghijklmnopqrstuvwxyz0123".to_owned(),
        "--model".to_owned(),
        "opus".to_owned(),
    ]
    .to_vec();
    let now = SystemTime::now();
    let run = bench
        .store
        .run_insert(
            &bench.workspace,
            &studio_core::store::NewRun {
                session: &id,
                agent: None,
                command: &command,
                replayed_node: None,
                prompt: None,
                started_at: now,
            },
        )
        .unwrap();
    bench
        .store
        .log(
            &bench.workspace,
            &id,
            Some(&run),
            studio_core::store::Level::Info,
            "run.started",
            &format!("started {} with Authorization: Bearer abcdefgh12345678", command.join(" ")),
            serde_json::json!({"command": command, "env": {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "AKIA": "AKIAIOSFODNN7EXAMPLE"}}),
            now,
        )
        .unwrap();
    bench
        .store
        .run_finish(
            &run,
            &studio_core::store::RunOutcome {
                status: studio_core::Status::Success,
                exit_code: Some(0),
                error: None,
                stopped_by: None,
                ended_at: now,
            },
        )
        .unwrap();
    let out = bench.dir.path().join("out.zip");
    let exported = share::export_session(&bench.store, &bench.workspace, &id, &out, false, now).unwrap();

    let mut archive = zip::ZipArchive::new(std::fs::File::open(&out).unwrap()).unwrap();
    let mut text = String::new();
    for i in 0..archive.len() {
        std::io::Read::read_to_string(&mut archive.by_index(i).unwrap(), &mut text).unwrap();
    }
    for secret in [
        "sk-live-abcdefghijklmnop1234",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "abcdefgh12345678",
        "wJalrXUtnFEMI",
        "AKIAIOSFODNN7EXAMPLE",
        "sk-config-secret",
        home.as_str(),
    ] {
        assert!(!text.contains(secret), "the bundle holds {secret}:\n{text}");
    }
    for kept in [
        "~/bin/agent",
        "--api-key=[redacted]",
        "--model",
        "opus",
        "~/project/.zibby",
    ] {
        assert!(text.contains(kept), "the bundle keeps {kept}:\n{text}");
    }
    let manifest: serde_json::Value = serde_json::from_reader(archive.by_name("manifest.json").unwrap()).unwrap();
    let redaction = &manifest["redaction"];
    assert_eq!(redaction["home_as_tilde"], true, "{manifest}");
    let looked_at: Vec<&str> = redaction["looked_at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        looked_at,
        ["records/logs.jsonl", "records/runs.jsonl", "session/.session-info.json"]
    );
    let what: Vec<String> = redaction["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s["member"].as_str().unwrap(), s["what"].as_str().unwrap()))
        .collect();
    for expected in [
        "records/runs.jsonl the value of --token",
        "records/runs.jsonl an sk-… key",
        "records/logs.jsonl a Bearer token",
        "records/logs.jsonl the value of AWS_SECRET_ACCESS_KEY",
    ] {
        assert!(what.iter().any(|w| w == expected), "{expected} in {what:?}");
    }
    assert_eq!(exported.redaction, serde_json::from_value(redaction.clone()).unwrap());

    // The bundle imports as any other.
    let elsewhere = Bench::new();
    let imported = share::import(
        &elsewhere.store,
        &elsewhere.workspace,
        &out,
        &ImportOptions::default(),
        now,
    )
    .unwrap();
    assert_eq!(imported.session_id.as_str(), ID);
}

/// Format version 2: the session's record carries its tags and note; a version-1 bundle (none)
/// imports as before; tags and a note past their rules are refused naming the rule.
#[test]
fn a_bundles_tags_and_note_are_imported_and_held_to_their_rules() {
    let with_record = |record: &str| {
        let mut bundle = Bundle::valid();
        bundle.format_version = 2.into();
        bundle.files.retain(|(name, _)| name != "records/session.json");
        bundle
            .files
            .push(("records/session.json".to_owned(), record.as_bytes().to_vec()));
        bundle
    };
    let bench = Bench::new();
    let bundle = with_record(r#"{"tags": ["flaky", "ci"], "note": "seen twice\nthe gecko step"}"#);
    bench
        .import(&bench.bundle(&bundle.zip()), ImportLimits::default())
        .unwrap();
    let id = studio_core::SessionId::parse(ID).unwrap();
    assert_eq!(bench.store.tags(&bench.workspace, &id).unwrap(), ["flaky", "ci"]);
    assert_eq!(
        bench.store.note(&bench.workspace, &id).unwrap().as_deref(),
        Some("seen twice\nthe gecko step")
    );
    let hits = bench.store.search(&bench.workspace, "gecko", 10).unwrap();
    assert_eq!((hits.len(), hits[0].kind), (1, studio_core::store::SearchHitKind::Note));

    // Version 1: no tags, no note, imported as before.
    let bench = Bench::new();
    bench
        .import(&bench.bundle(&Bundle::valid().zip()), ImportLimits::default())
        .unwrap();
    assert!(bench.store.tags(&bench.workspace, &id).unwrap().is_empty());

    for (record, says) in [
        (r#"{"tags": ["bad\u0007bell"]}"#.to_owned(), "control character"),
        (r#"{"tags": [" padded"]}"#.to_owned(), "whitespace"),
        (
            serde_json::json!({"tags": (0..33).map(|n| format!("t{n}")).collect::<Vec<_>>()}).to_string(),
            "at most 32",
        ),
        (
            serde_json::json!({"note": "n".repeat(64 * 1024 + 1)}).to_string(),
            "at most 65536 bytes",
        ),
    ] {
        let bench = Bench::new();
        let result = bench.import(&bench.bundle(&with_record(&record).zip()), ImportLimits::default());
        let error = result.as_ref().map(drop).expect_err(says).to_string();
        assert!(error.contains(says), "{error}");
        assert_refused(&bench, result, "bundle_invalid", "records/session.json");
    }
}
