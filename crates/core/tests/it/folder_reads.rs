//! Each session folder's reads, counted by the kernel: the opens of its `.session-info.json`
//! (inotify), which reading a summary opens and a fingerprint never does. Shared by the start-up
//! test here and the catalogue's in the CLI's test binary (`crates/cli/tests/cli/catalogue.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{AccessKind, EventKind};
use notify::{RecursiveMode, Watcher as _};

/// Counts the opens of each session's `.session-info.json`, as inotify reports them.
pub struct Reads {
    watcher: notify::RecommendedWatcher,
    opens: Arc<Mutex<BTreeMap<PathBuf, usize>>>,
    lost: Arc<Mutex<bool>>,
}

impl Reads {
    pub fn new() -> Reads {
        let opens: Arc<Mutex<BTreeMap<PathBuf, usize>>> = Arc::default();
        let lost: Arc<Mutex<bool>> = Arc::default();
        let (counted, lost_events) = (opens.clone(), lost.clone());
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if event.need_rescan() => *lost_events.lock().unwrap() = true,
            Ok(event) if matches!(event.kind, EventKind::Access(AccessKind::Open(_))) => {
                for path in event.paths {
                    if path.file_name().is_some_and(|name| name == ".session-info.json") {
                        *counted.lock().unwrap().entry(path).or_default() += 1;
                    }
                }
            }
            Ok(_) => {}
            Err(_) => *lost_events.lock().unwrap() = true,
        })
        .unwrap();
        Reads { watcher, opens, lost }
    }

    pub fn watch(&mut self, folder: &Path) {
        self.watcher.watch(folder, RecursiveMode::NonRecursive).unwrap();
    }

    /// How often each of `folders` was read since the last call (inotify's queue drained first).
    pub fn take(&self, folders: &[PathBuf]) -> BTreeMap<String, usize> {
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !*self.lost.lock().unwrap(),
            "inotify lost events: the reads cannot be counted"
        );
        let mut opens = self.opens.lock().unwrap();
        folders
            .iter()
            .map(|folder| {
                let name = folder.file_name().unwrap().to_string_lossy().into_owned();
                (name, opens.remove(&folder.join(".session-info.json")).unwrap_or(0))
            })
            .collect()
    }
}
