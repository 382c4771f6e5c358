//! Events to the window: the supervisor's run events (`run-event`), and the watcher's session
//! changes (`sessions-changed`) and agents file changes (`agents-changed`); a remote workspace's
//! the same way ([`remote_sinks`]), and its lost link (`remote-status`).

use std::time::Duration;

use studio_core::runner::{RunEvent, RunEvents};
use studio_core::watcher::{Change, ChangeSink};
use tauri::{AppHandle, Emitter};

/// The Tauri event every [`RunEvent`] but `output` is sent as (its payload: the event, tagged by
/// `type`).
pub const RUN_EVENT: &str = "run-event";

/// Sends each event to the window until the supervisor is gone. Output lines stay in the store:
/// the window asks for them when it shows them. A run that finishes, or whose budget is 80 %
/// spent, while the window is not focused is also a desktop notification.
pub fn forward(events: RunEvents, app: AppHandle) {
    let mut sessions = RunSessions::new();
    for event in events.iter().filter(|event| !matches!(event, RunEvent::Output { .. })) {
        send_run_event(&app, &event, &mut sessions);
    }
}

/// The session of each run heard starting, by run id: what a notification names.
type RunSessions = std::collections::HashMap<String, String>;

/// One run event (not an output line) to the window; a finished run and a budget's warning also
/// as a notification.
fn send_run_event(app: &AppHandle, event: &RunEvent, sessions: &mut RunSessions) {
    if let Err(error) = app.emit(RUN_EVENT, event) {
        tracing::warn!(%error, run_id = event.run_id(), "cannot send a run event to the window");
    }
    match event {
        RunEvent::RunStarted { run_id, session_id, .. } => {
            sessions.insert(run_id.clone(), session_id.clone());
        }
        RunEvent::BudgetWarning { run_id, spend } => {
            let run = sessions
                .get(run_id)
                .map_or_else(|| format!("Run {run_id}"), |session| format!("Session {session}"));
            notify_unless_focused(
                app,
                "Budget 80 % spent",
                &format!(
                    "{run}: {} spent; it stops after the node that reaches the limit",
                    spend.label
                ),
            );
        }
        RunEvent::RunFinished {
            run_id,
            session_id,
            status,
            elapsed_ms,
            stopped_by,
            ..
        } => {
            sessions.remove(run_id);
            let why = match stopped_by {
                Some(studio_core::timeline::StoppedBy::Budget) => ": stopped by its budget",
                _ => "",
            };
            notify_unless_focused(
                app,
                &format!("Run {}", status.as_str()),
                &format!("Session {session_id}, after {:.1} s{why}", *elapsed_ms as f64 / 1000.0),
            );
        }
        _ => {}
    }
}

/// The Tauri event a remote workspace's link state is sent as when it changes (reconnecting,
/// back, lost; its payload: `RemoteStatus`).
pub const REMOTE_STATUS: &str = "remote-status";

/// Where a remote workspace's news goes: its session changes to [`sessions_changed`] (the local
/// watcher's path), its runs' events as [`forward`] sends them, their output lines as counts
/// ([`RUN_OUTPUT`], gathered as the local runs' are), its link's state as [`REMOTE_STATUS`], its
/// link's return as [`SESSIONS_CHANGED`] (the listing is read again).
pub fn remote_sinks(app: &AppHandle) -> studio_core::remote::window::RemoteSinks {
    // A run's line printed (its id and session's), or `None`: the link is back, the counts
    // start again (the lines told of from now on are not all the run has; the window then asks
    // the store how many it holds).
    let (printed, prints) = std::sync::mpsc::channel::<Option<(String, String)>>();
    let printed_again = printed.clone();
    let notices = app.clone();
    let gather = move || {
        let mut sessions = std::collections::HashMap::new();
        let mut totals: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        while let Ok(first) = prints.recv() {
            std::thread::sleep(SESSIONS_CHANGED_WINDOW);
            let mut touched = std::collections::BTreeSet::new();
            for told in std::iter::once(first).chain(prints.try_iter()) {
                let Some((run_id, session_id)) = told else {
                    totals.clear();
                    touched.clear();
                    continue;
                };
                *totals.entry(run_id.clone()).or_default() += 1;
                sessions.insert(run_id.clone(), session_id);
                touched.insert(run_id);
            }
            for run_id in touched {
                let payload = RunOutput {
                    run_id: &run_id,
                    session_id: sessions.get(&run_id).map_or("", String::as_str),
                    lines: totals[&run_id],
                };
                if let Err(error) = notices.emit(RUN_OUTPUT, payload) {
                    tracing::warn!(%error, "cannot send an output notice to the window");
                }
            }
        }
    };
    if let Err(error) = std::thread::Builder::new().name("remote-output".into()).spawn(gather) {
        tracing::warn!(%error, "cannot start the remote output thread: output is not followed live");
    }
    let sessions_of_runs = std::sync::Mutex::new(std::collections::HashMap::<String, String>::new());
    let (runs, link, reconnected) = (app.clone(), app.clone(), app.clone());
    studio_core::remote::window::RemoteSinks {
        changes: sessions_changed(app.clone()),
        run_events: std::sync::Arc::new(move |event: RunEvent| {
            let mut sessions = sessions_of_runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match &event {
                RunEvent::Output { run_id, .. } => {
                    let session = sessions.get(run_id).cloned().unwrap_or_default();
                    let _ = printed.send(Some((run_id.clone(), session)));
                }
                _ => send_run_event(&runs, &event, &mut sessions),
            }
        }),
        link: std::sync::Arc::new(move |status| {
            if let Err(error) = link.emit(REMOTE_STATUS, &status) {
                tracing::warn!(%error, "cannot tell the window of the remote link");
            }
        }),
        // The window reads the listing again, as after the local watcher's changes.
        reconnected: std::sync::Arc::new(move || {
            let _ = printed_again.send(None);
            if let Err(error) = reconnected.emit(SESSIONS_CHANGED, SessionsChanged { changes: 1 }) {
                tracing::warn!(%error, "cannot tell the window that the remote link is back");
            }
        }),
    }
}

