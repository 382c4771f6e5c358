//! The studio server's methods that are the window's IPC commands: the same names, the same
//! argument names, the same results, dispatched to the same functions of the app service
//! (`app::operations`). A shell test compares [`IPC_METHODS`] with the shell's `ipc_commands!`.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::app::Studio;
use crate::remote::reply::{Answer, ReplyOut, Written};
use crate::vocabulary::error::Error;

/// The parameters of `method`, read from its frame's `params` (an object; `null` for none).
pub(crate) fn read_params<P: DeserializeOwned>(method: &str, params: Value) -> Result<P, Error> {
    let params = match params {
        Value::Null => Value::Object(serde_json::Map::new()),
        params => params,
    };
    serde_json::from_value(params).map_err(|e| Error::InvalidRequest {
        reason: format!("the parameters of `{method}`: {e}"),
    })
}

/// A method's result written as its reply: its JSON text straight from the type to the client
/// (see [`ReplyOut`]).
pub(crate) fn write_result(
    method: &str,
    result: Result<impl Answer, Error>,
    out: &mut ReplyOut<'_>,
) -> Result<Written, Error> {
    result?.write_to(out).map_err(|e| Error::InvalidRequest {
        reason: format!("the result of `{method}` cannot be written: {e}"),
    })
}

/// The protocol's methods (besides [`IPC_METHODS`]) the window calls by name through its remote
/// workspace (`app::elsewhere::Elsewhere::forward`): trusting an agent there after asking.
pub const WINDOW_PROTOCOL_METHODS: &[&str] = &[crate::remote::protocol::AGENT_TRUST];

/// Defines [`IPC_METHODS`], [`dispatch`] and [`Methods`] (answered by a [`Link`] to a server and
/// by the app service, [`Studio`], whose answers `dispatch` sends) from one list: each method's
/// parameters (by the IPC command's argument names), its result's type, and the app service's
/// call (its result as that type: checked by the compiler), with the form it is carried in when
/// it is not the type's own (`[carried as WRAPPER]`).
///
/// [`Link`]: crate::remote::link::Link
macro_rules! ipc_methods {
    ($studio:ident; $(
        $name:ident($($param:ident: $type:ty),*) -> $result:ty $([carried as $wire:path])? => $call:expr;
    )*) => {
        /// Each method's name and parameter names: the window's IPC commands' own.
        pub const IPC_METHODS: &[(&str, &[&str])] = &[$((stringify!($name), &[$(stringify!($param)),*])),*];

        /// Calls `method` of the app service with `params`, its result written to `out`; `None`
        /// when it is none of [`IPC_METHODS`].
        pub(crate) fn dispatch(
            $studio: &Studio,
            method: &str,
            params: Value,
            out: &mut ReplyOut<'_>,
        ) -> Option<Result<Written, Error>> {
            Some(match method {
                $(stringify!($name) => {
                    #[derive(Deserialize)]
                    #[serde(deny_unknown_fields)]
                    #[allow(non_camel_case_types)]
                    struct $name { $($param: $type),* }
                    match read_params::<$name>(method, params) {
                        Ok($name { $($param),* }) => {
                            let result = <Studio as Methods>::$name($studio, $($param),*);
                            $(let result = result.map($wire);)?
                            write_result(method, result, out)
                        }
                        Err(error) => Err(error),
                    }
                })*
                _ => return None,
            })
        }

        /// The studio server's methods as their callers call them: each by its name, its
        /// parameters typed, its result the type the app service's call answers. One list with
        /// the server's `dispatch` and the window's commands ([`IPC_METHODS`]); answered by a
        /// remote workspace's server ([`Link`](crate::remote::link::Link): sent by their names)
        /// or by the app service here ([`Studio`]: the call the list names, whose answer the
        /// server's `dispatch` sends), so a command written over them means one thing on either
        /// (`zstudio tag`, `untag`, `note`, `view`).
        pub trait Methods {
            $(
                #[doc = concat!("The server's `", stringify!($name), "`.")]
                fn $name(&self, $($param: $type),*) -> Result<$result, Error>;
            )*
        }

        /// A remote workspace's link sends each by its name, its parameters by theirs, and reads
        /// its result as the type the server's call answers (connected again when it dropped, as
        /// [`Link::call`](crate::remote::link::Link::call)).
        impl Methods for crate::remote::link::Link {
            $(
                fn $name(&self, $($param: $type),*) -> Result<$result, Error> {
                    self.call(stringify!($name), &serde_json::json!({ $(stringify!($param): $param),* }))
                }
            )*
        }

        /// The app service answers each itself, with the call the list names (what the server's
        /// `dispatch` sends).
        impl Methods for Studio {
            $(
                fn $name(&self, $($param: $type),*) -> Result<$result, Error> {
                    let $studio = self;
                    $call
                }
            )*
        }
    };
}

