//! A bucket prefix of generated sessions on moto's S3 server (127.0.0.1, `test_servers::moto`)
//! against the same sessions as local folders, in the same run (issue 28):
//!
//! - the first listing of a cold bucket (an empty cache) as the window makes it (issue 46):
//!   `CloudWorkspace::open` (which returns with the first page of the prefix's ids) and
//!   `Studio::sessions` (a row for each id, being fetched) until the first page's rows are in
//!   hand, then listed again as each next page is told (the statuses told during a listing taken
//!   as one, as the window's reload takes a burst) until every page's are, against the same
//!   pages asked by a bare HTTP client in the same turn (target: every row within 1.1x of the
//!   bare pages; the first rows after the first page), best of 3 turns on fresh caches; then,
//!   on the last, until its first check has fetched every session's small files and the mirror
//!   is listed (the details complete); beside them the same pages through the studio's client
//!   alone, and the local folders read afresh (`Workspace::list_sessions`);
//! - a warm re-listing (nothing changed: list the prefix, fetch nothing, list the mirror) against
//!   the same local listing again (target: within 1.2x);
//! - a warm reopen, as the window opens a bucket it opened before: `CloudWorkspace::open` on the
//!   warm mirror (which returns without asking the bucket; its poller checks once the mirror is
//!   listed, `CloudWorkspace::listed`) until the mirror's listing is in hand, against the same local listing (target: within 1.2x);
//! - the tail of a 1 GiB output (a multipart upload) shown after fetching at most a few MB; then
//!   the same output fetched whole, with the process's peak memory before and after.
//!
//! Both workspaces are listed as at a time [`RUNNING_QUIET_WINDOW`] from now: the local sessions
//! are a day old, the mirrored ones carry their objects' times (uploaded seconds before), and a
//! session written in that window may be `running`, which the core checks against `/proc` for
//! each one (seconds for a thousand): listed later, both are the sessions of finished runs.
//!
//! `cargo bench -p studio-core --bench bucket_listing` (`BENCH_SESSIONS` for another count than
//! 10,000; `BENCH_BIG_MIB` for another output size than 1024). Needs `scripts/setup.sh`'s moto.

use std::time::{Instant, SystemTime};

use serde_json::json;
use studio_core::app::cloud::{CloudStatus, CloudWorkspace};
use studio_core::app::Studio;
use studio_core::bucket::remote::Remote;
use studio_core::bucket::{Mirror, MirrorOptions, Source};
use studio_core::session::RUNNING_QUIET_WINDOW;
use studio_core::store::StoreLocation;
use studio_core::{SessionId, Workspace};
use test_servers::moto::Moto;

mod common;

use common::{best_of, generate_sessions};

