//! Two sessions on two machines compared: a session of a remote workspace (A) against one of a
//! workspace here (B), each its last run, as `zstudio diff A B --remote HOST:PATH` and the
//! window's "Compare with a local session…" both do it. Both sides are written as bundles (the
//! remote one by its host's server and streamed back), imported as new sessions into a scratch
//! workspace and an in-memory store, and compared there as two recorded runs: nothing of either
//! workspace or store is changed. The scratch is kept while the comparison is (the window's
//! "more" asks it again), and removed with it.

use std::path::Path;
use std::time::SystemTime;

use crate::app::lock;
use crate::compare::sides::Source;
use crate::compare::{compare, Options, RunDiff};
use crate::sessions::session::Workspace;
use crate::share::{self, Exported, ImportOptions};
use crate::store::{Store, StoreLocation};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

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
        let scratch = tempfile::Builder::new()
            .prefix("zibby-studio-compare-")
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

impl crate::app::Studio {
    /// The last workspace on this machine the window had open (the one it holds while a remote
    /// workspace is open), whatever is open now.
    pub fn local_workspace(&self) -> Result<Workspace, Error> {
        match &*self.workspace.read().unwrap_or_else(|poisoned| poisoned.into_inner()) {
            Ok(workspace) => Ok(workspace.clone()),
            Err(error) => Err(error.kept(None)),
        }
    }

    /// The sessions of [`Studio::local_workspace`], newest first, to compare a remote session with.
    pub fn local_sessions(&self, now: SystemTime) -> Result<LocalSessions, Error> {
        let workspace = self.local_workspace()?;
        let sessions = self
            .store()?
            .list_sessions_as(&workspace, now, crate::store::index::NodeDetail::TotalsOnly)?;
        Ok(LocalSessions {
            root: workspace.root().display().to_string(),
            sessions,
        })
    }

    /// Session `remote_id` of the open remote workspace compared with session `local_id` of
    /// [`Studio::local_workspace`] ([`AcrossMachines`]); the sessions are brought together once
    /// and kept for the next call on the same two (a node's "more"). Reads both whole: call it
    /// off the main thread.
    pub fn compare_across(&self, remote_id: &str, local_id: &str, options: &Options) -> Result<RunDiff, Error> {
        let remote = self.remote().ok_or_else(|| Error::InvalidRequest {
            reason: "comparing across machines needs a remote workspace open".to_owned(),
        })?;
        let kept = lock(&self.across)
            .clone()
            .filter(|kept| kept.is_of(remote_id, local_id));
        let across = match kept {
            Some(kept) => kept,
            None => {
                let (remote_session, local_session) = (SessionId::parse(remote_id)?, SessionId::parse(local_id)?);
                let prepared = AcrossMachines::prepare(
                    |bundle| remote.export_session(remote_id, false, bundle),
                    &remote_session,
                    self.store()?,
                    &self.local_workspace()?,
                    &local_session,
                    SystemTime::now(),
                )?;
                let prepared = std::sync::Arc::new(prepared);
                *lock(&self.across) = Some(prepared.clone());
                prepared
            }
        };
        across.compare(options)
    }
}
