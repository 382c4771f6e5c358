//! Bucket sources against moto's S3 server on 127.0.0.1 (`test_servers::moto`): real captured
//! sessions uploaded, listed, read through the mirror as a workspace, paged, fetched by range;
//! keys refused, access refused, a stalled server, the cache's bound, half-written files.
//!
//! A test binary of its own: the credentials are the process's variables (the provider's chain
//! reads them), set once before any test asks; each test's endpoint is its own server's.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

use serde_json::json;
use studio_core::bucket::{Mirror, MirrorOptions, Source, UploadState};
use studio_core::{SessionId, Workspace};
use test_servers::moto::Moto;

const BUCKET: &str = "team-runs";

fn credentials() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        std::env::set_var("AWS_REGION", "us-east-1");
    });
}

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zibby-captures")
}

/// The capture's one session folder, and its id.
fn captured_session(capture: &str) -> (PathBuf, String) {
    let sessions = captures().join(capture).join("cwd/.zibby/output/sessions");
    let entry = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap();
    (entry.path(), entry.file_name().into_string().unwrap())
}

const CAPTURES: [&str; 4] = [
    "head-bb10e85-02-pipeline-markers",
    "head-bb10e85-01-hello-world-markers",
    "head-bb10e85-93-fanout-markers",
    "head-bb10e85-91-throw-custom-throw",
];

/// Uploads the captures' sessions under `prefix/`, each with the uploader's marker.
fn upload_captures(moto: &Moto, prefix: &str, captures: &[&str], create: bool) -> Vec<String> {
    let mut ops = Vec::new();
    let mut ids = Vec::new();
    for capture in captures {
        let (folder, id) = captured_session(capture);
        ops.push(json!({"copy_tree": folder, "prefix": format!("{prefix}/{id}/")}));
        ops.push(json!({"put": format!("{prefix}/{id}/.upload-complete"), "text": ""}));
        ids.push(id);
    }
    moto.upload(BUCKET, create, json!(ops));
    ids
}

struct Fixture {
    moto: Moto,
    cache: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        credentials();
        Fixture {
            moto: Moto::start(),
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn source(&self, prefix: &str) -> Source {
        Source::parse(&format!("s3://{BUCKET}/{prefix}"))
            .unwrap()
            .with_endpoint(self.moto.endpoint())
    }

    fn options(&self) -> MirrorOptions {
        let mut options = MirrorOptions::new(self.cache.path().to_owned());
        options.timeout = Duration::from_secs(10);
        options
    }

    fn mirror(&self, prefix: &str) -> Mirror {
        Mirror::open(&self.source(prefix), self.options()).unwrap()
    }
}

fn ids(listing: &studio_core::bucket::Listing) -> Vec<String> {
    let mut ids: Vec<String> = listing.sessions.iter().map(|s| s.id.to_string()).collect();
    ids.sort();
    ids
}

/// Every file under `root`, with its bytes.
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((
                    path.strip_prefix(root).unwrap().to_owned(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn captured_sessions_are_listed_and_read_as_the_local_ones() {
    let fixture = Fixture::new();
    let mut expected = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    expected.sort();
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(ids(&listing), expected);
    assert!(listing.refused.is_empty(), "{:?}", listing.refused);
    assert!(listing.sessions.iter().all(|s| s.state == UploadState::Complete));

    let cloud = Workspace::open(mirror.workspace_root()).unwrap();
    for capture in CAPTURES {
        let (folder, id) = captured_session(capture);
        assert_eq!(
            tree(&folder),
            tree(&cloud.session_path(&SessionId::parse(&id).unwrap())),
            "{capture}"
        );
        let local = Workspace::open(captures().join(capture).join("cwd")).unwrap();
        let id = SessionId::parse(&id).unwrap();
        let (mut a, mut b) = (
            local.read_session(&id, SystemTime::now()).unwrap().summary(),
            cloud.read_session(&id, SystemTime::now()).unwrap().summary(),
        );
        // The folder's path and time are the mirror's (its time is the newest object's); the
        // nodes' order, when no events.json gives it, is the upload's, and so is which nodes'
        // folders share an instant (`order_uncertain`).
        for summary in [&mut a, &mut b] {
            summary.path = PathBuf::new();
            summary.updated_at = studio_core::session::Timestamp(0);
            summary.nodes.sort_by(|x, y| x.name.cmp(&y.name));
            for node in &mut summary.nodes {
                node.order_uncertain = false;
            }
            // The not-known note names the guessed order too (when folders share an instant).
            summary.not_known = summary.not_known.take().map(|note| {
                note.replace(
                    " Nor is the order of the nodes marked `?`: their folders were written in the same instant.",
                    "",
                )
            });
        }
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap(),
            "{capture}: status, nodes and usage as the local folder's"
        );
    }
    let again = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(again.fetched_bytes, 0, "complete sessions are never fetched again");
}

#[test]
fn a_session_uploaded_after_the_first_listing_appears_on_refresh() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let mirror = fixture.mirror("ci");
    assert_eq!(mirror.refresh(SystemTime::now()).unwrap().sessions.len(), 1);
    // S3 keeps an object's last-modified time to the second: the later upload must be a later
    // second for "newest first" to mean it (in the same second, the order is the ids').
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let added = upload_captures(&fixture.moto, "ci", &CAPTURES[1..2], false);
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(listing.sessions.len(), 2);
    assert_eq!(listing.sessions[0].id.as_str(), added[0], "newest first");
    let workspace = Workspace::open(mirror.workspace_root()).unwrap();
    assert_eq!(workspace.list_sessions(SystemTime::now()).unwrap().len(), 2);
}

/// Issue 41, point 4: every bucket session read `updated_at` = the time it was fetched (one value
/// for all, "just now" in the window, the list not newest first). It is the time its newest
/// object was uploaded.
#[test]
fn a_bucket_sessions_time_is_when_it_was_uploaded_not_fetched() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..2], true);
    let uploaded = SystemTime::now();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let mirror = fixture.mirror("ci");
    mirror.refresh(SystemTime::now()).unwrap();
    let workspace = Workspace::open(mirror.workspace_root()).unwrap();
    let sessions = workspace.list_sessions(SystemTime::now()).unwrap();
    assert_eq!(sessions.len(), 2);
    for summary in sessions {
        assert!(
            summary.updated_at.to_system_time() <= uploaded,
            "{}: updated at {:?}, uploaded by {uploaded:?}",
            summary.id,
            summary.updated_at
        );
    }
}

#[test]
fn a_large_output_is_read_tail_first_then_by_range() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let key = "ci/big_1/.session-info.json";
    let mib = 1024 * 1024;
    fixture.moto.upload(
        BUCKET,
        false,
        json!([
            {"put": key, "text": "{\"sessionTimestamp\": 1795952464415}"},
            {"multipart": "ci/big_1/node/raw_stream_output.txt", "part_bytes": 5 * mib, "parts": 4, "fill": "line of output\n", "last": "THE END\n"},
            {"put": "ci/big_1/.upload-complete", "text": ""},
        ]),
    );
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    let size = 20 * mib as u64;
    assert!(
        listing.fetched_bytes < 2 * mib as u64,
        "only the tail of the 20 MiB output is fetched: {}",
        listing.fetched_bytes
    );
    let id = SessionId::parse("big_1").unwrap();
    let file = mirror
        .workspace_root()
        .join(".zibby/output/sessions/big_1/node/raw_stream_output.txt");
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        size,
        "the sparse file has the object's size"
    );
    let tail = mirror
        .read_range(&id, "node/raw_stream_output.txt", size - 8..size)
        .unwrap();
    assert_eq!(tail, b"THE END\n");
    let before = mirror.fetched_bytes();
    let page = mirror.read_range(&id, "node/raw_stream_output.txt", 0..15).unwrap();
    assert_eq!(page, b"line of output\n");
    assert_eq!(mirror.fetched_bytes() - before, 15, "a page is fetched by its range");
    assert_eq!(&std::fs::read(&file).unwrap()[..15], b"line of output\n");
    assert_eq!(
        mirror.read_range(&id, "node/raw_stream_output.txt", 0..15).unwrap(),
        page
    );
    assert_eq!(
        mirror.fetched_bytes() - before,
        15,
        "a page fetched is not fetched again"
    );
}

