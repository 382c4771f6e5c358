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

/// The test agent (`tests/agent`), built by `cargo test --workspace` next to this test binary.
pub fn agent_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("zibby-test-agent");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p zibby-test-agent` first)",
        path.display()
    );
    path
}

/// `zstudio` (the run keeper), built by `cargo build -p zstudio` next to this test binary.
pub fn keeper_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("zstudio");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p zstudio` first",
        path.display()
    );
    path
}

/// Whether a process still runs (a zombie waiting for its reaper does not).
pub fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Processes of a process group that still run (zombies excluded).
pub fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        // After the command: state, ppid, pgrp.
        if fields.len() > 2 && fields[2] == group.to_string() && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}
