//! Files moved to and from a remote workspace over the loopback sshd (`test_servers::sshd`),
//! issue 42, point 5 (docs/benchmarks.md, "Files to and from a host"):
//!
//! - upload: the first `zstudio --remote … sessions --json` on a host without the build (its
//!   `~/.zibby-studio/server` removed first), the server uploaded, then started;
//! - export: `zstudio --remote … export ID -o FILE` of a session of many MB (its three outputs
//!   of `BENCH_OUTPUT_MB` each, default 12, lines of pseudo-random hex);
//! - import: `zstudio --remote … import FILE --as-new` of that bundle;
//! - the upload over a slow link: the first command again, through a link that lets
//!   `BENCH_LINK_MB` MB a second through (default 10; `test_servers::throttle`), with the bytes
//!   that crossed it.
//!
//! Each command runs with `--keep-connection 0` and no kept server (each logs in, as a first
//! command does). `BENCH_ZSTUDIO` names other `zstudio` binaries to measure beside this build's
//! (colon-separated: an earlier build swapped in under the same bench), taken in turns in each
//! round; each figure is the median of `BENCH_ROUNDS` (default 5). Each build has its own store
//! here and on the host (an earlier build refuses a store of a newer schema).
//! `cargo bench -p zstudio --bench remote_transfer`.

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use test_servers::sshd::Sshd;

/// Runs `binary` with `args` against the host of `config`; how long it took, or `None` when it
/// failed (its words printed: an earlier build's import of a bundle over 768 KiB never answers).
fn zstudio(binary: &Path, args: &[&str], data: &Path, config: &Path) -> Option<Duration> {
    let started = Instant::now();
    let output = Command::new(binary)
        .args(args)
        .env("ZIBBY_STUDIO_KEEP_SERVER", "0")
        .env_remove("ZIBBY_STUDIO_DB")
        .env("ZIBBY_STUDIO_SSH_CONFIG", config)
        .env("ZIBBY_STUDIO_KEEP_CONNECTION", "0")
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        println!(
            "  {} {}: failed after {took:.1?}: {}",
            binary.display(),
            args[2],
            said.trim()
        );
        return None;
    }
    Some(took)
}

/// `count` lines of pseudo-random hex (deflate halves them, as it does a real log's noise).
fn noisy_output(seed: u64, megabytes: usize) -> String {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut text = String::with_capacity(megabytes << 20);
    while text.len() < megabytes << 20 {
        for _ in 0..8 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push_str(&format!("{:016x}", state));
        }
        text.push('\n');
    }
    text
}

/// The median in ms; NaN when every run failed.
fn main() {
    if common::names_only() {
        return;
    }
    let runtime_home = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", runtime_home.path());
    let rounds: usize = common::size_from_env("BENCH_ROUNDS", 5);
    let megabytes: usize = common::size_from_env("BENCH_OUTPUT_MB", 12);
    let mut binaries = vec![PathBuf::from(env!("CARGO_BIN_EXE_zstudio"))];
    if let Ok(others) = std::env::var("BENCH_ZSTUDIO") {
        binaries.extend(others.split(':').filter(|p| !p.is_empty()).map(PathBuf::from));
    }
    let sshd = Sshd::start();
    let workspace = sshd.home().join("ws");
    common::generate_sessions_with(&workspace, 1, |node, _| noisy_output(node.len() as u64, megabytes));
    let session = "1795000000000_0000";
    let remote = format!("{}:{}", sshd.alias(), workspace.display());
    let config = sshd.ssh_config();
    let locals: Vec<_> = binaries.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let mut host_stores = HostStores::new(sshd.home());
    let server_dir = sshd.home().join(".zibby-studio/server");
    let list = ["--remote", remote.as_str(), "sessions", "--json"];
    let mut figures: Vec<[Vec<Duration>; 3]> = binaries.iter().map(|_| Default::default()).collect();
    let mut bundle_bytes = 0;
    let mut binary_bytes = Vec::new();
    for binary in &binaries {
        binary_bytes.push(std::fs::metadata(binary).unwrap().len());
    }
    for round in 0..rounds {
        for (index, (binary, figures)) in binaries.iter().zip(&mut figures).enumerate() {
            let _ = std::fs::remove_dir_all(&server_dir);
            host_stores.use_for(index);
            let local = &locals[index];
            figures[0].extend(zstudio(binary, &list, local.path(), config));
            assert!(server_dir.is_dir(), "the server was uploaded");
            let bundle = local.path().join("bundle.zip");
            let _ = std::fs::remove_file(&bundle);
            let out = bundle.to_str().unwrap();
            let export = ["--remote", remote.as_str(), "export", session, "-o", out];
            figures[1].extend(zstudio(binary, &export, local.path(), config));
            bundle_bytes = std::fs::metadata(&bundle).unwrap().len();
            let import = ["--remote", remote.as_str(), "import", out, "--as-new"];
            // A build whose import failed (an earlier one waits 60 s for an answer) is not tried again.
            if figures[2].len() == round {
                figures[2].extend(zstudio(binary, &import, local.path(), config));
            }
        }
    }
    let slow = slow_link(&binaries, &sshd, &remote, (&locals, &mut host_stores), rounds);
    println!("load {}", std::fs::read_to_string("/proc/loadavg").unwrap().trim());
    println!(
        "median of {rounds}; outputs 3 x {megabytes} MB, bundle {:.1} MB:",
        bundle_bytes as f64 / 1e6
    );
    let base = [
        common::median_ms(figures[0][0].clone()),
        common::median_ms(figures[0][1].clone()),
        common::median_ms(figures[0][2].clone()),
    ];
    let slow_base = common::median_ms(slow[0].0.clone());
    for (((binary, figures), bytes), (slow, crossed)) in binaries.iter().zip(&figures).zip(&binary_bytes).zip(&slow) {
        let [upload, export, import] = [0, 1, 2].map(|i| common::median_ms(figures[i].clone()));
        let slow_upload = common::median_ms(slow.clone());
        println!(
            "  {} ({:.1} MB): first command with the upload {upload:.0} ms ({:.2}x), export {export:.0} ms ({:.2}x), \
             import {import:.0} ms ({:.2}x); over the slow link {slow_upload:.0} ms ({:.2}x), {:.1} MB crossed it",
            binary.display(),
            *bytes as f64 / 1e6,
            upload / base[0],
            export / base[1],
            import / base[2],
            slow_upload / slow_base,
            *crossed as f64 / 1e6
        );
        println!(
            "    first command by round {} ms; over the slow link {} ms",
            by_round(&figures[0]),
            by_round(slow)
        );
    }
}