#[test]
fn a_session_mid_upload_shows_as_uploading_then_complete() {
    let fixture = Fixture::new();
    fixture.moto.upload(
        BUCKET,
        true,
        json!([
            {"put": "ci/1795952464415_up/plan/raw_stream_output.txt", "text": "planning\n"},
            {"unfinished_multipart": "ci/1795952464415_up/execute/raw_stream_output.txt"},
        ]),
    );
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].state, UploadState::Uploading);
    assert_eq!(
        listing.sessions[0].objects, 1,
        "an unfinished multipart upload is no object yet"
    );
    let (folder, _) = captured_session(CAPTURES[0]);
    fixture.moto.upload(
        BUCKET,
        false,
        json!([
            {"copy_tree": folder, "prefix": "ci/1795952464415_up/"},
            {"put": "ci/1795952464415_up/.upload-complete", "text": ""},
        ]),
    );
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(listing.sessions[0].state, UploadState::Complete);
    let plan = mirror
        .workspace_root()
        .join(".zibby/output/sessions/1795952464415_up/plan/raw_stream_output.txt");
    assert_eq!(
        std::fs::read(plan).unwrap(),
        std::fs::read(folder.join("plan/raw_stream_output.txt")).unwrap()
    );
}

#[test]
fn thousands_of_sessions_are_listed_across_pages() {
    let fixture = Fixture::new();
    let sessions: Vec<_> = (0..1_500)
        .map(|n| json!([format!("many/1795952{n:06}_s/.session-info.json"), "{}"]))
        .collect();
    let started = std::time::Instant::now();
    fixture.moto.upload(BUCKET, true, json!([{"bulk": sessions}]));
    eprintln!("uploaded in {:?}", started.elapsed());
    let listing = fixture.mirror("many").refresh(SystemTime::now()).unwrap();
    eprintln!("listed in {:?}", started.elapsed());
    assert_eq!(listing.sessions.len(), 1_500, "more than one page of 1,000 keys");
}

/// `count` generated ids in order, each uploaded under `prefix` as a session of one file, and a
/// mirror of them filled (`settle` zero: each session complete, so that a warm refresh lists no
/// session inside).
fn filled_mirror_of_generated(fixture: &Fixture, prefix: &str, count: usize) -> (Mirror, Vec<String>) {
    let ids: Vec<String> = (0..count).map(|n| format!("1795952{n:06}_s")).collect();
    let infos: Vec<_> = ids
        .iter()
        .map(|id| json!([format!("{prefix}/{id}/.session-info.json"), "{}"]))
        .collect();
    fixture.moto.upload(BUCKET, true, json!([{"bulk": infos}]));
    let mut options = fixture.options();
    options.settle = Duration::ZERO;
    let mirror = Mirror::open(&fixture.source(prefix), options).unwrap();
    assert_eq!(mirror.refresh(SystemTime::now()).unwrap().sessions.len(), count);
    (mirror, ids)
}

/// A warm refresh's ranges end on a split, each the size of a page (2,000 ids: two ranges of
/// 1,000): each is one request, the range's last name ending it, not a second page asked to find
/// a name past it.
#[test]
fn a_warm_refresh_asks_one_page_a_range_when_its_ranges_are_pages() {
    let fixture = Fixture::new();
    let (mirror, ids) = filled_mirror_of_generated(&fixture, "paged", 2_000);
    let folder_listings = || -> Vec<String> {
        let log = fixture.moto.log();
        let listings = log
            .lines()
            .filter(|line| line.contains("list-type=2") && line.contains("delimiter="));
        listings.map(str::to_owned).collect()
    };
    let before = folder_listings().len();
    let warm = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(self::ids(&warm), ids);
    assert!(!warm.changed);
    let asked = &folder_listings()[before..];
    assert_eq!(asked.len(), 2, "one request a range:\n{}", asked.join("\n"));
}

/// More sessions than a page: a warm refresh asks the pages of the prefix's folders at once,
/// each starting after one of the previous listing's ids (`start-after`), and finds the sessions
/// added anywhere: before the first id, just before and just after a split, past the last.
#[test]
fn a_warm_refresh_asks_the_pages_at_once_and_finds_sessions_added_between_them() {
    let fixture = Fixture::new();
    let (mirror, ids) = filled_mirror_of_generated(&fixture, "many", 2_100);
    let info = |id: &str| json!([format!("many/{id}/.session-info.json"), "{}"]);
    // 2,100 ids: three ranges of 700, cut after the 700th and the 1,400th (`…000699_s`, `…001399_s`).
    let added = [
        "1795951999999_s",   // before the first
        "1795952000699_r",   // just before the first split
        "1795952000699_s-x", // `…_s-x/` sorts before `…_s/`: still the first range
        "1795952000699_s0",  // just after the first split
        "1795952001000_t",   // inside the second range
        "1795952001399_s0",  // just after the second split
        "1795952099999_s",   // past the last
    ];
    fixture.moto.upload(
        BUCKET,
        false,
        json!([{"bulk": added.iter().map(|id| info(id)).collect::<Vec<_>>()}]),
    );
    let warm = mirror.refresh(SystemTime::now()).unwrap();
    assert!(warm.refused.is_empty(), "{:?}", warm.refused);
    let mut expected: Vec<String> = ids
        .iter()
        .cloned()
        .chain(added.iter().map(|id| id.to_string()))
        .collect();
    expected.sort();
    assert_eq!(self::ids(&warm), expected);
    assert!(warm.changed);
    let log = fixture.moto.log();
    for split in ["1795952000699_s0", "1795952001399_s0"] {
        assert!(
            log.contains(&format!("start-after=many/{split} ")),
            "a page asked from the split after `{split}`:\n{}",
            &log[log.len().saturating_sub(3_000)..]
        );
    }
}

