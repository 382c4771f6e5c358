//! Runs as OpenTelemetry traces (docs/cli.md, "Runs as OpenTelemetry traces"): each run of a
//! session is one trace, its ids derived from the run (`ids`), made of OTLP spans (`map`) in
//! the OpenTelemetry project's own messages (`opentelemetry-proto`), written as OTLP/JSON
//! ([`to_json`]) or sent to a collector (`push`), read from the store and the session's folder
//! (`runs`); sent live as runs go (`live`, and `watched` for the sessions the studio did not
//! start); the window's Traces setting reads and writes where (`setting`).

mod ids;
mod live;
mod map;
mod names;
mod push;
mod runs;
mod setting;
mod watched;

use std::time::SystemTime;

/// The OTLP message a session's traces are (the `opentelemetry-proto` crate's).
pub use opentelemetry_proto::tonic::trace::v1::TracesData;

pub use ids::{run_span_id, trace_id, NodeSpanIds, RunIds};
pub use live::{LiveExport, LiveOptions, LiveSummary, Route};
pub use map::{
    counts, node_span, root_span, run_spans, traces_of_spans, LogEvent, NodeExecution, RunTrace, SpanPlace,
    SERVICE_NAME,
};
pub use push::{push, Endpoint, Protocol, Pushed};
pub use runs::{session_runs, TraceOptions, OUTPUT_BYTES};
pub use setting::{save_trace_setting, trace_setting, TraceSetting};
pub use watched::WatchedExport;

use crate::sessions::session::{Timestamp, Workspace};
use crate::store::Store;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// The route of a studio that runs agents in any workspace (the window's): each run goes to the
/// endpoint its workspace names (the variables, else its `[otlp]` table), read as it starts.
pub fn route_by_workspace(store: std::sync::Arc<Store>) -> Route {
    Box::new(move |run_id| {
        let run = store.run(run_id).ok()?;
        match Endpoint::resolve(|name| std::env::var(name).ok(), &run.workspace) {
            Ok(endpoint) => endpoint.map(std::sync::Arc::new),
            Err(error) => {
                tracing::warn!(%run_id, %error, "the run is not sent as a trace");
                None
            }
        }
    })
}

/// Traces as one OTLP message: the studio as the resource, its spans in one scope.
pub fn traces_data(runs: &[RunTrace], now: SystemTime) -> TracesData {
    let now_ms = Timestamp::from_system_time(now).0;
    map::traces_of_spans(runs.iter().flat_map(|run| run_spans(run, now_ms)).collect())
}

/// Session `id`'s traces in one OTLP message.
pub fn session_traces(
    store: &Store,
    workspace: &Workspace,
    id: &SessionId,
    options: TraceOptions,
    now: SystemTime,
) -> Result<TracesData, Error> {
    Ok(traces_data(&session_runs(store, workspace, id, options, now)?, now))
}

/// OTLP/JSON (what a collector's file receiver and `http/json` read): one line.
pub fn to_json(traces: &TracesData) -> String {
    serde_json::to_string(traces).expect("OTLP messages serialize")
}
