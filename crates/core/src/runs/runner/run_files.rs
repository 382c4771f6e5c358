//! The files a run has beside its agent: the stop files in its session folder (PROTOCOL.md §3),
//! and the conversation so far, which the agent reads (`$ZIBBY_STUDIO_MESSAGES`).

use std::path::{Path, PathBuf};

/// Both names every engine era knows between them (PROTOCOL.md §3).
pub const STOP_FILES: [&str; 2] = [".zibby-studio-stop", ".zibby-stop"];

/// Removes both stop files from a session folder, if they are there.
pub(super) fn remove_stop_files(session_path: &Path) {
    for name in STOP_FILES {
        let _ = std::fs::remove_file(session_path.join(name));
    }
}

/// The conversation so far, for the agent (`$ZIBBY_STUDIO_MESSAGES`), 0600: in the keeper's run
/// folder, else (a run without a keeper) the file [`messages_file`] of the system's temp folder;
/// removed when the run is settled however it ended.
pub(super) const MESSAGES_FILE: &str = "messages.json";

/// The conversation file of a run without a keeper.
pub(super) fn messages_file(run_id: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zibby-studio-{run_id}-messages.json"))
}
