//! What running an agent would do, exactly, as a person must see it before trusting it: part of
//! the vocabulary (the `agents_untrusted` error carries one), so it depends on nothing else of the
//! crate. `agents::find` makes one from a workspace's agents file.

use std::path::PathBuf;

use serde::Serialize;

/// A cloned repository can declare any command, folder and environment. Trust is given to this
/// launch, by its [`Launch::digest`]: another agent, its replay command, or any change of the
/// command, folder or environment is asked about again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Launch {
    pub agent: String,
    /// The command, placeholders unexpanded (`{prompt}`, `{session_id}`, ...).
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The variables the file sets, with their values (`NODE_OPTIONS` can run code too).
    pub env: Vec<(String, String)>,
    pub agents_file: PathBuf,
    /// The SHA-256 of the agent, command, folder and environment: what trusting it records.
    pub digest: String,
}

impl Launch {
    pub fn new(agent: &str, argv: &[String], cwd: PathBuf, env: Vec<(String, String)>, agents_file: PathBuf) -> Launch {
        use sha2::Digest;
        let exact = serde_json::json!({ "agent": agent, "argv": argv, "cwd": cwd, "env": env });
        let digest = sha2::Sha256::digest(exact.to_string().as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Launch {
            agent: agent.to_owned(),
            argv: argv.to_vec(),
            cwd,
            env,
            agents_file,
            digest,
        }
    }

    /// `KEY=value, ...`, or `-` when the agent sets none.
    pub fn env_text(&self) -> String {
        if self.env.is_empty() {
            "-".to_owned()
        } else {
            self.env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}
