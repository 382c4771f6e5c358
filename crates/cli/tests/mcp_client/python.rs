//! The official Python MCP SDK's client (`mcp` from PyPI, pinned and installed by
//! `scripts/setup.sh` into `.venv/mcp`, or `$ZIBBY_MCP_VENV`) running `mcp_client/drive.py`,
//! as the serve, remote and cloud test binaries use it. A missing environment fails the test:
//! it is never skipped.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the script may take, past its own deadline (300 s).
const SCRIPT_WAIT: Duration = Duration::from_secs(360);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's python, its `mcp` the version `scripts/setup.sh` pins; panics naming the script
/// otherwise.
fn sdk_python() -> PathBuf {
    let venv = std::env::var_os("ZIBBY_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/mcp"));
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it installs the Python MCP SDK `mcp` into .venv/mcp), or set ZIBBY_MCP_VENV",
        python.display()
    );
    let setup = std::fs::read_to_string(repo_root().join("scripts/setup-servers.sh")).unwrap();
    let pinned = setup
        .lines()
        .find_map(|line| line.strip_prefix("MCP_VERSION="))
        .expect("scripts/setup-servers.sh pins MCP_VERSION");
    let installed = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&installed.stdout).trim().to_owned();
    assert!(
        installed.status.success() && version == pinned,
        "the Python MCP SDK in {} is {:?}, not mcp {pinned}: run scripts/setup.sh{}",
        venv.display(),
        version,
        if installed.status.success() {
            String::new()
        } else {
            let stderr = String::from_utf8_lossy(&installed.stderr);
            format!(" ({})", stderr.trim().lines().last().unwrap_or_default())
        }
    );
    python
}

/// Runs `drive.py ARGS` with the pinned SDK and fails the test, with what the script printed,
/// unless every one of its checks passed within [`SCRIPT_WAIT`].
pub fn drive(args: &[OsString]) {
    let python = sdk_python();
    let began = Instant::now();
    let mut child = Command::new(&python)
        .arg(repo_root().join("crates/cli/tests/mcp_client/drive.py"))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("ZIBBY_STUDIO_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if began.elapsed() > SCRIPT_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let shown = format!("--- stdout\n{stdout}--- stderr\n{stderr}");
    let status = status.unwrap_or_else(|| panic!("drive.py did not end within {SCRIPT_WAIT:?}\n{shown}"));
    assert!(status.success(), "drive.py failed ({status})\n{shown}");
    assert!(stdout.contains("ok: all checks passed"), "{shown}");
}