fn main() {
    if common::names_only() {
        return;
    }
    let count = common::size_from_env("BENCH_SESSIONS", 10_000usize);
    let big_mib = common::size_from_env("BENCH_BIG_MIB", 1024usize);
    let moto = Moto::start();
    for (name, value) in moto.env() {
        std::env::set_var(name, value);
    }
    let dir = tempfile::tempdir().unwrap();
    generate_sessions(dir.path(), count);
    let local = Workspace::open(dir.path()).unwrap();
    upload(&moto, dir.path(), count);

    let later = || SystemTime::now() + RUNNING_QUIET_WINDOW;
    // Read afresh: every folder read by the studio (no store, no index), as `session_listing`.
    let (local_fresh, listed) = best_of(3, || local.list_sessions(later()).unwrap().len());
    assert_eq!(listed, count);

    let source = Source::parse("s3://bench/runs").unwrap();
    let options = MirrorOptions::new(std::env::temp_dir());
    // The prefix's folders alone, with a fresh client: what the rows wait for in the bucket.
    let (ids_only, ids) = best_of(3, || {
        let remote = Remote::connect(&source, options.timeout).unwrap();
        remote.list_folders(&[]).unwrap().len()
    });
    assert_eq!(ids, count);
    // As the window opens a bucket it never opened, three times in turn with the same pages asked
    // by a bare HTTP client (what the server takes for them, whoever asks): the first page's rows,
    // then every page's (the window listing again as each page is told), each its best of 3. The
    // last open goes on to its first check, which fetches every session (the details).
    let mut best = [std::time::Duration::MAX; 5];
    let mut last = None;
    for trial in 0..3 {
        let (pages, bare_first, listed) = {
            let started = Instant::now();
            let (listed, first) = server_pages_alone(&moto.endpoint(), "bench", "runs/");
            (started.elapsed(), first, listed)
        };
        assert_eq!(listed, count);
        let cache = tempfile::tempdir().unwrap();
        let options = MirrorOptions::new(cache.path().to_owned());
        let (told, statuses) = std::sync::mpsc::channel::<CloudStatus>();
        let on_status = Box::new(move |status| drop(told.send(status)));
        let started = Instant::now();
        let cold = CloudWorkspace::open(&source, options.clone(), on_status).unwrap();
        let (studio, _) = Studio::open(None, StoreLocation::resolve(None, true));
        studio.open_cloud(cold).unwrap();
        let rows = studio.sessions(later()).unwrap().sessions;
        let first_rows = started.elapsed();
        assert_eq!(rows.len(), count.min(1000), "the first page's rows");
        assert!(
            rows.iter().all(|row| row.fetching),
            "nothing fetched before the rows are shown"
        );
        let mut all_told = std::time::Duration::ZERO;
        let rows = loop {
            // As the window's reload does (one a burst): the statuses told meanwhile taken as one.
            let mut status = statuses.recv().unwrap();
            while let Ok(newer) = statuses.try_recv() {
                status = newer;
            }
            if !status.listing {
                all_told = started.elapsed();
            }
            let rows = studio.sessions(later()).unwrap().sessions;
            if !status.listing {
                assert!(status.error.is_none(), "{status:?}");
                break rows;
            }
        };
        let all_rows = started.elapsed();
        assert_eq!(rows.len(), count);
        for (best, new) in best.iter_mut().zip([first_rows, all_rows, bare_first, pages, all_told]) {
            *best = (*best).min(new);
        }
        if trial < 2 {
            studio.shut_down();
            continue;
        }
        let checked = loop {
            let status = statuses.recv().unwrap();
            if !status.checking {
                break status;
            }
        };
        assert!(checked.error.is_none(), "{checked:?}");
        let first_refresh = started.elapsed() - all_rows;
        studio.shut_down();
        last = Some((cache, options, first_refresh, started.elapsed()));
    }
    let [first_rows, all_rows, bare_first, pages_alone, all_told] = best;
    let (_cache, options, first_refresh, cold_details) = last.unwrap();
    let mirror = Mirror::open(&source, options.clone()).unwrap();
    let cloud = Workspace::open(mirror.workspace_root()).unwrap();
    assert_eq!(cloud.list_sessions(later()).unwrap().len(), count);
    let cloud_first = cold_details;

    // Taken in turns, best of 5 each, so that the load weighs on every figure alike.
    let list_cloud = || cloud.list_sessions(later()).unwrap().len();
    // As the window opens it again: the workspace opened, then its mirror's folder listed, then
    // the poller's check asked (`listed`, as `Studio::sessions` does); timed until the listing is
    // in hand, then the check waited for, so that it weighs on no other figure.
    let reopen = || {
        let (told, statuses) = std::sync::mpsc::channel::<CloudStatus>();
        let on_status = Box::new(move |status| drop(told.send(status)));
        let started = Instant::now();
        let reopened = CloudWorkspace::open(&source, options.clone(), on_status).unwrap();
        let opened = started.elapsed();
        let listed = Workspace::open(reopened.workspace_root())
            .unwrap()
            .list_sessions(later())
            .unwrap()
            .len();
        let took = started.elapsed();
        reopened.listed();
        assert_eq!(listed, count);
        let checked = statuses.recv().unwrap();
        assert!(!checked.checking && checked.error.is_none(), "{checked:?}");
        (took, opened)
    };
    let mut best = [std::time::Duration::MAX; 7];
    for _ in 0..5 {
        let timed = |f: &mut dyn FnMut()| {
            let started = Instant::now();
            f();
            started.elapsed()
        };
        let local_warm = timed(&mut || assert_eq!(local.list_sessions(later()).unwrap().len(), count));
        let mirror_alone = timed(&mut || assert_eq!(list_cloud(), count));
        let refresh_alone = timed(&mut || assert_eq!(mirror.refresh(SystemTime::now()).unwrap().fetched_bytes, 0));
        let one_then_other = timed(&mut || {
            let listing = mirror.refresh(SystemTime::now()).unwrap();
            assert!(!listing.changed, "nothing changed: the mirror is not written");
            list_cloud();
        });
        let at_once = timed(&mut || {
            let (listing, listed) = mirror.refresh_reading(SystemTime::now(), list_cloud).unwrap();
            assert!(!listing.changed && listed == count);
        });
        let (warm_reopen, reopen_open) = reopen();
        for (best, new) in best.iter_mut().zip([
            local_warm,
            mirror_alone,
            refresh_alone,
            one_then_other,
            at_once,
            warm_reopen,
            reopen_open,
        ]) {
            *best = (*best).min(new);
        }
    }
    let [local_warm, mirror_alone, refresh_alone, one_then_other, at_once, warm_reopen, reopen_open] = best;

    println!("sessions: {count} ({} objects with the markers)", count * 5);
    let pages = count.div_ceil(1000);
    println!(
        "cold bucket, the first page's rows (CloudWorkspace::open on an empty cache, then Studio::sessions): {:.1} ms; the bare client's first page {:.1} ms: {:.2}x",
        ms(first_rows),
        ms(bare_first),
        first_rows.as_secs_f64() / bare_first.as_secs_f64()
    );
    println!(
        "cold bucket, every page's rows (listed again as each page is told): {:.1} ms; the bare client's {pages} pages {:.1} ms: {:.2}x (target 1.1x)",
        ms(all_rows),
        ms(pages_alone),
        all_rows.as_secs_f64() / pages_alone.as_secs_f64()
    );
    println!(
        "  of which the last page told (every id listed, before the window's last listing): {:.1} ms ({:.2}x the bare pages)",
        ms(all_told),
        all_told.as_secs_f64() / pages_alone.as_secs_f64()
    );
    println!(
        "  the same rows against the local folders read afresh ({:.1} ms): first {:.2}x, all {:.2}x",
        ms(local_fresh),
        first_rows.as_secs_f64() / local_fresh.as_secs_f64(),
        all_rows.as_secs_f64() / local_fresh.as_secs_f64()
    );
    println!(
        "first listing, the details complete (the first check fetched every session, then the mirror listed): {:.1} ms: {:.2}x",
        ms(cloud_first),
        cloud_first.as_secs_f64() / local_fresh.as_secs_f64()
    );
    let ratio = |cloud: std::time::Duration| cloud.as_secs_f64() / local_warm.as_secs_f64();
    println!(
        "warm re-listing: cloud {:.1} ms (the refresh and the mirror's listing at once), local {:.1} ms: {:.2}x (target 1.2x)",
        ms(at_once),
        ms(local_warm),
        ratio(at_once)
    );
    println!(
        "  one after the other {:.1} ms ({:.2}x); the refresh alone {:.1} ms; the mirror's listing alone {:.1} ms ({:.2}x)",
        ms(one_then_other),
        ratio(one_then_other),
        ms(refresh_alone),
        ms(mirror_alone),
        ratio(mirror_alone)
    );
    println!(
        "warm reopen: cloud {:.1} ms (CloudWorkspace::open on the warm mirror, then its listing; the poller checks after), local {:.1} ms: {:.2}x (target 1.2x)",
        ms(warm_reopen),
        ms(local_warm),
        ratio(warm_reopen)
    );
    println!(
        "  of which CloudWorkspace::open until it returns (the mirror and its manifest opened, the poller started) {:.1} ms",
        ms(reopen_open)
    );
    println!(
        "  of the rows, the ids alone (the prefix's folders, {} pages, a fresh client): {:.1} ms ({:.2}x the local read afresh)",
        count.div_ceil(1000),
        ms(ids_only),
        ids_only.as_secs_f64() / local_fresh.as_secs_f64()
    );
    println!(
        "of the details, the first check after the rows (the bucket's requests, the mirror's writes) {:.1} ms",
        ms(first_refresh)
    );
    big_output_tail(&moto, big_mib);
}

