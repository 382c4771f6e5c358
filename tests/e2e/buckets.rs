//! A bucket for the window's tests: captured sessions uploaded to moto's S3 server on 127.0.0.1
//! (`test_servers::moto`), and a credentials profile that reaches it. Shared by the main binary's
//! `cloud` tests and the dialogs binary's `opening`.

use serde_json::json;
use test_servers::moto::Moto;

use crate::harness::{CapturedSession, Workspace};

pub const BUCKET: &str = "team-runs";

/// Uploads the captured `sessions` under `ci/` of the bucket, each with its upload marker.
pub fn upload(moto: &Moto, sessions: &[CapturedSession], create: bool) {
    let folder = Workspace::with_sessions(sessions);
    let mut ops = Vec::new();
    for session in sessions {
        let path = folder.path().join(".zibby/output/sessions").join(session.id);
        ops.push(json!({"copy_tree": path, "prefix": format!("ci/{}/", session.id)}));
        ops.push(json!({"put": format!("ci/{}/.upload-complete", session.id), "text": ""}));
    }
    moto.upload(BUCKET, create, json!(ops));
}

/// The shared credentials and config files of a profile `moto-reader` holding moto's test keys
/// (no default profile): a client reaches moto only with that profile.
fn profile_files(folder: &std::path::Path) -> (String, String) {
    let (credentials, config) = (folder.join("aws-credentials"), folder.join("aws-config"));
    std::fs::write(
        &credentials,
        "[moto-reader]\naws_access_key_id = testing\naws_secret_access_key = testing\n",
    )
    .unwrap();
    std::fs::write(&config, "[profile moto-reader]\nregion = us-east-1\n").unwrap();
    (credentials.display().to_string(), config.display().to_string())
}

/// The window's environment for a bucket read with the profile `moto-reader` ([`profile_files`],
/// written in `here`'s data folder) and no keys, endpoint or region in the variables (the form's
/// profile and endpoint give them), its cache in `here`'s data folder.
pub fn profile_env(here: &Workspace) -> Vec<(&'static str, String)> {
    let (credentials, config) = profile_files(here.data_home());
    vec![
        ("AWS_SHARED_CREDENTIALS_FILE", credentials),
        ("AWS_CONFIG_FILE", config),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ("XDG_CACHE_HOME", here.data_home().join("cache").display().to_string()),
    ]
}
