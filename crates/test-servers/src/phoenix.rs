//! Arize Phoenix (`phoenix serve`, from the `arize-phoenix` that `scripts/setup.sh` installs into
//! `.venv/phoenix`, or `$ZIBBY_PHOENIX_VENV`): an LLM observability backend that receives
//! OTLP/HTTP traces at `/v1/traces` and serves them back through its REST API. Started on
//! 127.0.0.1 at free ports (HTTP and gRPC) with its working folder (its SQLite database) in a
//! temporary folder, killed by its pid when [`Phoenix`] is dropped.

use std::path::PathBuf;
use std::process::Command;

use crate::process::{free_port, ServerProcess};

/// Reads a URL of the server with the venv's Python and prints the body.
const READER: &str = r#"
import json, sys, urllib.request
spec = json.load(sys.stdin)
with urllib.request.urlopen(spec["url"], timeout=30) as reply:
    sys.stdout.write(reply.read().decode())
"#;

/// A running Phoenix server.
pub struct Phoenix {
    process: ServerProcess,
    port: u16,
    venv: PathBuf,
    /// Its working folder and log, removed with it; declared after `process` so the server is
    /// ended before its folder goes.
    _dir: tempfile::TempDir,
}

/// The virtual environment Phoenix is in: `$ZIBBY_PHOENIX_VENV`, else the project's
/// `.venv/phoenix`.
pub fn venv() -> PathBuf {
    std::env::var_os("ZIBBY_PHOENIX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/phoenix"))
}

impl Phoenix {
    /// A server with an empty database, its telemetry off.
    pub fn start() -> Phoenix {
        let venv = venv();
        let program = venv.join("bin/phoenix");
        assert!(
            program.is_file(),
            "{} is missing: run scripts/setup.sh (it installs arize-phoenix into .venv/phoenix), or set ZIBBY_PHOENIX_VENV",
            program.display()
        );
        let dir = tempfile::tempdir().expect("a temp folder for Phoenix");
        let (port, grpc_port) = (free_port(), free_port());
        let mut command = Command::new(&program);
        command
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false");
        let mut process = ServerProcess::spawn("phoenix", command, &dir.path().join("phoenix.log"));
        process.wait_for_port(port);
        Phoenix {
            process,
            port,
            venv,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`: the base of its OTLP/HTTP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`)
    /// and of its REST API.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the server printed.
    pub fn log(&self) -> String {
        self.process.log_text()
    }

    /// The spans of the default project in trace `trace_id` (hex), as its REST API lists them
    /// (`GET /v1/projects/default/spans`: `name`, `context.span_id`, `parent_id`, `status_code`,
    /// `status_message`, `attributes`, `events` each).
    pub fn spans(&self, trace_id: &str) -> Vec<serde_json::Value> {
        let url = format!(
            "{}/v1/projects/default/spans?trace_id={trace_id}&limit=1000",
            self.endpoint()
        );
        let text = crate::process::run_python(
            &self.venv.join("bin/python"),
            READER,
            &serde_json::json!({ "url": url }),
            &[],
            &format!("GET {url}"),
        );
        let reply: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}"));
        reply["data"].as_array().cloned().unwrap_or_default()
    }
}
