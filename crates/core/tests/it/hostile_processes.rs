//! Stop against a hostile system: process ids reused by strangers, children that leave the
//! run's process group, keepers that die. Real processes, real folders, a real SQLite store.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use studio_core::runner::{RunEvent, RunEvents};
use studio_core::{Error, Status};

use crate::harness::{self, process_running, request, wait_for, Bench};

fn bench() -> Bench {
    bench_with(false)
}

/// With `kept`, runs go through the run keeper (`zstudio keep`), as `zstudio run` starts them.
fn bench_with(kept: bool) -> Bench {
    harness::bench("studio.sqlite", kept)
}

fn wait_finished(events: &RunEvents, run_id: &str) {
    wait_for(
        events,
        |event| matches!(event, RunEvent::RunFinished { run_id: id, .. } if id == run_id),
    );
}

/// A process that has nothing to do with any run, in a process group of its own; reaped as soon
/// as it ends (so that its id does not linger as a zombie's).
struct Stranger {
    pid: u32,
    ended: std::thread::JoinHandle<std::process::ExitStatus>,
}

fn stranger() -> Stranger {
    let mut child = Command::new("sleep").arg("600").process_group(0).spawn().unwrap();
    Stranger {
        pid: child.id(),
        ended: std::thread::spawn(move || child.wait().unwrap()),
    }
}

impl Stranger {
    /// Whether it is still alive a moment after a signal could have reached it; then ends it.
    fn survived(self) -> bool {
        let deadline = Instant::now() + Duration::from_millis(1000);
        while Instant::now() < deadline && !self.ended.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let alive = !self.ended.is_finished();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        self.ended.join().unwrap();
        alive
    }
}

fn start_time_of(pid: u32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// The record of an ended run made to look like a live run of a dead studio whose process
/// group id is now held by `stranger` (started at another time than the record says).
fn forge_reused_id(db: &std::path::Path, run_id: &str, stranger: u32) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let changed = conn
        .execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = NULL, pid = ?2, pgid = ?2,
             pgid_start_time = ?3, boot_id = (SELECT boot_id FROM runs WHERE id = ?1) WHERE id = ?1",
            rusqlite::params![run_id, stranger, start_time_of(stranger) - 1],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

#[test]
fn stop_never_signals_a_process_that_took_over_the_runs_process_group_id() {
    let b = bench();
    let run = b.supervisor.start(request(&b, &["--nodes", "a:10"])).unwrap();
    wait_finished(&b.events, &run.run_id);
    let store = b.supervisor.store();
    let recorded = store.run(&run.run_id).unwrap();
    assert_eq!(recorded.status, Status::Success);

    let stranger = stranger();
    let stranger_pid = stranger.pid;
    forge_reused_id(&b.db, &run.run_id, stranger.pid);
    let forged = store.run(&run.run_id).unwrap();
    assert_eq!(forged.status, Status::Running);
    assert_eq!(forged.process_group, Some(i64::from(stranger_pid)));

    // `zstudio stop --force` is this call.
    let stopped = studio_core::runner::stop_elsewhere_and_wait(
        store,
        &run.run_id,
        &run.session_path,
        true,
        Duration::from_secs(1),
        |_| {},
    );
    assert!(
        stranger.survived(),
        "the stranger holding the run's old process group id was signalled"
    );
    match stopped {
        Err(Error::RunGone { id, pid }) => {
            assert_eq!((id.as_str(), pid), (run.run_id.as_str(), i64::from(stranger_pid)));
        }
        other => panic!("a forced stop of a run whose processes are gone: {other:?}"),
    }
    let message = Error::RunGone {
        id: run.run_id.clone(),
        pid: 1,
    }
    .to_string();
    assert!(
        message.contains("not running any more") && message.contains(&run.run_id),
        "{message}"
    );
    // Not running any more, as the store has it too (reconciled, never `running` again).
    let after = store.run(&run.run_id).unwrap();
    assert_eq!(after.status, Status::Interrupted, "{after:?}");
    assert!(
        !run.session_path.join(".zibby-stop").exists(),
        "no stop file for a run that is gone"
    );
}

#[test]
fn recovery_does_not_take_a_stranger_for_a_runs_live_process_group() {
    let b = bench();
    let run = b.supervisor.start(request(&b, &["--nodes", "a:10"])).unwrap();
    wait_finished(&b.events, &run.run_id);
    let stranger = stranger();
    forge_reused_id(&b.db, &run.run_id, stranger.pid);
    let recovered = studio_core::runner::reconcile(b.supervisor.store(), std::time::SystemTime::now()).unwrap();
    assert!(stranger.survived());
    let status = recovered.iter().find(|r| r.run_id == run.run_id).map(|r| r.status);
    assert_eq!(
        status,
        Some(Status::Interrupted),
        "a group led by a stranger is not the run's: {recovered:?}"
    );
}

#[test]
fn a_stranger_is_not_signalled_even_by_a_graceful_stop_past_its_grace() {
    let b = bench();
    let run = b.supervisor.start(request(&b, &["--nodes", "a:10"])).unwrap();
    wait_finished(&b.events, &run.run_id);
    let stranger = stranger();
    forge_reused_id(&b.db, &run.run_id, stranger.pid);
    let stopped = studio_core::runner::stop_elsewhere_and_wait(
        b.supervisor.store(),
        &run.run_id,
        &run.session_path,
        false,
        Duration::ZERO,
        |_| {},
    );
    assert!(stranger.survived(), "signalled past the grace period");
    assert!(matches!(stopped, Err(Error::RunGone { .. })), "{stopped:?}");
}

/// The pid an agent printed after `prefix` (`│ setsid grandchild pid N`).
fn printed_pid(events: &RunEvents, run_id: &str, prefix: &str) -> u32 {
    loop {
        let event = events.recv_timeout(Duration::from_secs(30)).expect("the line came");
        if let RunEvent::Output { run_id: id, line, .. } = &event {
            if id == run_id {
                if let Some(pid) = line.strip_prefix(prefix) {
                    return pid.trim().parse().unwrap();
                }
            }
        }
    }
}

/// Waits (a while) for a process to be gone; whether it is.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let gone = !process_running(pid);
    if !gone {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    gone
}

fn the_setsid_child_of_a_stopped_run_is_gone(kept: bool, force: bool) {
    let b = bench_with(kept);
    // Graceful: the agent honours the stop file after its first node; forced: it never does.
    let args: &[&str] = if force {
        &["--nodes", "tools:20000", "--ignore-stop", "--spawn-setsid-grandchild"]
    } else {
        &["--nodes", "tools:600,more:20000", "--spawn-setsid-grandchild"]
    };
    let run = b.supervisor.start(request(&b, args)).unwrap();
    let child = printed_pid(&b.events, &run.run_id, "│ setsid grandchild pid ");
    assert!(process_running(child));
    let session_of = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .nth(3)
            .unwrap()
            .to_owned()
    };
    // The agent printed the pid as it started it: `setsid` may not have run yet.
    let deadline = Instant::now() + Duration::from_secs(10);
    while session_of(child) != child.to_string() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(session_of(child), child.to_string(), "the child left the run's session");
    b.supervisor.stop(&run.run_id, force).unwrap();
    wait_finished(&b.events, &run.run_id);
    let status = b.supervisor.store().run(&run.run_id).unwrap().status;
    assert_eq!(status, Status::Cancelled);
    assert!(
        gone(child),
        "the setsid child of a {} run survived a {} stop",
        if kept { "kept" } else { "direct" },
        if force { "forced" } else { "graceful" }
    );
}

