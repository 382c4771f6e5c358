//! A 1 GB remote output's tail (`BENCH_TAIL_MB`, 1024 by default; 0 skips it): a run on the
//! host prints that many MB in lines of 100 bytes; then what the window asks to open its output at
//! the tail (its total: `run_output` from line 1, one line; then its last page: 500 lines), through
//! the link, against the same calls on the host's store opened here. Its time, and the bytes the
//! server sent for it (`RemoteClient::bytes_received`).

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use serde_json::{json, Value};
use studio_core::app::Studio;
use studio_core::remote::link::Link;
use studio_core::store::StoreLocation;
use test_servers::sshd::Sshd;

use crate::common::best_of;
use crate::{ms, on_host};

/// The window's page (`PAGE_LINES`, ui/src/outputsource.ts).
const PAGE_LINES: usize = 500;

pub fn tail(sshd: &Sshd, workspace: &Path, link: &Link) {
    let mb: u64 = std::env::var("BENCH_TAIL_MB")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1024);
    if mb == 0 {
        return;
    }
    let line = format!("{}\n", "0123456789".repeat(10));
    let printing = format!("yes {} | head -c {}", &line[..99], mb << 20);
    let started = Instant::now();
    let ran = on_host(sshd)
        .args(["run", "-w"])
        .arg(workspace)
        .args(["--", "sh", "-c", &printing])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let recorded = started.elapsed();
    let runs: Value = link.call("runs_list", &json!({ "session_id": null })).unwrap();
    let run_id = runs[0]["id"].as_str().unwrap().to_owned();
    // The host's store, opened here: the same calls without the link.
    let store = sshd.home().join("data/zibby-studio/studio.sqlite");
    let (here, _) = Studio::open(Some(workspace), StoreLocation::resolve(Some(store), false));
    let mut local_tail = || {
        let probe = here.run_output(&run_id, 1, 1, None, None).unwrap();
        let from = (probe.total - PAGE_LINES as i64 + 1).max(1);
        let page = here.run_output(&run_id, from, PAGE_LINES, None, None).unwrap();
        (probe.total, page.lines.last().map(|l| l.seq))
    };
    let mut remote_tail = || {
        let before = link.with_client(|client| Ok(client.bytes_received())).unwrap();
        let probe: Value = link.call("run_output", &output_params(&run_id, 1, 1)).unwrap();
        let total = probe["total"].as_i64().unwrap();
        let from = (total - PAGE_LINES as i64 + 1).max(1);
        let page: Value = link
            .call("run_output", &output_params(&run_id, from, PAGE_LINES))
            .unwrap();
        let after = link.with_client(|client| Ok(client.bytes_received())).unwrap();
        let last = page["lines"]
            .as_array()
            .unwrap()
            .last()
            .map(|l| l["seq"].as_i64().unwrap());
        ((total, last), after - before)
    };
    // Opened first through the link (its pages not in the host's cache yet, as a window opens it).
    let (remote_first, (_, first_carried)) = best_of(1, &mut remote_tail);
    let local_first = best_of(1, &mut local_tail).0;
    let remote = best_of(3, &mut remote_tail);
    let local = best_of(3, &mut local_tail);
    let ((total, last), carried) = remote.1;
    assert_eq!(local.1, (total, last), "the same tail");
    assert_eq!(last, Some(total), "the last page ends at the last line");
    here.shut_down();
    println!(
        "a {mb} MB remote output ({total} lines; recorded in {:.1} s): its tail (total, then the last \
         {PAGE_LINES} lines) through the link first {} ms ({first_carried} bytes carried), then best of 3 {} ms \
         ({carried} bytes); on the same store here first {} ms, best of 3 {} ms ({:.2}x)",
        recorded.as_secs_f64(),
        ms(remote_first),
        ms(remote.0),
        ms(local_first),
        ms(local.0),
        remote.0.as_secs_f64() / local.0.as_secs_f64()
    );
}

fn output_params(run_id: &str, from_seq: i64, limit: usize) -> Value {
    json!({ "run_id": run_id, "from_seq": from_seq, "limit": limit, "node": null, "stream": null })
}
