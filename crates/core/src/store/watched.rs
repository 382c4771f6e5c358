//! The workspaces a watcher of this process follows (`index::keeping_current`), and whether a
//! change was told since their session folders' text was last indexed (`folder_text`): a search
//! in a watched workspace walks its folders again only after one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The workspaces a watcher of this process follows: for each, how many changes it told, and
/// how many it had told when the workspace's folders were last walked whole.
#[derive(Debug, Default)]
pub struct Watched {
    roots: std::sync::Mutex<HashMap<PathBuf, Freshness>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Freshness {
    changes: u64,
    walked_at: Option<(u64, std::time::Instant)>,
}

/// A watched workspace is walked again after this long even when no change was told: what a
/// watcher tells no change of (a file of the documented layout, `nodes/<node>/raw_output.txt`,
/// rewritten to the same summary) is found within it.
pub const WALKED_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl Watched {
    fn roots(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Freshness>> {
        self.roots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A watcher starts following `root` (again): what it missed before is walked for.
    pub(super) fn started(&self, root: &Path) {
        self.roots().insert(root.to_owned(), Freshness::default());
    }

    /// The watcher of `root` told a change.
    pub(super) fn changed(&self, root: &Path) {
        if let Some(freshness) = self.roots().get_mut(root) {
            freshness.changes += 1;
        }
    }

    /// `Ok` when `root` need not be walked (watched, no change told since its last walk, which
    /// is recent); else the count of changes a walk starting now is recorded at by
    /// [`Watched::walked`] (`None`: not watched).
    pub(super) fn to_walk(&self, root: &Path) -> Result<(), Option<u64>> {
        match self.roots().get(root) {
            None => Err(None),
            Some(Freshness {
                changes,
                walked_at: Some((at, when)),
            }) if at == changes && when.elapsed() < WALKED_AT_MOST_EVERY => Ok(()),
            Some(freshness) => Err(Some(freshness.changes)),
        }
    }

    pub(super) fn walked(&self, root: &Path, at: u64, started: std::time::Instant) {
        if let Some(freshness) = self.roots().get_mut(root) {
            freshness.walked_at = Some((at, started));
        }
    }
}