/// A re-listing reads the mirror while the bucket is asked; when the refresh changed the mirror,
/// what was read meanwhile is read again, and when it changed nothing, it is not.
#[test]
fn a_reading_made_during_a_refresh_is_made_again_when_the_refresh_changed_the_mirror() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let mirror = fixture.mirror("ci");
    mirror.refresh(SystemTime::now()).unwrap();
    let workspace = Workspace::open(mirror.workspace_root()).unwrap();
    let reads = std::sync::atomic::AtomicUsize::new(0);
    let read = || {
        reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        workspace.list_sessions(SystemTime::now()).unwrap().len()
    };
    let (warm, listed) = mirror.refresh_reading(SystemTime::now(), read).unwrap();
    assert!(!warm.changed, "nothing changed");
    assert_eq!(
        (listed, reads.swap(0, std::sync::atomic::Ordering::SeqCst)),
        (1, 1),
        "read once"
    );

    upload_captures(&fixture.moto, "ci", &CAPTURES[1..2], false);
    let (changed, listed) = mirror.refresh_reading(SystemTime::now(), read).unwrap();
    assert!(changed.changed && changed.fetched_bytes > 0);
    assert_eq!(
        (listed, reads.load(std::sync::atomic::Ordering::SeqCst)),
        (2, 2),
        "read again after the refresh"
    );

    // The same when the refresh removes a session (the cache's bound now holds none of them).
    let mut options = fixture.options();
    options.max_bytes = 0;
    let bounded = Mirror::open(&fixture.source("ci"), options).unwrap();
    let (emptied, listed) = bounded.refresh_reading(SystemTime::now(), read).unwrap();
    assert!(emptied.changed && emptied.left_out == 2);
    assert_eq!(listed, 0, "the folders removed are not listed");
}

#[test]
fn keys_with_dot_dot_and_odd_segments_are_refused_naming_the_source_and_key() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    fixture.moto.upload(
        BUCKET,
        false,
        json!([
            {"put": "ci/evil/../../escaped.txt", "text": "outside"},
            {"put": "ci/..hidden/x.txt", "text": "x"},
        ]),
    );
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(listing.sessions.len(), 1, "the good session is still listed");
    let said: Vec<String> = listing.refused.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said.iter()
            .all(|s| s.starts_with("s3://team-runs/ci: `") && s.contains("refused")),
        "{said:?}"
    );
    assert!(said.iter().any(|s| s.contains("evil/../../escaped.txt")), "{said:?}");
    assert_eq!(
        walk_names(fixture.cache.path())
            .iter()
            .filter(|n| n.contains("escaped"))
            .count(),
        0,
        "nothing of the refused keys is written"
    );
}

/// A session fetched on its own (`Mirror::fetch_now`: opened before a cold workspace's first
/// refresh came to it) leaves out its refused keys, as a refresh does, instead of failing whole.
#[test]
fn a_session_fetched_on_its_own_leaves_out_its_refused_keys() {
    let fixture = Fixture::new();
    let ids = upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let id = SessionId::parse(&ids[0]).unwrap();
    fixture.moto.upload(
        BUCKET,
        false,
        json!([{"put": format!("ci/{id}/nodes/../../../escaped.txt"), "text": "outside"}]),
    );
    let mirror = fixture.mirror("ci");
    let folder = mirror.fetch_now(&id, SystemTime::now()).unwrap();
    assert!(folder.join(".session-info.json").is_file(), "{folder:?}");
    let escaped = walk_names(fixture.cache.path());
    assert!(!escaped.iter().any(|n| n.contains("escaped")), "{escaped:?}");
}

fn walk_names(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            names.push(path.to_string_lossy().into_owned());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    names
}

#[test]
fn access_refused_names_the_source_and_the_identity_used() {
    credentials();
    // moto checks every request against its IAM: the key `testing` is none of its users'.
    let moto = Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    let cache = tempfile::tempdir().unwrap();
    let source = Source::parse(&format!("s3://{BUCKET}/ci"))
        .unwrap()
        .with_endpoint(moto.endpoint());
    let error = Mirror::open(&source, MirrorOptions::new(cache.path().to_owned()))
        .unwrap()
        .refresh(SystemTime::now())
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("s3://team-runs/ci: "), "{error}");
    assert!(
        error.contains("access refused for access key …ting (AWS_ACCESS_KEY_ID)"),
        "{error}"
    );
}

#[test]
fn a_missing_bucket_and_a_stalled_server_are_said_in_bounded_time() {
    let fixture = Fixture::new();
    fixture.moto.upload("other", true, json!([]));
    let error = fixture.mirror("ci").refresh(SystemTime::now()).unwrap_err().to_string();
    assert!(
        error.starts_with("s3://team-runs/ci: ") && error.contains("does not exist"),
        "{error}"
    );

    let mut options = fixture.options();
    options.timeout = Duration::from_secs(2);
    let mirror = Mirror::open(&fixture.source("ci"), options).unwrap();
    fixture.moto.freeze();
    let started = std::time::Instant::now();
    let error = mirror.refresh(SystemTime::now()).unwrap_err().to_string();
    fixture.moto.resume();
    assert!(error.contains("no answer within 2 s"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "bounded: {:?}",
        started.elapsed()
    );
}

#[test]
fn the_cache_stays_within_its_bound() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    let full = fixture.mirror("ci").refresh(SystemTime::now()).unwrap().fetched_bytes;
    studio_core::bucket::cache::clear(fixture.cache.path(), None).unwrap();
    let mut options = fixture.options();
    options.max_bytes = full / 2;
    let mirror = Mirror::open(&fixture.source("ci"), options).unwrap();
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert!(listing.left_out > 0 && !listing.sessions.is_empty(), "{listing:?}");
    let stored: u64 = tree(&mirror.workspace_root()).iter().map(|(_, b)| b.len() as u64).sum();
    assert!(stored <= full / 2, "{stored} bytes kept, bound {}", full / 2);
    studio_core::bucket::cache::clear(fixture.cache.path(), Some(&fixture.source("ci"))).unwrap();
    assert!(
        !mirror.workspace_root().exists(),
        "the clear-cache action removes the mirror"
    );
}

/// Issue 42, point 6: the bound keeps the sessions used most recently, not the ones uploaded
/// last. With a bound one byte short of every session, a refresh leaves one out: the least
/// recently uploaded. Once that one is opened (recorded in the cache, read by the next process's
/// mirror), the next refresh fetches it again and leaves out another instead. (Before, the
/// session uploaded first was left out whatever was opened.)
#[test]
fn the_cache_keeps_the_sessions_opened_most_recently() {
    let fixture = Fixture::new();
    let uploaded = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    let full = fixture.mirror("ci").refresh(SystemTime::now()).unwrap().fetched_bytes;
    let mut options = fixture.options();
    options.max_bytes = full - 1;
    let left_out = |listing: &studio_core::bucket::Listing| -> Vec<String> {
        let kept = ids(listing);
        uploaded.iter().filter(|id| !kept.contains(id)).cloned().collect()
    };
    let bounded = Mirror::open(&fixture.source("ci"), options.clone()).unwrap();
    let first = bounded.refresh(SystemTime::now()).unwrap();
    let [least_recent] = left_out(&first).try_into().expect("one session left out");
    let least_recent = SessionId::parse(&least_recent).unwrap();
    assert!(!bounded.session_path(&least_recent).exists());

    bounded.record_opened(&least_recent, SystemTime::now());
    drop(bounded);
    let next = Mirror::open(&fixture.source("ci"), options).unwrap();
    let listing = next.refresh(SystemTime::now()).unwrap();
    let [other] = left_out(&listing).try_into().expect("one session left out");
    assert_ne!(other, least_recent.as_str(), "the session opened is kept");
    assert!(next.session_path(&least_recent).join(".session-info.json").is_file());
    assert!(!next.session_path(&SessionId::parse(&other).unwrap()).exists());
}

