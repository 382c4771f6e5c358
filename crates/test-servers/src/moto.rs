//! moto's S3-compatible server (`moto_server`, from the `moto[server]` that `scripts/setup.sh`
//! installs into `.venv/moto`, or `$ZIBBY_MOTO_VENV`), on 127.0.0.1 at a free port, killed by
//! its pid when [`Moto`] is dropped. Uploads go through the same venv's boto3 ([`Moto::upload`]).

use std::path::PathBuf;
use std::process::Command;

use nix::sys::signal::Signal;

use crate::process::{free_port, ServerProcess};

/// The uploader run with the venv's Python.
const UPLOADER: &str = include_str!("moto_upload.py");

/// A running moto server.
pub struct Moto {
    process: ServerProcess,
    port: u16,
    venv: PathBuf,
    /// Its log (stdout and stderr), removed with it; declared after `process` so the server is
    /// ended before its folder goes.
    _log_dir: tempfile::TempDir,
}

/// The virtual environment moto is in: `$ZIBBY_MOTO_VENV`, else the project's `.venv/moto`.
pub fn venv() -> PathBuf {
    std::env::var_os("ZIBBY_MOTO_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/moto"))
}

impl Moto {
    /// A server accepting any credentials.
    pub fn start() -> Moto {
        Moto::start_with(&[])
    }

    /// A server with extra environment (e.g. `INITIAL_NO_AUTH_ACTION_COUNT=0`: every request
    /// must be signed by a key moto's IAM knows, so any other key is refused).
    pub fn start_with(env: &[(&str, &str)]) -> Moto {
        let venv = venv();
        let program = venv.join("bin/moto_server");
        assert!(
            program.is_file(),
            "{} is missing: run scripts/setup.sh (it installs moto[server] into .venv/moto), or set ZIBBY_MOTO_VENV",
            program.display()
        );
        let log_dir = tempfile::tempdir().expect("a temp folder for moto's log");
        let port = free_port();
        let mut command = Command::new(&program);
        command
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .envs(env.iter().copied());
        let mut process = ServerProcess::spawn("moto_server", command, &log_dir.path().join("moto.log"));
        process.wait_for_port(port);
        Moto {
            process,
            port,
            venv,
            _log_dir: log_dir,
        }
    }

    /// What the server printed.
    pub fn log(&self) -> String {
        self.process.log_text()
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The variables that point a client at this server with test credentials.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
        ]
    }

    /// Freezes the server (SIGSTOP): it accepts connections and answers nothing.
    pub fn freeze(&self) {
        self.process.signal(Signal::SIGSTOP);
    }

    /// Resumes a frozen server (SIGCONT).
    pub fn resume(&self) {
        self.process.signal(Signal::SIGCONT);
    }

    /// Runs the uploader (`moto_upload.py`, its ops described there) on `bucket`, creating it
    /// first when `create`; panics with its error output when it fails.
    pub fn upload(&self, bucket: &str, create: bool, ops: serde_json::Value) {
        let spec = serde_json::json!({"endpoint": self.endpoint(), "bucket": bucket, "create": create, "ops": ops});
        crate::process::run_python(
            &self.venv.join("bin/python"),
            UPLOADER,
            &spec,
            &[("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")],
            &format!("the upload to {bucket}"),
        );
    }
}
