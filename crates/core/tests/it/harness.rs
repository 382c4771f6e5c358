//! Small helpers shared by the integration tests.

use std::path::PathBuf;

/// The repository's copy of the shared engine captures (`tests/fixtures/zibby-captures`).
pub fn captures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zibby-captures")
}

pub fn capture(name: &str) -> PathBuf {
    let dir = captures_dir().join(name);
    assert!(dir.is_dir(), "missing capture {}", dir.display());
    dir
}

/// The exit status a capture recorded (`exit_code.txt`, first word).
pub fn capture_exit_status(dir: &std::path::Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("exit_code.txt")).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// Copies a folder tree (the tests never write into the fixtures).
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