#[test]
fn a_half_written_cache_file_is_never_taken_as_complete() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let (folder, id) = captured_session(CAPTURES[0]);
    let mirror = fixture.mirror("ci");
    mirror.refresh(SystemTime::now()).unwrap();
    let root = mirror.workspace_root();
    drop(mirror);
    // A refresh cut between the file's rename and the manifest's: the file is there, half of it,
    // and the manifest does not list its session.
    let session = root.join(".zibby/output/sessions").join(&id);
    std::fs::write(session.join(".session-info.json"), "{\"sessionTim").unwrap();
    let manifest_path = root.parent().unwrap().join("manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["sessions"].as_object_mut().unwrap().remove(&id).unwrap();
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    assert!(listing.fetched_bytes > 0);
    assert_eq!(tree(&folder), tree(&session), "the session is fetched again, whole");
}

/// A session with a 10 MiB raw stream (two multipart parts) and a 5 MiB `raw_output.txt`, each
/// starting with text the sparse file's zeros are not.
fn upload_large_session(fixture: &Fixture) {
    let mib = 1024 * 1024;
    fixture.moto.upload(
        BUCKET,
        false,
        json!([
            {"put": "ci/1795952464999_big/.session-info.json", "text": "{\"sessionTimestamp\": 1795952464999}"},
            {"multipart": "ci/1795952464999_big/node/raw_stream_output.txt", "part_bytes": 5 * mib, "parts": 2, "fill": "head of output\n", "last": "THE END\n"},
            {"multipart": "ci/1795952464999_big/node/raw_output.txt", "part_bytes": 5 * mib, "parts": 1, "fill": "raw output line\n"},
            {"put": "ci/1795952464999_big/.upload-complete", "text": ""},
        ]),
    );
}

fn assert_text(file: &Path, starts: &[u8], size: u64) {
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(bytes.len() as u64, size, "{}", file.display());
    assert!(
        bytes.starts_with(starts),
        "{}: starts {:?}",
        file.display(),
        &bytes[..16]
    );
    assert!(!bytes.contains(&0), "{}: no byte is an unfetched zero", file.display());
}

#[test]
fn no_reader_of_the_mirror_gets_an_unfetched_range_as_data() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    upload_large_session(&fixture);
    let mirror = fixture.mirror("ci");
    let listing = mirror.refresh(SystemTime::now()).unwrap();
    let mib = 1024 * 1024_u64;
    let id = SessionId::parse("1795952464999_big").unwrap();
    let session = mirror.session_path(&id);
    // A large file the core may read from its start is fetched whole when listed, piece by
    // piece; of the raw stream, read from its end only, the tail.
    assert_text(&session.join("node/raw_output.txt"), b"raw output line\n", 5 * mib);
    assert!(
        listing.fetched_bytes < 7 * mib,
        "the raw stream's tail only: {}",
        listing.fetched_bytes
    );
    let raw_stream = session.join("node/raw_stream_output.txt");
    assert!(
        std::fs::read(&raw_stream).unwrap().starts_with(&[0; 16]),
        "a hole, not yet data"
    );

    // What reads a session whole fetches it whole first, within its limit.
    let error = mirror.fetch_session(&id, 10 * mib).unwrap_err().to_string();
    assert!(
        error.starts_with("s3://team-runs/ci: `1795952464999_big/`") && error.contains("more than the most asked for"),
        "{error}"
    );
    let before = mirror.fetched_bytes();
    assert_eq!(mirror.fetch_session(&id, 100 * mib).unwrap(), session);
    assert_eq!(mirror.fetched_bytes() - before, 9 * mib, "only the ranges missing");
    assert_text(&raw_stream, b"head of output\n", 10 * mib);
    assert!(std::fs::read(&raw_stream).unwrap().ends_with(b"THE END\n"));
    mirror.fetch_session(&id, 100 * mib).unwrap();
    assert_eq!(
        mirror.fetched_bytes() - before,
        9 * mib,
        "a whole session is not fetched again"
    );

    // The manifest says so after the mirror is opened again: nothing fetched, the file whole.
    let reopened = fixture.mirror("ci");
    assert_eq!(reopened.refresh(SystemTime::now()).unwrap().fetched_bytes, 0);
    reopened.fetch_session(&id, 100 * mib).unwrap();
    assert_eq!(reopened.fetched_bytes(), 0);
}

#[test]
fn a_warm_refresh_lists_inside_no_complete_session_and_writes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let fixture = Fixture::new();
    let ids = upload_captures(&fixture.moto, "ci", &CAPTURES[..2], true);
    let mirror = fixture.mirror("ci");
    let first = mirror.refresh(SystemTime::now()).unwrap();
    let manifest = mirror.workspace_root().parent().unwrap().join("manifest.json");
    let written = std::fs::metadata(&manifest).unwrap().ino();
    // A complete session is immutable: an object added to one afterwards is not looked for.
    fixture.moto.upload(
        BUCKET,
        false,
        json!([{"put": format!("ci/{}/late.txt", ids[0]), "text": "late"}]),
    );
    let warm = mirror.refresh(SystemTime::now()).unwrap();
    assert_eq!(warm.fetched_bytes, 0);
    assert!(!warm.changed, "nothing changed: the mirror's folder is not touched");
    assert_eq!(warm.sessions, first.sessions);
    assert_eq!(
        std::fs::metadata(&manifest).unwrap().ino(),
        written,
        "nothing changed: the manifest is not written again"
    );
    assert!(!mirror
        .session_path(&SessionId::parse(&ids[0]).unwrap())
        .join("late.txt")
        .exists());
}

#[test]
fn an_output_replaced_after_the_listing_is_refused_not_joined() {
    let fixture = Fixture::new();
    upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    upload_large_session(&fixture);
    let mirror = fixture.mirror("ci");
    mirror.refresh(SystemTime::now()).unwrap();
    // The same key and size, other bytes: only the ETag tells.
    fixture.moto.upload(
        BUCKET,
        false,
        json!([{"multipart": "ci/1795952464999_big/node/raw_stream_output.txt", "part_bytes": 5 * 1024 * 1024, "parts": 2, "fill": "another output\n", "last": "THE END\n"}]),
    );
    let id = SessionId::parse("1795952464999_big").unwrap();
    let error = mirror.fetch_session(&id, u64::MAX).unwrap_err().to_string();
    assert!(
        error.starts_with("s3://team-runs/ci: `1795952464999_big/node/raw_stream_output.txt`")
            && error.contains("changed since it was listed"),
        "{error}"
    );
    let error = mirror
        .read_range(&id, "node/raw_stream_output.txt", 0..15)
        .unwrap_err()
        .to_string();
    assert!(error.contains("changed since it was listed"), "{error}");
}

