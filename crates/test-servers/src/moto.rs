//! moto's S3-compatible server (`moto_server`, from the `moto[server]` that `scripts/setup.sh`
//! installs into `.venv/moto`, or `$ZIBBY_MOTO_VENV`), on 127.0.0.1 at a free port, killed by
//! its pid when [`Moto`] is dropped. Uploads go through the same venv's boto3 ([`Moto::upload`]).

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The uploader run with the venv's Python.
const UPLOADER: &str = include_str!("moto_upload.py");

/// A running moto server.
pub struct Moto {
    child: Child,
    port: u16,
    venv: PathBuf,
    /// Its log (stdout and stderr), removed with it.
    log_dir: tempfile::TempDir,
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
        let log = std::fs::File::create(log_dir.path().join("moto.log")).expect("moto's log file");
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("moto's log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let mut moto = Moto {
            child,
            port,
            venv,
            log_dir,
        };
        moto.wait_ready();
        moto
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("moto_server exited ({status}) before listening: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen on {address} within {START_TIMEOUT:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the server printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_dir.path().join("moto.log")).unwrap_or_default()
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
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
        kill(Pid::from_raw(self.pid() as i32), Signal::SIGSTOP).expect("SIGSTOP to moto");
    }

    /// Resumes a frozen server (SIGCONT).
    pub fn resume(&self) {
        kill(Pid::from_raw(self.pid() as i32), Signal::SIGCONT).expect("SIGCONT to moto");
    }

    /// Runs the uploader (`moto_upload.py`, its ops described there) on `bucket`, creating it
    /// first when `create`; panics with its error output when it fails.
    pub fn upload(&self, bucket: &str, create: bool, ops: serde_json::Value) {
        let spec = serde_json::json!({"endpoint": self.endpoint(), "bucket": bucket, "create": create, "ops": ops});
        let python = self.venv.join("bin/python");
        let mut child = Command::new(&python)
            .args(["-c", UPLOADER])
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(spec.to_string().as_bytes())
            .expect("the upload's spec written");
        let output = child.wait_with_output().expect("the uploader's end");
        assert!(
            output.status.success(),
            "the upload to {bucket} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let pid = Pid::from_raw(self.pid() as i32);
        // A frozen server is resumed so the kill is not left pending.
        let _ = kill(pid, Signal::SIGCONT);
        let _ = kill(pid, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 now (the OS picks it; the listener is closed before moto binds it).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
    listener.local_addr().expect("its address").port()
}