/// Each round's time in ms, in order: the spread behind a median.
fn by_round(times: &[Duration]) -> String {
    let ms: Vec<String> = times.iter().map(|t| format!("{:.0}", t.as_secs_f64() * 1e3)).collect();
    ms.join(", ")
}

/// The first command of each of `binaries` on a host without the build through a link of
/// `BENCH_LINK_MB` MB a second, `rounds` times in turns: each one's times and the bytes the last
/// of its uploads sent through the link.
fn slow_link(
    binaries: &[PathBuf],
    sshd: &Sshd,
    remote: &str,
    (locals, host_stores): (&[tempfile::TempDir], &mut HostStores),
    rounds: usize,
) -> Vec<(Vec<Duration>, u64)> {
    let rate: u64 = common::size_from_env("BENCH_LINK_MB", 10) as u64;
    let link = test_servers::throttle::Throttle::start(sshd.port(), rate * 1_000_000);
    sshd.trust_port(link.port());
    let mut entry = sshd.host_entry();
    entry.port = link.port();
    let config = sshd.write_ssh_config("slow_config", &[entry]);
    let server_dir = sshd.home().join(".zibby-studio/server");
    let list = ["--remote", remote, "sessions", "--json"];
    let mut figures: Vec<(Vec<Duration>, u64)> = binaries.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (index, (binary, (times, crossed))) in binaries.iter().zip(&mut figures).enumerate() {
            let _ = std::fs::remove_dir_all(&server_dir);
            host_stores.use_for(index);
            let before = link.bytes_sent();
            times.extend(zstudio(binary, &list, locals[index].path(), &config));
            *crossed = link.bytes_sent() - before;
            assert!(server_dir.is_dir(), "the server was uploaded");
        }
    }
    figures
}

/// Each build's own store on the host (its `XDG_DATA_HOME`, `HOME/data`): the one in place moved
/// aside to `data-N` and the next build's put in its place before its turn, as builds of
/// different schemas cannot share one.
struct HostStores {
    home: PathBuf,
    current: Option<usize>,
}

impl HostStores {
    fn new(home: PathBuf) -> HostStores {
        HostStores { home, current: None }
    }

    fn use_for(&mut self, build: usize) {
        let data = self.home.join("data");
        match self.current.replace(build) {
            Some(previous) if previous == build => return,
            Some(previous) if data.exists() => {
                std::fs::rename(&data, self.home.join(format!("data-{previous}"))).unwrap()
            }
            _ => {}
        }
        let kept = self.home.join(format!("data-{build}"));
        if kept.exists() {
            std::fs::rename(kept, &data).unwrap();
        }
    }
}