/// A desktop notification, unless the window has the focus (it shows the same already).
fn notify_unless_focused(app: &AppHandle, title: &str, body: &str) {
    use tauri::Manager;
    use tauri_plugin_notification::NotificationExt;
    let focused = app
        .get_webview_window("main")
        .and_then(|window| window.is_focused().ok())
        .unwrap_or(false);
    if focused {
        return;
    }
    if let Err(error) = app.notification().builder().title(title).body(body).show() {
        tracing::debug!(%error, "no desktop notification");
    }
}

/// The Tauri event a run's new output is announced as, at most about ten times a second per run
/// (its payload: `{run_id, session_id, lines}`, how many lines the run has printed so far; the
/// window reads them from the store).
pub const RUN_OUTPUT: &str = "run-output";

#[derive(serde::Serialize, Clone)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct RunOutput<'a> {
    run_id: &'a str,
    session_id: &'a str,
    lines: u64,
}

/// The sink of the runs' output changes: notices to the window.
pub fn run_output(app: AppHandle) -> ChangeSink {
    let printed: std::sync::Mutex<std::collections::HashMap<String, u64>> = Default::default();
    std::sync::Arc::new(move |change: Change| {
        let mut printed = printed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Change::RunStatusChanged { run_id, status, .. } = &change {
            // An ended run prints no more: its count goes.
            if *status != studio_core::Status::Running {
                printed.remove(run_id);
            }
        }
        if let Change::RunOutputAppended {
            session_id,
            run_id,
            lines,
            skipped,
            ..
        } = &change
        {
            let total = printed.entry(run_id.clone()).or_default();
            *total += lines.len() as u64 + skipped;
            let payload = RunOutput {
                run_id,
                session_id: session_id.as_str(),
                lines: *total,
            };
            if let Err(error) = app.emit(RUN_OUTPUT, payload) {
                tracing::warn!(%error, "cannot send an output notice to the window");
            }
        }
    })
}

/// The Tauri event session folders appearing, changing or going are sent as, at most one per
/// [`SESSIONS_CHANGED_WINDOW`] (its payload: `{changes}`, how many changes it stands for; the
/// window lists the sessions again).
pub const SESSIONS_CHANGED: &str = "sessions-changed";

/// Changes are gathered this long into one event: the watcher reports every session of a
/// workspace when it starts (10,000 events for 10,000 sessions) and a run writes several files
/// per node, but the window only needs to know that it should list the sessions again.
pub const SESSIONS_CHANGED_WINDOW: Duration = Duration::from_millis(100);

#[derive(serde::Serialize, Clone)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct SessionsChanged {
    changes: usize,
}

/// Tells the window that more of a first launch's sessions were read (it reads its rows again):
/// [`SESSIONS_CHANGED`], as a change would.
pub fn sessions_read(app: AppHandle) -> impl Fn() {
    move || {
        if let Err(error) = app.emit(SESSIONS_CHANGED, SessionsChanged { changes: 0 }) {
            tracing::warn!(%error, "cannot tell the window that more sessions were read");
        }
    }
}

/// The Tauri event a change of the workspace's `.zibby/studio.toml` (created, written, replaced
/// by a rename, removed) is sent as, with no payload: the window lists the agents again. The
/// watcher gathers a burst of writes into one (at most one per its window, 100 ms).
pub const AGENTS_CHANGED: &str = "agents-changed";

/// The watcher's sink: session changes to the window, gathered (output lines stay on disk until
/// shown), and agents file changes. Its thread waits while nothing changes and ends with the sink.
pub fn sessions_changed(app: AppHandle) -> ChangeSink {
    let (changed, changes) = std::sync::mpsc::channel::<()>();
    let notices = app.clone();
    let gather = move || {
        while changes.recv().is_ok() {
            std::thread::sleep(SESSIONS_CHANGED_WINDOW);
            let payload = SessionsChanged {
                changes: 1 + changes.try_iter().count(),
            };
            if let Err(error) = app.emit(SESSIONS_CHANGED, payload) {
                tracing::warn!(%error, "cannot send a session change to the window");
            }
        }
    };
    if let Err(error) = std::thread::Builder::new()
        .name("sessions-changed".into())
        .spawn(gather)
    {
        tracing::warn!(%error, "cannot start the session change thread: the window will not follow changes");
    }
    std::sync::Arc::new(move |change: Change| {
        if matches!(
            change,
            Change::SessionAdded { .. } | Change::SessionUpdated { .. } | Change::SessionRemoved { .. }
        ) {
            let _ = changed.send(());
        }
        if let Change::AgentsChanged { .. } = &change {
            if let Err(error) = notices.emit(AGENTS_CHANGED, ()) {
                tracing::warn!(%error, "cannot tell the window that the agents changed");
            }
        }
        if let Change::WatchPolling { workspace, reason } = &change {
            let notice = WatchNotice {
                workspace: workspace.display().to_string(),
                reason,
            };
            if let Err(error) = notices.emit(WATCH_NOTICE, notice) {
                tracing::warn!(%error, "cannot tell the window that the sessions are polled");
            }
        }
    })
}

/// The Tauri event the watcher's fall-back to polling is sent as (its payload: `{workspace,
/// reason}`): the window says the sessions are no longer watched live.
pub const WATCH_NOTICE: &str = "watch-notice";

#[derive(serde::Serialize, Clone)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct WatchNotice<'a> {
    workspace: String,
    reason: &'a str,
}
