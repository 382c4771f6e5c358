//! Two sessions on two machines compared: a session of a remote workspace (A) against one of a
//! workspace here (B), each its last run, as `zstudio diff A B --remote HOST:PATH` and the
//! window's "Compare with a local session…" both do it. Both sides are written as bundles (the
//! remote one by its host's server and streamed back), imported as new sessions into a scratch
//! workspace and an in-memory store, and compared there as two recorded runs: nothing of either
//! workspace or store is changed. The scratch is kept while the comparison is (the window's
//! "more" asks it again), and removed with it; it is named by its process
//! ([`crate::vocabulary::owned`]), so that the scratch of a studio that was killed is removed by
//! the next one ([`sweep_stale_scratch`]: at each comparison and when the studio starts).

use std::path::Path;
use std::time::SystemTime;

use crate::compare::sides::Source;
use crate::compare::{compare, Options, RunDiff};
use crate::sessions::session::Workspace;
use crate::share::{self, Exported, ImportOptions};
use crate::store::{Store, StoreLocation};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::owned::{owned_name, sweep_orphans};

/// What the name of every comparison's scratch folder (in the temporary folder) starts with.
const SCRATCH_PREFIX: &str = "zibby-studio-compare-";

/// Removes the scratch folders of comparisons whose studio process is gone (killed before it
/// could remove them); returns those removed.
pub fn sweep_stale_scratch() -> Vec<std::path::PathBuf> {
    sweep_orphans(&std::env::temp_dir(), SCRATCH_PREFIX)
}

/// A remote session and a local one, brought together to compare.
pub struct AcrossMachines {
    remote_id: SessionId,
    local_id: SessionId,
    store: Store,
    a: Source,
    b: Source,
    /// Removed when dropped, with the bundles and the imported sessions.
    _scratch: tempfile::TempDir,
}

impl AcrossMachines {
    /// Brings remote session `remote_id` here through `export_remote` (which writes its bundle at
    /// the path it is given), writes `local_id` of `local` (recorded in `store`) as a bundle too,
    /// and imports both into a scratch workspace, each as a new session (the same session on both
    /// machines has the same id).
    pub fn prepare(
        export_remote: impl FnOnce(&Path) -> Result<Exported, Error>,
        remote_id: &SessionId,
        store: &Store,
        local: &Workspace,
        local_id: &SessionId,
        now: SystemTime,
    ) -> Result<AcrossMachines, Error> {
        sweep_stale_scratch();
        let scratch = tempfile::Builder::new()
            .prefix(&owned_name(SCRATCH_PREFIX))
            .rand_bytes(0)
            .tempdir()
            .map_err(|e| Error::io_write(std::env::temp_dir(), e))?;
        let (remote_bundle, local_bundle) = (scratch.path().join("a.zip"), scratch.path().join("b.zip"));
        export_remote(&remote_bundle)?;
        share::export_session(store, local, local_id, &local_bundle, false, now)?;
        let root = scratch.path().join("workspace");
        std::fs::create_dir_all(&root).map_err(|e| Error::io_write(root.clone(), e))?;
        let workspace = Workspace::open(&root)?;
        let scratch_store = Store::open(&StoreLocation::memory())?;
        let options = ImportOptions {
            as_new: true,
            ..ImportOptions::default()
        };
        let side = |bundle: &Path| -> Result<Source, Error> {
            let imported = share::import(&scratch_store, &workspace, bundle, &options, now)?;
            Source::resolve(&scratch_store, &workspace, imported.session_id.as_str())
        };
        let (a, b) = (side(&remote_bundle)?, side(&local_bundle)?);
        Ok(AcrossMachines {
            remote_id: remote_id.clone(),
            local_id: local_id.clone(),
            store: scratch_store,
            a,
            b,
            _scratch: scratch,
        })
    }

    /// Whether it compares these two sessions.
    pub fn is_of(&self, remote_id: &str, local_id: &str) -> bool {
        self.remote_id.as_str() == remote_id && self.local_id.as_str() == local_id
    }

    /// The two runs compared node by node, each side named by its own session's id (the scratch
    /// copies' ids and runs are no one's).
    pub fn compare(&self, options: &Options) -> Result<RunDiff, Error> {
        let mut diff = compare(Some(&self.store), &self.a, &self.b, options)?;
        for (side, id) in [(&mut diff.a, &self.remote_id), (&mut diff.b, &self.local_id)] {
            side.session_id = Some(id.to_string());
            side.run_id = None;
        }
        Ok(diff)
    }
}

/// The sessions of the workspace here that the open remote workspace's sessions can be compared
/// with: the last local workspace the window had open.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LocalSessions {
    /// The workspace folder here.
    pub root: String,
    pub sessions: Vec<crate::store::SessionRow>,
}