/// The window's cloud workspace (`app::cloud`): its mirror opened as the app service's workspace,
/// the commands that would write refused naming the source, a page of an output not yet fetched
/// read from the bucket rather than as the sparse file's zeros, a pin kept locally.
#[test]
fn a_cloud_workspace_in_the_app_service_is_read_only_and_reads_unfetched_pages_from_the_bucket() {
    use studio_core::app::cloud::READ_ONLY_REFUSED;
    use studio_core::app::Studio;
    use studio_core::store::StoreLocation;

    let fixture = Fixture::new();
    let mib = 1024 * 1024;
    fixture.moto.upload(
        BUCKET,
        true,
        json!([
            {"put": "ci/big_1/.session-info.json", "text": "{\"sessionTimestamp\": 1795952464415}"},
            {"multipart": "ci/big_1/node/raw_stream_output.txt", "part_bytes": 5 * mib, "parts": 2, "fill": "line of output\n", "last": "THE END\n"},
            {"put": "ci/big_1/.upload-complete", "text": ""},
        ]),
    );
    let (cloud, statuses) = open_cloud(&fixture.source("ci"), fixture.options()).unwrap();
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    studio.open_cloud(cloud).unwrap();
    studio.sessions(SystemTime::now()).unwrap();
    filled(&statuses);

    for method in READ_ONLY_REFUSED {
        let refused = studio.forward(method, json!({})).expect("refused here").unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("s3://team-runs/ci") && said.contains("read-only"),
            "{said}"
        );
    }
    assert!(
        studio.forward("sessions_list", json!({})).is_none(),
        "reading runs here"
    );

    let page = studio
        .session_file_read("big_1", "node/raw_stream_output.txt", 0, 15)
        .unwrap();
    assert_eq!(page.text, "line of output\n", "{page:?}");
    assert!(!page.binary);

    // Export reads the session whole: every range is fetched first, none exported as zeros.
    let out = fixture.cache.path().join("big_1.zip");
    studio
        .export_session(&SessionId::parse("big_1").unwrap(), &out, false)
        .unwrap();
    let mirrored = studio
        .cloud()
        .unwrap()
        .workspace_root()
        .join(".zibby/output/sessions/big_1/node/raw_stream_output.txt");
    assert!(
        !std::fs::read(mirrored).unwrap().contains(&0),
        "no range left unfetched"
    );

    studio.pin_add("big_1").unwrap();
    let listing = studio.sessions(SystemTime::now()).unwrap();
    assert!(
        listing
            .sessions
            .iter()
            .any(|row| row.summary.id.as_str() == "big_1" && row.pinned),
        "{listing:?}"
    );
}

/// The ids of the sessions the mirror's folder lists, as the window lists them.
fn listed_ids(root: &Path) -> Vec<String> {
    let mut ids: Vec<String> = Workspace::open(root)
        .unwrap()
        .list_sessions(SystemTime::now())
        .unwrap()
        .iter()
        .map(|s| s.id.to_string())
        .collect();
    ids.sort();
    ids
}

/// Opens the cloud workspace of `source`, its statuses sent to the channel returned.
fn open_cloud(
    source: &Source,
    options: MirrorOptions,
) -> Result<
    (
        std::sync::Arc<studio_core::app::cloud::CloudWorkspace>,
        std::sync::mpsc::Receiver<studio_core::app::cloud::CloudStatus>,
    ),
    studio_core::Error,
> {
    let (told, statuses) = std::sync::mpsc::channel();
    let on_status = Box::new(move |status| {
        let _ = told.send(status);
    });
    studio_core::app::cloud::CloudWorkspace::open(source, options, on_status).map(|cloud| (cloud, statuses))
}

/// Waits for the first check of a cloud workspace opened (after `listed`) to be told done.
/// The statuses told before it (a cold open's last page of ids, the fill's progress) are passed.
fn filled(statuses: &std::sync::mpsc::Receiver<studio_core::app::cloud::CloudStatus>) {
    let status = loop {
        let status = statuses
            .recv_timeout(Duration::from_secs(60))
            .expect("the first check is told");
        if !status.checking || status.error.is_some() {
            break status;
        }
    };
    assert!(!status.checking && status.error.is_none(), "{status:?}");
}

/// A cold mirror opens on the prefix's ids alone: every session is a row at once, those not
/// fetched yet saying so (with the server frozen, none is but the one opened first, which is
/// fetched when opened); the first check, asked once the rows are listed, fetches the others,
/// and the rows then are the sessions' own, none of them twice.
#[test]
fn a_cold_cloud_workspace_lists_its_ids_at_once_and_fetches_them_after() {
    use studio_core::app::Studio;
    use studio_core::store::StoreLocation;
    use studio_core::Status;

    let fixture = Fixture::new();
    let mut expected = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    expected.sort();
    assert!(expected.len() >= 2, "{expected:?}");
    let (cloud, statuses) = open_cloud(&fixture.source("ci"), fixture.options()).unwrap();
    assert!(cloud.status().checking, "{:?}", cloud.status());
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    studio.open_cloud(cloud).unwrap();
    let first = &expected[0];
    let opened = studio.session_get(first).unwrap();
    assert!(opened.id.as_str() == first && !opened.nodes.is_empty(), "{opened:?}");

    fixture.moto.freeze();
    // A row still being fetched can be pinned (the pin is the local store's): it is listed first.
    let pinned = &expected[expected.len() - 1];
    studio.pin_add(pinned).unwrap();
    let rows = studio.sessions(SystemTime::now()).unwrap().sessions;
    let mut ids: Vec<String> = rows.iter().map(|row| row.summary.id.to_string()).collect();
    ids.sort();
    assert_eq!(ids, expected, "every session a row, once");
    assert_eq!(rows[0].summary.id.as_str(), pinned, "the pinned row first: {rows:?}");
    for row in &rows {
        let said = row.summary.not_known.as_deref().unwrap_or_default();
        assert_eq!(row.pinned, row.summary.id.as_str() == pinned, "{row:?}");
        if row.summary.id.as_str() == first {
            assert!(!row.fetching && !row.summary.nodes.is_empty(), "{row:?}");
        } else {
            assert!(row.fetching && row.summary.status == Status::Unknown, "{row:?}");
            assert!(said.starts_with("Being fetched from s3://team-runs/ci"), "{said}");
        }
    }
    fixture.moto.resume();

    filled(&statuses);
    let rows = studio.sessions(SystemTime::now()).unwrap().sessions;
    let mut ids: Vec<String> = rows.iter().map(|row| row.summary.id.to_string()).collect();
    ids.sort();
    assert_eq!(ids, expected, "the same sessions, fetched");
    for row in &rows {
        assert!(!row.fetching && !row.summary.nodes.is_empty(), "{row:?}");
        assert_eq!(row.pinned, row.summary.id.as_str() == pinned, "the pin kept: {row:?}");
    }
    assert_eq!(rows[0].summary.id.as_str(), pinned, "still first: {rows:?}");
}

/// The app launched on a bucket URL: no workspace while the window starts, then the cold bucket
/// opened. The window's first page serves its first listing, so watching starts at once rather
/// than after the shell's wait (`wait_first_listing`): the sessions the first check fetches reach
/// the window as changes the watcher tells. (Watching started seconds late, after fetches it then
/// took as already listed, left their rows "fetching…" in the window.)
#[test]
fn a_cold_bucket_opened_at_launch_is_watched_once_its_first_page_is_served() {
    use studio_core::app::{Studio, FIRST_PAGE};
    use studio_core::store::StoreLocation;
    use studio_core::watcher::{Change, ChangeSink};

    let fixture = Fixture::new();
    let expected = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    // The shell's read-ahead, with no workspace open yet.
    studio.read_sessions_ahead(|| {});
    let (cloud, statuses) = open_cloud(&fixture.source("ci"), fixture.options()).unwrap();
    studio.open_cloud(cloud).unwrap();
    // The first check, which the first page asks for, waits until watching started.
    fixture.moto.freeze();
    let page = studio.sessions_page(0, FIRST_PAGE).unwrap();
    assert_eq!(page.total, expected.len(), "{page:?}");
    assert!(page.sessions.iter().all(|row| row.fetching), "{page:?}");
    assert!(
        studio.wait_first_listing(Duration::ZERO),
        "the first page served the window's first listing: watching need not wait"
    );
    let (told, heard) = std::sync::mpsc::channel();
    let sink: ChangeSink = std::sync::Arc::new(move |change| {
        if let Change::SessionAdded { session_id, .. } | Change::SessionUpdated { session_id, .. } = change {
            let _ = told.send(session_id.to_string());
        }
    });
    studio.watch(sink).unwrap();
    fixture.moto.resume();
    filled(&statuses);
    let mut seen: Vec<String> = Vec::new();
    while seen.len() < expected.len() {
        match heard.recv_timeout(Duration::from_secs(20)) {
            Ok(id) if !seen.contains(&id) => seen.push(id),
            Ok(_) => {}
            Err(_) => panic!("the watcher told of {seen:?}, not every one of {expected:?}"),
        }
    }
    let page = studio.sessions_page(0, FIRST_PAGE).unwrap();
    assert!(page.sessions.iter().all(|row| !row.fetching), "{page:?}");
    studio.shut_down();
}

