//! Sessions shared with the window, for the tests of sharing (share.rs, dialogs.rs): a bundle
//! exported by `zstudio export`, and the window's word that a session was imported.

use std::path::PathBuf;

use crate::harness::{eventually, wait_for, zstudio_in, Workspace, PIPELINE};

/// PIPELINE exported from a workspace and store of its own, as `pipeline.zip` (the workspace is
/// kept while the bundle is used).
pub fn pipeline_bundle() -> (Workspace, PathBuf) {
    let elsewhere = Workspace::with_sessions(&[PIPELINE]);
    let bundle = elsewhere.data_home().join("pipeline.zip");
    zstudio_in(
        &elsewhere.db(),
        elsewhere.path(),
        &[
            "export".as_ref(),
            PIPELINE.id.as_ref(),
            "-o".as_ref(),
            bundle.as_os_str(),
        ],
    );
    (elsewhere, bundle)
}

/// Waits for the window to show the session `id` in its view and its table, the view's header
/// saying it was imported from `source` (a file or folder name).
pub async fn shows_imported(client: &fantoccini::Client, id: &str, source: &str) {
    wait_for(client, &format!("#session-view[data-session-id='{id}']")).await;
    wait_for(client, &format!("tr[data-session-id='{id}']")).await;
    let wanted = format!("imported from {source}");
    eventually(&format!("the header says {wanted:?}"), || async {
        let said = wait_for(client, "#session-imported")
            .await
            .text()
            .await
            .map_err(|e| e.to_string())?;
        (said == wanted).then_some(()).ok_or(said)
    })
    .await;
}
