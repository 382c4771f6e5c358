//! A sequence of `zstudio --remote … sessions --json` commands over the loopback sshd
//! (`test_servers::sshd`), against `zstudio sessions --json` on the same folder here, in the same
//! run (docs/benchmarks.md, "Remote commands in a row"; issue 41, point 7):
//!
//! - local: `zstudio sessions --json` as a process, the store current;
//! - `--keep-connection 0`: every command pays ssh's handshake (the behaviour before);
//! - kept (`--keep-connection 60`, the default): the first command of a sequence, and the second
//!   (through the workspace's kept server: reached by a forward of the kept master on a host that
//!   forwards, `Sshd::start_forwarding`; through the start script's relay on one that refuses,
//!   `Sshd::start`);
//!   and the second without it (`ZIBBY_STUDIO_KEEP_SERVER=0`: a server started by the command's
//!   start script, as before);
//! - one round trip: `ssh -S <kept socket> host true` through the kept master.
//!
//! Before each first command the kept masters and the kept servers are ended. The commands use a
//! runtime folder of their own (`XDG_RUNTIME_DIR`).
//!
//! Each figure is the median of `BENCH_ROUNDS` (default 9), the kinds taken in turns.
//! `cargo bench -p zstudio --bench remote_commands` (`BENCH_SESSIONS`, default 1,000).

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use test_servers::sshd::Sshd;

fn zstudio(args: &[&str], data: &Path, config: &Path, keep: &str) -> Duration {
    zstudio_with(args, data, config, keep, "1")
}

/// [`zstudio`] with `ZIBBY_STUDIO_KEEP_SERVER` (`0`: a server started for each command).
fn zstudio_with(args: &[&str], data: &Path, config: &Path, keep: &str, keep_server: &str) -> Duration {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(args)
        .env("ZIBBY_STUDIO_KEEP_SERVER", keep_server)
        .env_remove("ZIBBY_STUDIO_DB")
        .env("ZIBBY_STUDIO_SSH_CONFIG", config)
        .env("ZIBBY_STUDIO_KEEP_CONNECTION", keep)
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.len() > 100, "a listing");
    took
}

/// Ends the kept servers serving under `home` (the host's): the next first command starts one.
fn end_kept_servers(home: &Path) {
    let needle = format!("--listen {}", home.join(".zibby-studio/run").display());
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&line).replace('\0', " ").contains(&needle) {
            let _ = Command::new("kill").arg(entry.file_name()).status();
        }
    }
}

/// Ends every kept master of `config` (`-O exit`): the next command starts one.
fn end_kept_masters(runtime: &Path, config: &Path, alias: &str) {
    for entry in std::fs::read_dir(runtime).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("kept-") && name.ends_with(".sock") {
            let _ = Command::new("ssh")
                .arg("-F")
                .arg(config)
                .arg("-S")
                .arg(entry.path())
                .args(["-O", "exit", alias])
                .stderr(Stdio::null())
                .status();
        }
    }
    std::thread::sleep(Duration::from_millis(100));
}

fn main() {
    if common::names_only() {
        return;
    }
    // A runtime folder of its own, as a user's holds a few files (the machine's shared one holds
    // what every test run left, which each command's sweep reads).
    let runtime_home = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", runtime_home.path());
    let sessions: usize = common::size_from_env("BENCH_SESSIONS", 1_000);
    let rounds: usize = common::size_from_env("BENCH_ROUNDS", 9);
    let sshd = Sshd::start_forwarding();
    let refusing = Sshd::start();
    let workspace = sshd.home().join("ws");
    common::generate_sessions(&workspace, sessions);
    let refusing_ws = refusing.home().join("ws");
    common::generate_sessions(&refusing_ws, sessions);
    let ws = workspace.to_str().unwrap();
    let remote = format!("{}:{ws}", sshd.alias());
    let refusing_remote = format!("{}:{}", refusing.alias(), refusing_ws.display());
    let refusing_args = ["--remote", refusing_remote.as_str(), "sessions", "--json"];
    let config = sshd.ssh_config();
    let local_data = tempfile::tempdir().unwrap();
    let host_data = sshd.home().join("data");
    let runtime = studio_core::remote::ssh::runtime_dir().unwrap();
    let local_args = ["sessions", "-w", ws, "--json"];
    let remote_args = ["--remote", remote.as_str(), "sessions", "--json"];
    // The stores made current, the server uploaded, once.
    zstudio(&local_args, &host_data, config, "0");
    zstudio(&remote_args, local_data.path(), config, "0");
    zstudio(&refusing_args, local_data.path(), refusing.ssh_config(), "0");
    let (mut local, mut closed, mut first, mut second, mut trip) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut relayed, mut unkept) = (vec![], vec![]);
    for _ in 0..rounds {
        local.push(zstudio(&local_args, &host_data, config, "0"));
        closed.push(zstudio(&remote_args, local_data.path(), config, "0"));
        end_kept_masters(&runtime, config, sshd.alias());
        end_kept_servers(&sshd.home());
        first.push(zstudio(&remote_args, local_data.path(), config, "60"));
        second.push(zstudio(&remote_args, local_data.path(), config, "60"));
        // Before the kept server: the connection kept, a server started by the command.
        unkept.push(zstudio_with(&remote_args, local_data.path(), config, "60", "0"));
        // A host refusing the forward: the command after the one that learnt it.
        zstudio(&refusing_args, local_data.path(), refusing.ssh_config(), "60");
        zstudio(&refusing_args, local_data.path(), refusing.ssh_config(), "60");
        relayed.push(zstudio(&refusing_args, local_data.path(), refusing.ssh_config(), "60"));
        let socket = std::fs::read_dir(&runtime)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "sock") && p.to_string_lossy().contains("kept-"))
            .expect("a kept master");
        let started = Instant::now();
        let status = Command::new("ssh")
            .arg("-F")
            .arg(config)
            .arg("-S")
            .arg(&socket)
            .args(["-o", "ControlMaster=no", sshd.alias(), "true"])
            .status()
            .unwrap();
        trip.push(started.elapsed());
        assert!(status.success());
    }
    end_kept_masters(&runtime, config, sshd.alias());
    end_kept_masters(&runtime, refusing.ssh_config(), refusing.alias());
    end_kept_servers(&sshd.home());
    end_kept_servers(&refusing.home());
    let (local, closed, first, second, trip, relayed, unkept) = (
        common::median_ms(local),
        common::median_ms(closed),
        common::median_ms(first),
        common::median_ms(second),
        common::median_ms(trip),
        common::median_ms(relayed),
        common::median_ms(unkept),
    );
    println!("load {}", std::fs::read_to_string("/proc/loadavg").unwrap().trim());
    println!("{sessions} sessions, median of {rounds}:");
    println!("  local `sessions --json`:                    {local:.0} ms");
    println!(
        "  --remote, --keep-connection 0 (each):       {closed:.0} ms ({:.2}x local)",
        closed / local
    );
    println!("  --remote, kept: first command:              {first:.0} ms");
    println!(
        "  --remote, kept: second command:             {second:.0} ms ({:.2}x local)",
        second / local
    );
    println!(
        "  the same, no kept server (before):          {unkept:.0} ms ({:.2}x local)",
        unkept / local
    );
    println!(
        "  the same, a host refusing the forward:      {relayed:.0} ms ({:.2}x local)",
        relayed / local
    );
    println!("  one round trip (ssh `true` through it):     {trip:.0} ms");
    println!(
        "  target 1.5x local + one round trip:         {:.0} ms ({})",
        1.5 * local + trip,
        if second <= 1.5 * local + trip { "met" } else { "not met" }
    );
}