/// The folder names under `prefix` of `bucket` (its common prefixes), page after page as
/// ListObjectsV2 gives them, asked by the plainest client there is: one HTTP/1.0 request a page on
/// its own connection, the answer's names counted and its continuation token read with string
/// search. What listing the ids costs on the server's side, whatever the client. The names, and
/// how long the first page took.
fn server_pages_alone(endpoint: &str, bucket: &str, prefix: &str) -> (usize, std::time::Duration) {
    let started = Instant::now();
    let mut first_page = None;
    use std::io::{Read, Write};
    let address = endpoint.trim_start_matches("http://");
    let between = |text: &str, open: &str, close: &str| {
        let start = text.find(open)? + open.len();
        Some(text[start..start + text[start..].find(close)?].to_owned())
    };
    let (mut names, mut token) = (0, None::<String>);
    loop {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("list-type", "2")
            .append_pair("delimiter", "/")
            .append_pair("prefix", prefix);
        if let Some(token) = &token {
            query.append_pair("continuation-token", token);
        }
        let query = query.finish();
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(stream, "GET /{bucket}?{query} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.") && answer[9..].starts_with("200"),
            "{answer}"
        );
        names += answer.matches("<CommonPrefixes>").count();
        first_page.get_or_insert_with(|| started.elapsed());
        token = between(&answer, "<NextContinuationToken>", "</NextContinuationToken>");
        if token.is_none() {
            return (names, first_page.unwrap_or_default());
        }
    }
}

