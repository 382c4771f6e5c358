//! One stream of changes: a run the studio follows reaches the same sink as the watcher's
//! session changes, node by node, with its output gathered over a window.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use studio_core::live::RunChanges;
use studio_core::runner::{RunRequest, Supervisor, DEFAULT_GRACE};
use studio_core::store::{Store, StoreLocation};
use studio_core::watcher::Change;
use studio_core::{Status, Workspace};
use tempfile::TempDir;

use crate::harness::agent_binary;

#[test]
fn a_run_reaches_the_change_stream_node_by_node_with_its_output_coalesced() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("w")).unwrap();
    let workspace = Workspace::open(dir.path().join("w")).unwrap();
    let store = Arc::new(Store::open(&StoreLocation::File(dir.path().join("s.sqlite"))).unwrap());
    let supervisor = Supervisor::new(store.clone());
    let changes: Arc<Mutex<Vec<Change>>> = Arc::default();
    let collected = changes.clone();
    let stream = RunChanges::start(
        supervisor.subscribe(),
        store.clone(),
        Arc::new(move |change| collected.lock().unwrap().push(change)),
        Duration::from_millis(100),
    );
    let agent = agent_binary().to_string_lossy().into_owned();
    let started = Instant::now();
    let run = supervisor
        .start(RunRequest {
            workspace: workspace.clone(),
            agent: None,
            command: vec![
                agent,
                "--nodes".into(),
                "a:400,>inner:200,b:400".into(),
                "--lines".into(),
                "3000".into(),
            ],
            cwd: None,
            env: Vec::new(),
            inherit_env: Default::default(),
            session: None,
            prompt: None,
            node: None,
            grace: DEFAULT_GRACE,
            budget: Default::default(),
            over_budget: false,
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done = changes
            .lock()
            .unwrap()
            .iter()
            .any(|c| matches!(c, Change::RunStatusChanged { status, .. } if *status != Status::Running));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    drop(stream);
    let changes = changes.lock().unwrap().clone();
    assert!(changes.iter().all(
        |c| c.session_id().map(|id| id.as_str()) == Some(run.session_id.as_str()) && c.workspace() == workspace.root()
    ));

    let statuses: Vec<(Status, bool)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::RunStatusChanged { status, stopping, .. } => Some((*status, *stopping)),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, [(Status::Running, false), (Status::Success, false)]);
    let nodes: Vec<(String, usize, Status)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::NodeChanged {
                node, depth, status, ..
            } => Some((node.clone(), *depth, *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        nodes,
        [
            ("a".into(), 0, Status::Running),
            ("inner".into(), 1, Status::Running),
            ("inner".into(), 1, Status::Success),
            ("a".into(), 0, Status::Success),
            ("b".into(), 0, Status::Running),
            ("b".into(), 0, Status::Success),
        ]
    );

    // Every line the store has came through the stream, in order, in few changes.
    let mut streamed = Vec::new();
    let mut output_changes = 0;
    for change in &changes {
        if let Change::RunOutputAppended { lines, skipped, .. } = change {
            assert_eq!(*skipped, 0, "no window held more than the cap here");
            output_changes += 1;
            streamed.extend(lines.iter().map(|l| l.line.clone()));
        }
    }
    let stored: Vec<String> = store
        .output_page(&run.run_id, 1, 100_000)
        .unwrap()
        .into_iter()
        .map(|l| l.text)
        .collect();
    assert!(stored.len() > 9_000, "three nodes of 3,000 lines: {}", stored.len());
    assert_eq!(streamed, stored);
    let bound = elapsed.as_millis() as usize / 100 + 2 * nodes.len() + 4;
    assert!(
        output_changes <= bound,
        "{output_changes} output changes in {elapsed:?} (bound {bound})"
    );

    // A node's lines come before the change that ends it.
    let end_of_a = changes
        .iter()
        .position(|c| matches!(c, Change::NodeChanged { node, status: Status::Success, .. } if node == "a"))
        .unwrap();
    let last_line_of_a = changes
        .iter()
        .rposition(|c| matches!(c, Change::RunOutputAppended { lines, .. } if lines.iter().any(|l| l.line.contains("a: working (3000/3000)"))))
        .unwrap();
    assert!(last_line_of_a < end_of_a);
}