/// A first fill cut short (the workspace closed when one session was fetched on its own, a
/// part-written folder left beside it) opens again cold: every id a row, the fetched session as
/// it is, the others (the part-written one among them, its folder removed) being fetched; once
/// the fill ends, the mirror opens warm, without the bucket.
#[test]
fn a_first_fill_cut_short_opens_again_on_the_ids_beside_what_it_fetched() {
    use studio_core::app::Studio;
    use studio_core::store::StoreLocation;

    let fixture = Fixture::new();
    let mut expected = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    expected.sort();
    let (source, options) = (fixture.source("ci"), fixture.options());
    let (first, part_written, exported) = (&expected[0], &expected[1], &expected[2]);
    let (cloud, _) = open_cloud(&source, options.clone()).unwrap();
    let sessions_dir = cloud.workspace_root().join(".zibby/output/sessions");
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    studio.open_cloud(cloud).unwrap();
    studio.session_get(first).unwrap();
    // Exported before the fill came to it: fetched on its own, whole.
    let bundle = tempfile::tempdir().unwrap();
    let exported_id = SessionId::parse(exported).unwrap();
    studio
        .export_session(&exported_id, &bundle.path().join("s.zip"), false)
        .unwrap();
    drop(studio);
    std::fs::create_dir_all(sessions_dir.join(part_written)).unwrap();
    std::fs::write(sessions_dir.join(part_written).join(".session-info.json"), "{\"sess").unwrap();

    let rows_of = |studio: &Studio| {
        let mut rows = studio.sessions(SystemTime::now()).unwrap().sessions;
        rows.sort_by(|a, b| a.summary.id.cmp(&b.summary.id));
        rows
    };
    let (cloud, statuses) = open_cloud(&source, options.clone()).unwrap();
    assert!(cloud.status().checking, "{:?}", cloud.status());
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    studio.open_cloud(cloud).unwrap();
    fixture.moto.freeze();
    let rows = rows_of(&studio);
    let ids: Vec<&str> = rows.iter().map(|row| row.summary.id.as_str()).collect();
    assert_eq!(ids, expected, "every session a row, once");
    for row in &rows {
        let fetched = [first, exported].contains(&&row.summary.id.to_string());
        assert_eq!(row.fetching, !fetched, "{row:?}");
        assert_eq!(row.summary.nodes.is_empty(), !fetched, "{row:?}");
    }
    assert!(
        !sessions_dir.join(part_written).exists(),
        "the part-written folder is removed"
    );
    fixture.moto.resume();
    filled(&statuses);
    for row in rows_of(&studio) {
        assert!(!row.fetching && !row.summary.nodes.is_empty(), "{row:?}");
    }
    drop(studio);

    fixture.moto.freeze();
    let (cloud, _) = open_cloud(&source, options).unwrap();
    assert!(cloud.status().checking, "opened warm, the bucket not asked");
    assert_eq!(listed_ids(&cloud.workspace_root()), expected, "the mirror, filled");
    fixture.moto.resume();
}

/// Closed during its first fill, a cloud workspace stops it (`Mirror::stop`) once the chunk
/// under way is in place: the poller ends without a status, the mirror holds whole sessions of
/// that chunk alone (200 of 250), and the next open fills on from them.
#[test]
fn a_cloud_workspace_closed_during_its_first_fill_stops_after_the_chunk_under_way() {
    let fixture = Fixture::new();
    let ids: Vec<String> = (0..250).map(|n| format!("1795952{n:06}_s")).collect();
    let objects: Vec<_> = ids
        .iter()
        .flat_map(|id| {
            [
                json!([format!("closed/{id}/.session-info.json"), "{}"]),
                json!([format!("closed/{id}/.upload-complete"), ""]),
            ]
        })
        .collect();
    fixture.moto.upload(BUCKET, true, json!([{"bulk": objects}]));
    let (source, options) = (fixture.source("closed"), fixture.options());
    let (cloud, statuses) = open_cloud(&source, options.clone()).unwrap();
    let root = cloud.workspace_root();
    let sessions_dir = root.join(".zibby/output/sessions");
    let folders = || std::fs::read_dir(&sessions_dir).map_or(0, |dir| dir.count());
    cloud.listed();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while folders() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first fill fetched nothing in 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(cloud);
    loop {
        match statuses.recv_timeout(Duration::from_secs(60)) {
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            // Told before the close: the ids' last page, the fill's progress.
            Ok(status) if status.checking && status.error.is_none() => continue,
            other => panic!("the poller goes on after the close, or tells a status: {other:?}"),
        }
    }
    // One chunk, whole, and no other folder. Which 200 is the upload's: the fill goes newest
    // object first, and moto's times are whole seconds given as its bulk upload went (not in
    // the ids' order: one run had `…049` in the chunk and `…050` out).
    let listed = listed_ids(&root);
    assert_eq!(listed.len(), 200, "one chunk: {listed:?}");
    assert!(
        listed.iter().all(|id| ids.contains(id)),
        "only the bucket's sessions: {listed:?}"
    );
    assert_eq!(folders(), 200, "nothing but that chunk's folders");

    let (cloud, statuses) = open_cloud(&source, options).unwrap();
    cloud.listed();
    filled(&statuses);
    assert_eq!(listed_ids(&root), ids, "the next open fills on");
}

/// Two writers of one source's mirror (the window and `zstudio --source` on one bucket; here two
/// mirrors in one process, opened before either fetched anything): what one fetched the other
/// takes as fetched, neither fetching it again nor removing it.
#[test]
fn two_mirrors_of_one_source_take_what_the_other_fetched() {
    let fixture = Fixture::new();
    let mut first = upload_captures(&fixture.moto, "ci", &CAPTURES[..3], true);
    first.sort();
    let (source, options) = (fixture.source("ci"), fixture.options());
    let window = Mirror::open(&source, options.clone()).unwrap();
    let terminal = Mirror::open(&source, options).unwrap();
    let filled = window.refresh(SystemTime::now()).unwrap();
    assert!(filled.fetched_bytes > 0, "{filled:?}");
    let again = terminal.refresh(SystemTime::now()).unwrap();
    assert_eq!(again.fetched_bytes, 0, "fetched again: {again:?}");
    assert_eq!(again.sessions.len(), first.len(), "{again:?}");

    let mut all = first.clone();
    all.extend(upload_captures(&fixture.moto, "ci", &CAPTURES[3..], false));
    all.sort();
    let newer = terminal.refresh(SystemTime::now()).unwrap();
    assert!(newer.fetched_bytes > 0, "{newer:?}");
    let seen = window.refresh(SystemTime::now()).unwrap();
    assert_eq!(seen.fetched_bytes, 0, "fetched again: {seen:?}");
    assert_eq!(seen.sessions.len(), all.len(), "{seen:?}");
    assert_eq!(
        listed_ids(&window.workspace_root()),
        all,
        "nothing the other fetched removed"
    );
}