/// The process's peak resident memory so far (`VmHWM` of `/proc/self/status`), in MiB.
fn peak_memory_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Every generated file, and each session's marker, uploaded 16 at a time.
fn upload(moto: &Moto, root: &std::path::Path, count: usize) {
    let sessions = root.join(".zibby/output/sessions");
    let mut objects = Vec::with_capacity(count * 5);
    for entry in std::fs::read_dir(&sessions).unwrap() {
        let session = entry.unwrap().path();
        let id = session.file_name().unwrap().to_str().unwrap().to_owned();
        for file in [
            ".session-info.json",
            "plan/raw_stream_output.txt",
            "act/raw_stream_output.txt",
            "report/raw_stream_output.txt",
        ] {
            let text = std::fs::read_to_string(session.join(file)).unwrap();
            objects.push(json!([format!("runs/{id}/{file}"), text]));
        }
        objects.push(json!([format!("runs/{id}/.upload-complete"), ""]));
    }
    moto.upload("bench", true, json!([{"bulk": objects}]));
}

/// A session whose one output is `mib` MiB (a multipart upload of 64 MiB parts): its listing and
/// its last page, with the bytes fetched for them.
fn big_output_tail(moto: &Moto, mib: usize) {
    let part_mib = 64.min(mib);
    moto.upload(
        "bench",
        false,
        json!([
            {"put": "big/1795999999999_big/.session-info.json", "text": "{}"},
            {"multipart": "big/1795999999999_big/node/raw_stream_output.txt", "part_bytes": part_mib << 20, "parts": mib / part_mib, "fill": "a line of the agent's output\n", "last": "the last line\n"},
            {"put": "big/1795999999999_big/.upload-complete", "text": ""},
        ]),
    );
    let cache = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mirror = Mirror::open(
        &Source::parse("s3://bench/big").unwrap(),
        MirrorOptions::new(cache.path().to_owned()),
    )
    .unwrap();
    mirror.refresh(SystemTime::now()).unwrap();
    let size = (mib as u64) << 20;
    let id = SessionId::parse("1795999999999_big").unwrap();
    let tail = mirror
        .read_range(&id, "node/raw_stream_output.txt", size - 64 * 1024..size)
        .unwrap();
    assert!(tail.ends_with(b"the last line\n"));
    println!(
        "tail of a {mib} MiB output: shown after {:.1} ms, {:.2} MB fetched (listing and the last 64 KiB page)",
        ms(started.elapsed()),
        mirror.fetched_bytes() as f64 / 1e6
    );

    // Fetched whole, as export, compare and import do: in pieces onto the disk.
    let peak_before = peak_memory_mib();
    let (before, started) = (mirror.fetched_bytes(), Instant::now());
    let folder = mirror.fetch_session(&id, u64::MAX).unwrap();
    let file = folder.join("node/raw_stream_output.txt");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    println!(
        "the same output fetched whole (as for export): {:.1} s, {:.0} MB fetched, peak memory {peak_before} MiB before, {} MiB after",
        started.elapsed().as_secs_f64(),
        (mirror.fetched_bytes() - before) as f64 / 1e6,
        peak_memory_mib()
    );
}
