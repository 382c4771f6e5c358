//! `zstudio export ID --otlp FILE` and `zstudio otlp push`: a session's runs as OpenTelemetry
//! traces (`studio_core::share::otlp`), written as OTLP/JSON or sent to a collector.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use studio_core::remote::methods::Methods;
use studio_core::runner::Supervisor;
use studio_core::share::otlp::{self, Endpoint, LiveExport, LiveOptions, TraceOptions, TracesData};
use studio_core::store::SessionRow;
use studio_core::{SessionId, Workspace};

use crate::cli::{Globals, OtlpArgs, OtlpCommand, OtlpPushArgs};
use crate::place::Place;
use crate::print;
use crate::remote::Remote;

/// What `export --otlp` wrote, or what `otlp push` sent of one session.
#[derive(Serialize)]
struct Traced {
    session_id: String,
    traces: usize,
    spans: usize,
}

#[derive(Serialize)]
struct Written {
    #[serde(flatten)]
    traced: Traced,
    path: std::path::PathBuf,
}

/// Where a session's traces are read: this machine's store and folders, or a host's
/// (`--remote`: its studio server reads them, this process writes or sends them).
pub trait TraceSource {
    fn traces(&self, id: &SessionId, options: TraceOptions) -> anyhow::Result<TracesData>;
    /// The sessions updated since `from`.
    fn updated_since(&self, from: studio_core::session::Timestamp) -> anyhow::Result<Vec<SessionId>>;
}

/// The workspace and store here.
struct Local {
    store: studio_core::store::Store,
    workspace: Workspace,
}

impl TraceSource for Local {
    fn traces(&self, id: &SessionId, options: TraceOptions) -> anyhow::Result<TracesData> {
        Ok(otlp::session_traces(
            &self.store,
            &self.workspace,
            id,
            options,
            SystemTime::now(),
        )?)
    }

    fn updated_since(&self, from: studio_core::session::Timestamp) -> anyhow::Result<Vec<SessionId>> {
        let rows = self.store.list_sessions(&self.workspace, SystemTime::now())?;
        Ok(updated_since(rows, from))
    }
}

/// A host's sessions' traces, read by its studio server (`otlp_traces`).
impl TraceSource for Remote {
    fn traces(&self, id: &SessionId, options: TraceOptions) -> anyhow::Result<TracesData> {
        let params = serde_json::json!({ "session_id": id, "include_output": options.include_output });
        Ok(self.link().call(studio_core::remote::protocol::OTLP_TRACES, &params)?)
    }

    fn updated_since(&self, from: studio_core::session::Timestamp) -> anyhow::Result<Vec<SessionId>> {
        Ok(updated_since(self.link().sessions_list()?.sessions, from))
    }
}

/// The sessions of `rows` updated since `from`.
fn updated_since(rows: Vec<SessionRow>, from: studio_core::session::Timestamp) -> Vec<SessionId> {
    rows.into_iter()
        .filter(|row| row.summary.updated_at >= from)
        .map(|row| row.summary.id)
        .collect()
}

fn local(globals: &Globals) -> anyhow::Result<Local> {
    Ok(Local {
        store: globals.open_store()?,
        workspace: globals.open_workspace()?,
    })
}

/// `export --otlp`: session `session_id`'s traces, read where `place` is (here, or by the host's
/// server), written as OTLP/JSON to `file` here.
pub fn export(
    place: &Place,
    session_id: &str,
    file: &Path,
    include_output: bool,
    globals: &Globals,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let local;
    let source: &dyn TraceSource = match place {
        Place::Here(_) => {
            local = self::local(globals)?;
            &local
        }
        Place::Host(remote) => remote,
    };
    let id = SessionId::parse(session_id)?;
    let traces = source.traces(&id, TraceOptions { include_output })?;
    let mut json = otlp::to_json(&traces);
    json.push('\n');
    std::fs::write(file, json).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    let (trace_count, spans) = otlp::counts(&traces);
    let written = Written {
        traced: Traced {
            session_id: id.to_string(),
            traces: trace_count,
            spans,
        },
        path: file.to_owned(),
    };
    print::emit(out, globals.format(), &written, |out, w| {
        writeln!(
            out,
            "wrote session {} to {} as OTLP/JSON ({} traces, {} spans)",
            w.traced.session_id,
            w.path.display(),
            w.traced.traces,
            w.traced.spans
        )?;
        Ok(())
    })
}