/// A warm mirror opens without asking the bucket: with the server frozen the open returns, on
/// the sessions fetched before, saying they are being checked; once they are listed, the poller's
/// refresh (asked then, not a poll later) brings the session uploaded meanwhile, and the status
/// says it is done.
#[test]
fn a_warm_cloud_workspace_opens_from_its_mirror_and_is_checked_once_listed() {
    let fixture = Fixture::new();
    let before = upload_captures(&fixture.moto, "ci", &CAPTURES[..1], true);
    let (cloud, statuses) = open_cloud(&fixture.source("ci"), fixture.options()).unwrap();
    cloud.listed();
    filled(&statuses);
    let root = cloud.workspace_root();
    drop(cloud);
    let mut after = before.clone();
    after.extend(upload_captures(&fixture.moto, "ci", &CAPTURES[1..2], false));
    after.sort();

    fixture.moto.freeze();
    let (cloud, statuses) = open_cloud(&fixture.source("ci"), fixture.options()).unwrap();
    let status = cloud.status();
    assert!(status.checking && status.error.is_none(), "{status:?}");
    assert_eq!(listed_ids(&root), before, "the mirror as last fetched");
    fixture.moto.resume();
    // The check waits for the mirror's listing (the window's first), not beside it.
    std::thread::sleep(Duration::from_secs(2));
    assert!(cloud.status().checking, "checked before the listing was said done");
    cloud.listed();

    let checked = statuses
        .recv_timeout(Duration::from_secs(30))
        .expect("the check is told");
    assert!(!checked.checking && checked.error.is_none(), "{checked:?}");
    assert!(checked.revision > status.revision, "{status:?} then {checked:?}");
    assert_eq!(cloud.status(), checked);
    assert_eq!(listed_ids(&root), after, "the session uploaded meanwhile is fetched");
}

/// Opened warm while the bucket cannot be reached, a cloud workspace shows the sessions fetched
/// before, and its status says why they are not current, naming the source; a cold one (nothing
/// fetched yet) still fails to open, naming the source.
#[test]
fn a_warm_cloud_workspace_opened_offline_shows_what_was_fetched_and_says_why() {
    let fixture = Fixture::new();
    let mut expected = upload_captures(&fixture.moto, "ci", &CAPTURES, true);
    expected.sort();
    let (source, options) = (fixture.source("ci"), fixture.options());
    let (cloud, statuses) = open_cloud(&source, options.clone()).unwrap();
    cloud.listed();
    filled(&statuses);
    let root = cloud.workspace_root();
    drop(cloud);
    drop(fixture.moto);

    let (cloud, statuses) = open_cloud(&source, options.clone()).unwrap();
    cloud.listed();
    let failed = statuses
        .recv_timeout(Duration::from_secs(60))
        .expect("the failure is told");
    let error = failed.error.clone().expect("the refresh failed");
    assert!(error.starts_with("s3://team-runs/ci: "), "{error}");
    assert!(!failed.checking, "{failed:?}");
    assert_eq!(cloud.status(), failed);
    assert_eq!(listed_ids(&root), expected, "the mirror as last fetched");

    let cold = tempfile::tempdir().unwrap();
    let error = open_cloud(
        &source,
        MirrorOptions {
            cache_root: cold.path().to_owned(),
            ..options
        },
    )
    .err()
    .expect("a cold mirror cannot open offline")
    .to_string();
    assert!(error.starts_with("s3://team-runs/ci: "), "{error}");
}

/// One answer of a [`HostileServer`].
#[derive(Clone)]
enum Answer {
    /// This head and body, then the next request on the same connection.
    Once(String, &'static [u8]),
    /// This head, then (to a GET) 1 MiB after 1 MiB, chunked or not, until the client stops
    /// reading.
    Endless(String, bool),
}

/// A server on 127.0.0.1 answering its requests in turn with `answers` (the last one again
/// once they run out); it counts the requests and the bytes of endless bodies it got out.
struct HostileServer {
    endpoint: String,
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl HostileServer {
    fn start(answers: Vec<Answer>) -> HostileServer {
        use std::io::{BufRead, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (counted, asked) = (sent.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).map_or(true, |n| n == 0) {
                        break;
                    }
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let turn = asked.fetch_add(1, Ordering::SeqCst) as usize;
                    match answers[turn.min(answers.len() - 1)].clone() {
                        Answer::Once(head, body) => {
                            if stream
                                .write_all(head.as_bytes())
                                .and_then(|()| stream.write_all(body))
                                .is_err()
                            {
                                break;
                            }
                        }
                        Answer::Endless(head, chunked) => {
                            if stream.write_all(head.as_bytes()).is_ok() && request_line.starts_with("GET") {
                                endless(&mut stream, chunked, &counted);
                            }
                            break;
                        }
                    }
                }
            }
        });
        HostileServer {
            endpoint,
            sent,
            requests,
        }
    }

    fn remote(&self) -> studio_core::bucket::remote::Remote {
        credentials();
        let source = Source::parse(&format!("s3://{BUCKET}/ci"))
            .unwrap()
            .with_endpoint(&self.endpoint);
        studio_core::bucket::remote::Remote::connect(&source, Duration::from_secs(20)).unwrap()
    }

    fn read_100_bytes(&self) -> Result<Vec<u8>, String> {
        let read = studio_core::bucket::remote::Read {
            key: "1700000000000_abc/raw_stream.log".to_owned(),
            range: 0..100,
            etag: None,
        };
        let mut results = self.remote().read_many(&[read]);
        results.remove(0).map_err(|e| e.to_string())
    }

    fn sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn endless(stream: &mut std::net::TcpStream, chunked: bool, counted: &std::sync::atomic::AtomicU64) {
    use std::io::Write;
    let chunk_head = format!("{:x}\r\n", MEBIBYTE.len());
    loop {
        let written = if chunked {
            stream
                .write_all(chunk_head.as_bytes())
                .and_then(|()| stream.write_all(&MEBIBYTE))
                .and_then(|()| stream.write_all(b"\r\n"))
        } else {
            stream.write_all(&MEBIBYTE)
        };
        if written.is_err() {
            return;
        }
        counted.fetch_add(MEBIBYTE.len() as u64, std::sync::atomic::Ordering::SeqCst);
    }
}

static MEBIBYTE: [u8; 1 << 20] = [b'x'; 1 << 20];

/// What a 100-byte read may cost at most, whatever the server sends: the sockets' buffers.
const FEW_BUFFERS: u64 = 64 << 20;