#[test]
fn a_forced_stop_ends_a_child_that_left_the_runs_group_with_setsid() {
    the_setsid_child_of_a_stopped_run_is_gone(true, true);
    the_setsid_child_of_a_stopped_run_is_gone(false, true);
}

#[test]
fn a_graceful_stop_ends_a_child_that_left_the_runs_group_with_setsid() {
    the_setsid_child_of_a_stopped_run_is_gone(true, false);
    the_setsid_child_of_a_stopped_run_is_gone(false, false);
}

#[test]
fn the_agent_and_what_is_left_of_its_group_end_when_its_keeper_is_killed() {
    let b = bench_with(true);
    let run = b
        .supervisor
        .start(request(
            &b,
            &["--nodes", "long:20000", "--ignore-stop", "--spawn-grandchild"],
        ))
        .unwrap();
    let keeper = run.pid.unwrap();
    // A child of the agent in the run's group, that ignores SIGTERM.
    let grandchild = printed_pid(&b.events, &run.run_id, "│ grandchild pid ");
    let agents: Vec<u32> = studio_core::process::descendants(keeper)
        .into_iter()
        .filter(|pid| *pid != grandchild)
        .collect();
    assert_eq!(agents.len(), 1, "{agents:?}");
    let agent = agents[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(keeper as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_finished(&b.events, &run.run_id);
    assert!(gone(agent), "the agent ran on after its keeper was killed");
    assert!(gone(grandchild), "the agent's child ran on after the keeper was killed");
    let recorded = b.supervisor.store().run(&run.run_id).unwrap();
    assert_eq!(recorded.status, Status::Interrupted);
}

/// A kept run whose agent starts every kind of child that could outlive it (one in its group
/// that ignores SIGTERM, one that left with `setsid`, a double-forked daemon in a session of its
/// own): its keeper is killed with SIGKILL, while the studio follows it or after it was left
/// running (then `zstudio stop` is asked, as a user would). Every process of the run must end.
fn every_process_ends_when_the_keeper_is_killed(detached: bool) {
    let b = bench_with(true);
    let run = b
        .supervisor
        .start(request(
            &b,
            &[
                "--nodes",
                "long:30000",
                "--ignore-stop",
                "--spawn-grandchild",
                "--spawn-setsid-grandchild",
                "--spawn-daemon",
            ],
        ))
        .unwrap();
    let keeper = run.pid.unwrap();
    let mut printed = vec![
        printed_pid(&b.events, &run.run_id, "│ grandchild pid "),
        printed_pid(&b.events, &run.run_id, "│ setsid grandchild pid "),
        printed_pid(&b.events, &run.run_id, "│ daemon pid "),
    ];
    // The daemon's shell has ended: everything the run started is below its keeper now.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut processes = studio_core::process::descendants(keeper);
    while !printed.iter().all(|pid| processes.contains(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        processes = studio_core::process::descendants(keeper);
    }
    printed.retain(|pid| !processes.contains(pid));
    assert!(printed.is_empty(), "not below the keeper: {printed:?} ({processes:?})");
    assert!(processes.len() >= 4, "the agent and its three children: {processes:?}");
    if detached {
        assert_eq!(b.supervisor.detach(), vec![run.run_id.clone()]);
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(keeper as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    if detached {
        // `zstudio stop` of a run whose keeper is gone: it ends what is left of the run.
        let stopped = studio_core::runner::stop_elsewhere_and_wait(
            b.supervisor.store(),
            &run.run_id,
            &run.session_path,
            false,
            Duration::from_secs(1),
            |_| {},
        );
        assert!(matches!(&stopped, Ok(_) | Err(Error::RunGone { .. })), "{stopped:?}");
    } else {
        wait_finished(&b.events, &run.run_id);
    }
    let survivors: Vec<u32> = processes.into_iter().filter(|pid| !gone(*pid)).collect();
    assert!(
        survivors.is_empty(),
        "{} of the run's processes survived its keeper's SIGKILL ({}): {survivors:?}",
        survivors.len(),
        if detached { "detached, then stopped" } else { "followed" }
    );
    let recorded = b.supervisor.store().run(&run.run_id).unwrap();
    // A stop that found the killed keeper not yet reaped was asked in time: cancelled.
    let expected: &[Status] = if detached {
        &[Status::Interrupted, Status::Cancelled]
    } else {
        &[Status::Interrupted]
    };
    assert!(expected.contains(&recorded.status), "{recorded:?}");
}

#[test]
fn every_process_of_a_followed_run_ends_when_its_keeper_is_killed() {
    every_process_ends_when_the_keeper_is_killed(false);
}

#[test]
fn every_process_of_a_detached_run_ends_when_its_keeper_is_killed_and_it_is_stopped() {
    every_process_ends_when_the_keeper_is_killed(true);
}

#[test]
fn a_run_whose_owner_id_was_taken_by_a_stranger_is_not_kept_running() {
    let b = bench();
    let run = b.supervisor.start(request(&b, &["--nodes", "a:10"])).unwrap();
    wait_finished(&b.events, &run.run_id);
    // The run's studio died with the run still `running`, and a stranger got its process id.
    let stranger = stranger();
    let conn = rusqlite::Connection::open(&b.db).unwrap();
    let changed = conn
        .execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = ?2 WHERE id = ?1",
            rusqlite::params![run.run_id, stranger.pid],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let recovered = studio_core::runner::reconcile(b.supervisor.store(), std::time::SystemTime::now()).unwrap();
    let status = b.supervisor.store().run(&run.run_id).unwrap().status;
    assert!(stranger.survived());
    assert_eq!(
        status,
        Status::Interrupted,
        "a stranger holding the owner's id kept a dead run running: {recovered:?}"
    );
}

/// A run whose `.zibby-stop` is a link planted by the workspace, stopped gracefully by the studio
/// that follows it (`elsewhere`: by another studio process, as `zstudio stop` does): the stop is
/// not refused, and past its grace the run is signalled.
fn a_graceful_stop_escalates_past_a_stop_file_that_is_a_link(elsewhere: bool) {
    let b = bench();
    let mut asked = request(&b, &["--nodes", "a:30000", "--ignore-stop"]);
    asked.grace = Duration::from_millis(500);
    let run = b.supervisor.start(asked).unwrap();
    let elsewhere_target = b.dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&elsewhere_target, run.session_path.join(".zibby-stop")).unwrap();
    let started = Instant::now();
    if elsewhere {
        let ended = studio_core::runner::stop_elsewhere_and_wait(
            b.supervisor.store(),
            &run.run_id,
            &run.session_path,
            false,
            Duration::from_millis(500),
            |_| {},
        )
        .expect("a graceful stop past a linked stop file");
        assert_ne!(ended.status, Status::Running);
    } else {
        b.supervisor
            .stop(&run.run_id, false)
            .expect("a graceful stop past a linked stop file");
    }
    wait_finished(&b.events, &run.run_id);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(b.supervisor.store().run(&run.run_id).unwrap().status, Status::Cancelled);
    assert!(!elsewhere_target.exists(), "written through the link");
}

#[test]
fn a_graceful_stop_escalates_when_a_stop_file_is_a_link() {
    a_graceful_stop_escalates_past_a_stop_file_that_is_a_link(false);
    a_graceful_stop_escalates_past_a_stop_file_that_is_a_link(true);
}
