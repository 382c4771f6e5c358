//! The files a run has beside its agent: the stop files in its session folder (docs/protocol.md §3),
//! and the conversation so far, which the agent reads (`$ZIBBY_STUDIO_MESSAGES`).

use std::path::{Path, PathBuf};

pub use crate::sessions::session::STOP_FILES;

/// Removes both stop files from a session folder, if they are there, leaving the folder's own
/// modification time as it was: the studio's own cleanup, however late after the run's end, is
/// never taken for someone writing there since (which would hand the session to its folder and
/// lose the run's record: issue 41).
pub(super) fn remove_stop_files(session_path: &Path) {
    crate::sessions::private::keeping_folder_time(session_path, || {
        for name in STOP_FILES {
            let _ = std::fs::remove_file(session_path.join(name));
        }
    });
}

/// The conversation so far, for the agent (`$ZIBBY_STUDIO_MESSAGES`), 0600: in the keeper's run
/// folder, else (a run without a keeper) the file [`messages_file`] of the system's temp folder;
/// removed when the run is settled however it ended.
pub(super) const MESSAGES_FILE: &str = "messages.json";

/// The conversation file of a run without a keeper.
pub(super) fn messages_file(run_id: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zibby-studio-{run_id}-messages.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_the_stop_files_leaves_the_folders_time_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        for name in STOP_FILES {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(dir.path())
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(an_hour_ago))
            .unwrap();
        remove_stop_files(dir.path());
        for name in STOP_FILES {
            assert!(!dir.path().join(name).exists(), "{name}");
        }
        let modified = std::fs::metadata(dir.path()).unwrap().modified().unwrap();
        assert_eq!(modified, an_hour_ago);
    }
}
