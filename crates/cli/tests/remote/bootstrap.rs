//! The server binary on the host: uploaded once, found the next time, older builds removed.

use studio_core::remote::ssh::{BuildInfo, Connection, SERVER_DIR};
use test_servers::sshd::Sshd;

use super::{remote_workspace, target, Client};

#[test]
fn the_server_is_uploaded_once_and_older_builds_are_removed() {
    let zstudio = std::path::Path::new(env!("CARGO_BIN_EXE_zstudio"));
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let client = Client::new(sshd.ssh_config());
    let server_dir = sshd.home().join(SERVER_DIR);
    std::fs::create_dir_all(&server_dir).unwrap();
    let older = server_dir.join("zstudio-0.0.1-0123456789abcdef");
    std::fs::write(&older, "an older build").unwrap();

    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    let server = connection.ensure_server(zstudio).unwrap();
    let build = BuildInfo::of_binary(zstudio).unwrap();
    let installed = server_dir.join(build.file_name());
    assert!(server.uploaded);
    assert_eq!(server.program, installed.to_str().unwrap());
    assert_eq!(server.removed, vec![older.to_str().unwrap().to_string()]);
    assert!(!older.exists());
    assert_eq!(std::fs::read(&installed).unwrap(), std::fs::read(zstudio).unwrap());
    let names: Vec<_> = std::fs::read_dir(&server_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}: a temporary upload is left behind");
    // The build on the host says it is the same one.
    let said = connection.run(&[&server.program, "build-info"], None, 4096).unwrap();
    let remote: BuildInfo = serde_json::from_slice(&said).unwrap();
    assert_eq!(remote, build);
    connection.close().unwrap();

    let again = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    let server = again.ensure_server(zstudio).unwrap();
    assert!(!server.uploaded, "the second connection uploaded again");
    assert_eq!(server.program, installed.to_str().unwrap());
}