use crate::app::operations::WorkspaceInfo;
use crate::app::{SessionListing, SessionsPage};
use crate::compare::RunDiff;
use crate::runs::runner::{OutsideStop, StartedRun};
use crate::runs::stop::Stopping;
use crate::sessions::agents::Agent;
use crate::sessions::cost::UsageTotal;
use crate::sessions::files::{FileChunk, FileEntry};
use crate::sessions::session::Session;
use crate::share::otlp::TraceSetting;
use crate::store::{Filters, LogLine, Message, OutputFind, OutputPage, RunRecord, SavedView, SearchHit, Span};
use crate::vocabulary::label::Tag;

ipc_methods! { studio;
    workspace_get() -> WorkspaceInfo => studio.workspace_info();
    // Carried as a table: the only result whose form differs from the IPC command's.
    sessions_list() -> SessionListing [carried as crate::remote::table::WireListing] => studio.sessions_list();
    // The window's table a page at a time, and its sessions' cost apart.
    sessions_page(offset: usize, limit: usize) -> SessionsPage => studio.sessions_page(offset, limit);
    sessions_usage() -> Option<UsageTotal> => studio.sessions_usage();
    session_get(session_id: String) -> Session => studio.session_get(&session_id);
    session_messages(session_id: String) -> Vec<Message> => studio.session_messages(&session_id);
    session_logs(session_id: String) -> Vec<LogLine> => studio.session_logs(&session_id);
    session_files(session_id: String) -> Vec<FileEntry> => studio.session_files(&session_id);
    session_file_read(session_id: String, path: String, offset: u64, limit: usize) -> FileChunk =>
        studio.session_file_read(&session_id, &path, offset, limit);
    session_delete(session_id: String) -> () => studio.session_delete(&session_id);
    pin_add(session_id: String) -> () => studio.pin_add(&session_id);
    pin_remove(session_id: String) -> () => studio.pin_remove(&session_id);
    // Each tag read is checked (`vocabulary::label`); answers the session's tags after.
    tags_add(session_id: String, tags: Vec<Tag>) -> Vec<String> => studio.tags_add(&session_id, &tags);
    tags_remove(session_id: String, tags: Vec<Tag>) -> Vec<String> => studio.tags_remove(&session_id, &tags);
    note_get(session_id: String) -> Option<String> => studio.note_get(&session_id);
    // null or "" removes it; at most 64 KiB.
    note_set(session_id: String, note: Option<String>) -> () => studio.note_set(&session_id, note.as_deref());
    // The saved views of the sessions table; each answers the views after.
    views_list() -> Vec<SavedView> => studio.views_list();
    view_save(name: String, filters: Filters) -> Vec<SavedView> => studio.view_save(&name, &filters);
    view_delete(name: String) -> Vec<SavedView> => studio.view_delete(&name);
    search(query: String, limit: usize) -> Vec<SearchHit> => studio.search(&query, limit);
    agents_list() -> Vec<Agent> => studio.agents_list();
    // Where the host sends its runs as traces (saving it is the shell's, after asking: local only).
    traces_setting() -> TraceSetting => studio.traces_setting();
    agent_save(agent: Agent, previous_name: Option<String>) -> Vec<Agent> =>
        studio.agent_save(agent, previous_name.as_deref());
    run_start(agent: String, prompt: String, session_id: Option<String>, max_cost_usd: Option<f64>) -> StartedRun =>
        studio.run_start(&agent, prompt, session_id.as_deref(), max_cost_usd);
    run_replay(session_id: String, node: String, agent: String) -> StartedRun =>
        studio.run_replay(&session_id, node, &agent);
    run_stop(run_id: String, force: bool) -> Stopping => studio.run_stop(&run_id, force);
    session_stop_outside(session_id: String) -> OutsideStop => studio.session_stop_outside(&session_id);
    runs_list(session_id: Option<String>) -> Vec<RunRecord> => studio.runs_list(session_id.as_deref());
    run_spans(run_id: String) -> Vec<Span> => studio.run_spans(&run_id);
    run_output(run_id: String, from_seq: i64, limit: usize, node: Option<String>, stream: Option<String>) -> OutputPage =>
        studio.run_output(&run_id, from_seq, limit, node, stream.as_deref());
    run_output_find(run_id: String, from_seq: i64, backward: bool, query: String) -> OutputFind =>
        studio.run_output_find(&run_id, from_seq, backward, &query);
    runs_compare(a: String, b: String, node: Option<String>, occurrence: Option<usize>, skip_hunks: usize) -> RunDiff =>
        studio.runs_compare(&a, &b, node, occurrence, skip_hunks);
}