/// `zstudio otlp`: its sessions' traces, read where `place` is (here, or by the host's server),
/// sent from here to the endpoint the variables name, else the `[otlp]` table of the workspace
/// (with `--remote`, of the folder this runs in).
pub fn otlp(args: &OtlpArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let local;
    let (source, root): (&dyn TraceSource, _) = match place {
        Place::Here(_) => {
            local = self::local(globals)?;
            (&local, local.workspace.root().to_owned())
        }
        Place::Host(remote) => (remote, std::env::current_dir()?),
    };
    match &args.command {
        OtlpCommand::Push(push) => self::push(source, &root, push, globals, out),
    }
}

#[derive(Serialize)]
struct PushReport {
    endpoint: String,
    protocol: &'static str,
    sessions: Vec<Traced>,
    rejected_spans: i64,
}

fn push(
    source: &dyn TraceSource,
    root: &Path,
    args: &OtlpPushArgs,
    globals: &Globals,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let endpoint = Endpoint::resolve(|name| std::env::var(name).ok(), root)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or \
             `[otlp] endpoint = \"URL\"` in the workspace's .zibby/studio.toml"
        )
    })?;
    let ids: Vec<SessionId> = match args.since {
        Some(since) => source.updated_since(studio_core::session::Timestamp::from_system_time(
            SystemTime::now() - since,
        ))?,
        None => args
            .session_ids
            .iter()
            .map(|id| SessionId::parse(id))
            .collect::<Result<_, _>>()?,
    };
    let options = TraceOptions {
        include_output: args.include_output,
    };
    let mut report = PushReport {
        endpoint: endpoint.url.clone(),
        protocol: endpoint.protocol.as_str(),
        sessions: Vec::new(),
        rejected_spans: 0,
    };
    // One request per session: a request stays the size of one session's runs.
    for id in &ids {
        let traces = source.traces(id, options)?;
        let pushed = otlp::push(&endpoint, &traces, Duration::from_secs(args.timeout))?;
        report.rejected_spans += pushed.rejected_spans;
        report.sessions.push(Traced {
            session_id: id.to_string(),
            traces: pushed.traces,
            spans: pushed.spans,
        });
    }
    print::emit(out, globals.format(), &report, |out, report| {
        for session in &report.sessions {
            writeln!(
                out,
                "sent session {} ({} traces, {} spans)",
                session.session_id, session.traces, session.spans
            )?;
        }
        writeln!(
            out,
            "to {} ({}): {} sessions{}",
            report.endpoint,
            report.protocol,
            report.sessions.len(),
            if report.rejected_spans > 0 {
                format!("; the collector rejected {} spans", report.rejected_spans)
            } else {
                String::new()
            }
        )?;
        Ok(())
    })
}

/// How long a run's end waits for its last spans past the last request the endpoint took (3
/// times as long at most: `LiveExport::finish`).
const LIVE_FINISH_WAIT: Duration = Duration::from_secs(5);

/// The live export of the runs `supervisor` follows, when an OTLP endpoint is set (the
/// variables, or the workspace's `[otlp]` table): subscribed before a run starts.
pub fn live(supervisor: &Supervisor, workspace: &Workspace) -> anyhow::Result<Option<LiveExport>> {
    let Some(endpoint) = Endpoint::resolve(|name| std::env::var(name).ok(), workspace.root())? else {
        return Ok(None);
    };
    let endpoint = std::sync::Arc::new(endpoint);
    let mut export = LiveExport::start(LiveOptions::default());
    export.follow_runs(
        supervisor.subscribe_to_nodes(),
        Box::new(move |_| Some(endpoint.clone())),
    );
    Ok(Some(export))
}

/// Waits a bounded time for the live export's last spans; says in one line on stderr how many
/// were lost, when any were.
pub fn finish_live(live: Option<LiveExport>) {
    if let Some(export) = live {
        if let Some(line) = export.finish(LIVE_FINISH_WAIT).lost_line() {
            eprintln!("zstudio: {line}");
        }
    }
}
