//! The Azure Blob and Cloud Storage emulators, for the `az://` and `gs://` sources: Azurite's
//! blob service (`azurite-blob`, from the npm package that `scripts/setup.sh` installs into
//! `.venv/azurite`, or `$ZIBBY_AZURITE_DIR`) and gcp-storage-emulator (installed into the moto
//! venv, [`crate::moto::venv`]), each on 127.0.0.1 at a free port with its data in a temporary
//! folder, killed by its pid when dropped. Uploads go through the moto venv's Python
//! (`blob_upload.py`: azure-storage-blob for Azurite, the JSON upload API for Cloud Storage).

use std::path::PathBuf;
use std::process::Command;

use crate::process::{free_port, ServerProcess};

/// The uploader run with the venv's Python.
const UPLOADER: &str = include_str!("blob_upload.py");

/// Azurite's well-known development account and key (public: Azurite's documentation gives
/// them; they open nothing but an emulator).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Which emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Azurite,
    CloudStorage,
}

/// A running emulator.
pub struct Emulator {
    process: ServerProcess,
    kind: Kind,
    port: u16,
    /// Its data and log, removed with it; declared after `process` so the server is ended first.
    _dir: tempfile::TempDir,
}

/// Where Azurite is installed: `$ZIBBY_AZURITE_DIR`, else the project's `.venv/azurite`.
pub fn azurite_dir() -> PathBuf {
    std::env::var_os("ZIBBY_AZURITE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/azurite"))
}

impl Emulator {
    /// Starts the emulator of `kind`; panics naming what installs it when it is missing.
    pub fn start(kind: Kind) -> Emulator {
        let dir = tempfile::tempdir().expect("a temp folder for the emulator");
        let port = free_port();
        let (name, mut command) = match kind {
            Kind::Azurite => {
                let program = azurite_dir().join("node_modules/.bin/azurite-blob");
                assert!(
                    program.is_file(),
                    "{} is missing: run scripts/setup.sh (it installs azurite into .venv/azurite), or set ZIBBY_AZURITE_DIR",
                    program.display()
                );
                let mut command = Command::new(program);
                command
                    .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--silent"])
                    .args([
                        "--skipApiVersionCheck",
                        "--disableProductStyleUrl",
                        "--disableTelemetry",
                        "--location",
                    ])
                    .arg(dir.path().join("data"));
                ("azurite-blob", command)
            }
            Kind::CloudStorage => {
                let program = crate::moto::venv().join("bin/gcp-storage-emulator");
                assert!(
                    program.is_file(),
                    "{} is missing: run scripts/setup.sh (it installs gcp-storage-emulator into .venv/moto), or set ZIBBY_MOTO_VENV",
                    program.display()
                );
                let mut command = Command::new(program);
                command.args([
                    "start",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--in-memory",
                ]);
                ("gcp-storage-emulator", command)
            }
        };
        // Never a user's credentials or emulator settings.
        command
            .env_remove("AZURE_STORAGE_CONNECTION_STRING")
            .env_remove("STORAGE_EMULATOR_HOST");
        let mut process = ServerProcess::spawn(name, command, &dir.path().join("emulator.log"));
        process.wait_for_port(port);
        Emulator {
            process,
            kind,
            port,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the server printed.
    pub fn log(&self) -> String {
        self.process.log_text()
    }

    /// The variables that point the studio (and any client of the provider's) at this emulator:
    /// Azure's connection string with the development account; Google's emulator host.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self.kind {
            Kind::Azurite => vec![("AZURE_STORAGE_CONNECTION_STRING", self.connection_string(AZURITE_KEY))],
            Kind::CloudStorage => vec![("STORAGE_EMULATOR_HOST", format!("127.0.0.1:{}", self.port))],
        }
    }

    /// A connection string of the development account with `key` as its key.
    pub fn connection_string(&self, key: &str) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={key};BlobEndpoint={}/{AZURITE_ACCOUNT};",
            self.endpoint()
        )
    }

    /// Uploads `ops` (`blob_upload.py`'s) into `container`, creating it when missing; panics with
    /// the uploader's error output when it fails.
    pub fn upload(&self, container: &str, ops: serde_json::Value) {
        let spec = match self.kind {
            Kind::Azurite => serde_json::json!({
                "kind": "azure", "connection": self.connection_string(AZURITE_KEY), "container": container, "ops": ops,
            }),
            Kind::CloudStorage => serde_json::json!({
                "kind": "gcs", "endpoint": self.endpoint(), "container": container, "ops": ops,
            }),
        };
        crate::process::run_python(
            &crate::moto::venv().join("bin/python"),
            UPLOADER,
            &spec,
            &[],
            &format!("the upload to {container}"),
        );
    }
}