#[test]
fn a_ranged_read_refuses_a_declared_body_larger_than_asked_before_reading_it() {
    let head = "HTTP/1.1 206 Partial Content\r\nContent-Length: 268435456\r\n\
                Content-Range: bytes 0-268435455/268435456\r\n\r\n";
    let server = HostileServer::start(vec![Answer::Endless(head.to_owned(), false)]);
    let error = server.read_100_bytes().unwrap_err();
    assert!(
        error.starts_with("s3://team-runs/ci: `1700000000000_abc/raw_stream.log`: cannot read: ")
            && error.contains("the server sent 268435456 bytes or more for a read of 100"),
        "{error}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.sent() < FEW_BUFFERS, "the client read {} bytes", server.sent());
}

/// S3's reader refuses a body of no declared length itself; the transport's cut at the range's
/// end stands behind it for the other providers.
#[test]
fn a_ranged_read_of_an_undeclared_endless_body_is_refused_without_reading_it() {
    let head = "HTTP/1.1 206 Partial Content\r\nTransfer-Encoding: chunked\r\n\r\n";
    let server = HostileServer::start(vec![Answer::Endless(head.to_owned(), true)]);
    let error = server.read_100_bytes().unwrap_err();
    assert!(
        error.starts_with("s3://team-runs/ci: `1700000000000_abc/raw_stream.log`: cannot read: "),
        "{error}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.sent() < FEW_BUFFERS, "the client read {} bytes", server.sent());
}

#[test]
fn a_redirect_is_refused_and_nothing_reaches_where_it_points() {
    let elsewhere = HostileServer::start(vec![Answer::Once(
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_owned(),
        b"",
    )]);
    let head = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {}/team-runs/ci/x?X-Amz-Signature=s\r\n\
         Content-Length: 0\r\n\r\n",
        elsewhere.endpoint
    );
    let server = HostileServer::start(vec![Answer::Once(head, b"")]);
    let error = server.read_100_bytes().unwrap_err();
    assert!(
        error.contains(&format!(
            "redirecting to {}: redirects are not followed",
            elsewhere.endpoint
        )) && !error.contains("X-Amz-Signature"),
        "{error}"
    );
    let listing = server.remote().list_all().unwrap_err().to_string();
    assert!(listing.contains("redirects are not followed"), "{listing}");
    assert_eq!(elsewhere.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn a_read_answered_503_slow_down_is_tried_again_and_succeeds() {
    let slow_down = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: 110\r\n\r\n";
    let body: &'static [u8] = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>";
    let ok = "HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nContent-Range: bytes 0-99/1000\r\n\r\n";
    let server = HostileServer::start(vec![
        Answer::Once(slow_down.to_owned(), body),
        Answer::Once(slow_down.to_owned(), body),
        Answer::Once(ok.to_owned(), &MEBIBYTE[..100]),
    ]);
    assert_eq!(server.read_100_bytes().unwrap(), vec![b'x'; 100]);
    assert_eq!(server.requests.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn an_error_with_an_endless_body_is_refused_at_a_mebibyte() {
    let head = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 268435456\r\n\r\n";
    let server = HostileServer::start(vec![Answer::Endless(head.to_owned(), false)]);
    let error = server.read_100_bytes().unwrap_err();
    assert!(
        error.contains("the server sent 268435456 bytes or more for a read of 1048576"),
        "{error}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.sent() < FEW_BUFFERS, "the client read {} bytes", server.sent());
}

/// A loopback proxy in front of moto that records each request's first line and holds every
/// listing request carrying a continuation token (a page after the first) until released: what
/// the client asks, and in what order against what it has shown, seen from outside it (held 20 s
/// at most: a client that waits for that page before showing anything is then seen to). Requests
/// are taken as the client sends them, headers without a body (it only lists and reads).
struct HoldingProxy {
    endpoint: String,
    /// The request lines in the order they came, each with whether it was held.
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, bool)>>>,
    released: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HoldingProxy {
    fn start(upstream: &str) -> HoldingProxy {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (seen_by, released_by) = (seen.clone(), released.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { return };
                let mut server = std::net::TcpStream::connect(&upstream).unwrap();
                let (mut answers, mut to_client) = (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || drop(std::io::copy(&mut answers, &mut to_client)));
                let (seen, released) = (seen_by.clone(), released_by.clone());
                std::thread::spawn(move || {
                    let mut pending = Vec::new();
                    let mut buffer = [0u8; 16 * 1024];
                    loop {
                        let Ok(read @ 1..) = client.read(&mut buffer) else {
                            return;
                        };
                        pending.extend_from_slice(&buffer[..read]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            let request: Vec<u8> = pending.drain(..end + 4).collect();
                            let text = String::from_utf8_lossy(&request);
                            let line = text.lines().next().unwrap_or_default().to_owned();
                            let held = line.contains("continuation-token=");
                            seen.lock().unwrap().push((line, held));
                            let held_since = std::time::Instant::now();
                            while held
                                && !released.load(Ordering::SeqCst)
                                && held_since.elapsed() < Duration::from_secs(20)
                            {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            if server.write_all(&request).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        HoldingProxy {
            endpoint,
            seen,
            released,
        }
    }

    /// The request lines seen so far, each with whether it was held.
    fn seen(&self) -> Vec<(String, bool)> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits (at most 30 s) until a request is being held, and returns the lines seen by then.
    fn wait_until_held(&self) -> Vec<(String, bool)> {
        let started = std::time::Instant::now();
        loop {
            let seen = self.seen();
            if seen.iter().any(|(_, held)| *held) {
                return seen;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "nothing held: {seen:#?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn release(&self) {
        self.released.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Issue 46: a cold bucket of more than one page shows the first page's rows while the second
/// page is asked: the open returns with them, the window's listing holds them, and the request
/// for the next page is then held by a proxy in front of the server (so it cannot have been
/// answered); released, the next page's ids are told to the window and listed too.
#[test]
fn a_cold_bucket_shows_its_first_page_of_rows_before_the_next_page_is_answered() {
    use studio_core::app::Studio;
    use studio_core::store::StoreLocation;

    let fixture = Fixture::new();
    let mut ids: Vec<String> = (0..1_500).map(|n| format!("1795952{n:06}_s")).collect();
    let infos: Vec<_> = ids
        .iter()
        .map(|id| json!([format!("pages/{id}/.session-info.json"), "{}"]))
        .collect();
    fixture.moto.upload(BUCKET, true, json!([{"bulk": infos}]));
    ids.sort();
    let proxy = HoldingProxy::start(&fixture.moto.endpoint());
    let source = Source::parse(&format!("s3://{BUCKET}/pages"))
        .unwrap()
        .with_endpoint(&proxy.endpoint);
    let (cloud, statuses) = open_cloud(&source, fixture.options()).unwrap();
    let status = cloud.status();
    assert!(status.listing && status.listed == 1_000, "{status:?}");
    let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
    studio.open_cloud(cloud).unwrap();
    let rows = studio.sessions(SystemTime::now()).unwrap().sessions;
    let seen = proxy.wait_until_held();
    let mut shown: Vec<String> = rows.iter().map(|row| row.summary.id.to_string()).collect();
    shown.sort();
    assert_eq!(shown, ids[..1_000], "the first page's rows");
    assert!(rows.iter().all(|row| row.fetching), "nothing fetched yet");
    let listings: Vec<&(String, bool)> = seen.iter().filter(|(line, _)| line.contains("list-type=2")).collect();
    assert_eq!(listings.len(), 2, "the first page, then the second asked: {seen:#?}");
    assert!(!listings[0].1 && listings[1].1, "{seen:#?}");
    assert_eq!(seen.len(), 2, "nothing else asked: {seen:#?}");

    proxy.release();
    let done = loop {
        let status = statuses
            .recv_timeout(Duration::from_secs(30))
            .expect("the listing's end is told");
        if !status.listing {
            break status;
        }
    };
    assert!(
        done.listed == 1_500 && done.error.is_none() && done.checking,
        "{done:?}"
    );
    let rows = studio.sessions(SystemTime::now()).unwrap().sessions;
    let mut shown: Vec<String> = rows.iter().map(|row| row.summary.id.to_string()).collect();
    shown.sort();
    assert_eq!(shown, ids, "every page's rows, once");
    studio.shut_down();
}
