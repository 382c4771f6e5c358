//! What the CLI's test binaries share: where the captures and the test agent are.

use std::path::PathBuf;

/// The shared captures of real engine runs, as copied into the repo.
pub fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zibby-captures")
}

/// The test agent (`tests/agent`), built by `cargo test --workspace` next to this binary.
pub fn agent_binary() -> String {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("zibby-test-agent");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test --workspace`",
        path.display()
    );
    path.to_string_lossy().into_owned()
}
