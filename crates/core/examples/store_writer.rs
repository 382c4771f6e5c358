//! A process that writes a long run's output into a store until it is killed; the store tests
//! kill it with SIGKILL mid-write and check that nothing committed was lost.
//!
//! `store_writer <DB> <WORKSPACE>`: prints `run <id>` once, then `committed <n>` after each batch.

use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use studio_core::protocol::Stream;
use studio_core::store::{NewRun, Store, StoreLocation};
use studio_core::{SessionId, Workspace};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, workspace] = &args[..] else {
        eprintln!("usage: store_writer <DB> <WORKSPACE>");
        std::process::exit(2);
    };
    let store = Store::open(&StoreLocation::File(PathBuf::from(db))).unwrap();
    let workspace = Workspace::open(workspace).unwrap();
    let session = SessionId::parse("1795952600000_kill").unwrap();
    let command = vec!["agent".to_owned()];
    let run_id = store
        .run_insert(
            &workspace,
            &NewRun {
                session: &session,
                agent: Some("writer"),
                command: &command,
                replayed_node: None,
                prompt: Some("write forever"),
                started_at: SystemTime::now(),
            },
        )
        .unwrap();
    store
        .run_set_process(&run_id, std::process::id(), std::process::id())
        .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "run {run_id}").unwrap();
    let mut writer = store.output_writer(&run_id).unwrap();
    for line in 1u64.. {
        writer
            .append(
                Stream::Stdout,
                line,
                Some("work"),
                &format!("line {line} of a run that never ends"),
            )
            .unwrap();
        if line % 1000 == 0 {
            writer.flush().unwrap();
            writeln!(out, "committed {line}").unwrap();
            out.flush().unwrap();
        }
    }
}
