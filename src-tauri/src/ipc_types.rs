//! The window's TypeScript types, generated from the Rust types that cross IPC (ts-rs, with the
//! core's `ts` feature), with the commands (`Commands`: each one's arguments and result, from
//! their signatures in `commands.rs`) and the events' names: one file, `ui/src/generated/ipc.ts`,
//! checked in. The test fails when that file is not what the Rust
//! types make; `scripts/gen-ipc-types.sh` (`UPDATE_IPC_TYPES=1` and this test) rewrites it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use studio_core::app::cloud::{CloudImported, CloudStatus};
use studio_core::app::elsewhere::RemoteStatus;
use studio_core::app::operations::WorkspaceInfo;
use ts_rs::{Config, TS};

use crate::ipc_signature::Signature;

/// Where the generated file lives, from the repository root.
const GENERATED: &str = "ui/src/generated/ipc.ts";

const HEADER: &str = "\
// Generated from the Rust types that cross IPC (src-tauri/src/ipc_types.rs): do not edit.
// Regenerate with `scripts/gen-ipc-types.sh`; a unit test of the shell fails while this is stale.
";

/// The declarations, in the order written, and the names of the types they declare.
#[derive(Default)]
struct Declarations {
    text: Vec<String>,
    declared: BTreeSet<String>,
    referenced: BTreeSet<String>,
}

impl Declarations {
    fn add<T: TS + 'static + ?Sized>(&mut self, cfg: &Config) -> &mut Self {
        let docs = T::docs().unwrap_or_default();
        self.text.push(format!("{docs}export {}", T::decl(cfg)));
        self.declared.insert(T::ident(cfg));
        self.referenced
            .extend(T::dependencies(cfg).into_iter().map(|dependency| dependency.ts_name));
        self
    }

    /// `Commands`, each command's arguments and result (the type `backend.ts` invokes through), and
    /// `CommandName`.
    fn commands(&mut self, signatures: &[Signature]) -> &mut Self {
        let mut table = String::from(
            "/** What each command of the shell (`commands.rs`) takes and resolves to: its arguments by name, \
             as the window passes them to `invoke`, and its result. */\nexport type Commands = {\n",
        );
        for signature in signatures {
            let arguments = if signature.arguments.is_empty() {
                "Record<string, never>".to_owned()
            } else {
                let fields: Vec<String> = signature
                    .arguments
                    .iter()
                    .map(|(name, ts)| format!("{name}: {}", ts.name))
                    .collect();
                format!("{{ {} }}", fields.join("; "))
            };
            // `()` is JSON's `null`; a command that returns nothing resolves to nothing.
            let result = match signature.result.name.as_str() {
                "null" => "void",
                name => name,
            };
            table.push_str(&format!(
                "  {}: {{ args: {arguments}; result: {result} }};\n",
                signature.name
            ));
            let types = signature.arguments.iter().map(|(_, ts)| ts).chain([&signature.result]);
            self.referenced.extend(types.flat_map(|ts| ts.uses.iter().cloned()));
        }
        table.push_str("};");
        self.text.push(table);
        self.text.push(
            "/** What the window may invoke, by name (the shell's `invoke_handler`). */\nexport type CommandName = keyof Commands;"
                .to_owned(),
        );
        self
    }

    fn constant(&mut self, docs: &str, name: &str, value: &str) -> &mut Self {
        self.text.push(format!(
            "/** {docs} */\nexport const {name} = {};",
            serde_json::Value::from(value)
        ));
        self
    }
}

/// The whole generated file.
fn render() -> String {
    let cfg = Config::new().with_large_int("number");
    let mut d = Declarations::default();
    declare_types(&mut d, &cfg);
    d.commands(&crate::commands::signatures(&cfg));
    let missing: Vec<_> = d.referenced.difference(&d.declared).collect();
    assert!(
        missing.is_empty(),
        "types the window receives refer to {missing:?}, which ipc_types::render does not declare: add them"
    );
    declare_events(&mut d);
    format!("{HEADER}\n{}\n", d.text.join("\n\n"))
}

/// The types the window receives and sends, each declared once (the compare view's apart).
fn declare_types(d: &mut Declarations, cfg: &Config) {
    use studio_core::agents::{Agent, Launch};
    use studio_core::budget::BudgetSpend;
    use studio_core::cost::{CostSource, NodeUsage, UsageTotal};
    use studio_core::files::{FileChunk, FileEntry};
    use studio_core::launch::{Budget, InheritEnv, LaunchFile, ShownLaunch};
    use studio_core::protocol::Stream;
    use studio_core::runner::{OutsideStop, RunEvent, StartedRun};
    use studio_core::session::{
        FileRef, Imported, Layout, NodeArtifacts, NodeSummary, Problem, SessionInfo, SessionNode, Timestamp,
    };
    use studio_core::store::{
        Filters, Level, LogLine, Message, OutputFind, OutputLine, OutputPage, RunRecord, SavedView, SearchHit,
        SearchHitKind, SessionRow, Span, SpanKind,
    };
    use studio_core::timeline::StoppedBy;
    use studio_core::usage::{Tokens, UsageFormat};
    use studio_core::{ErrorCode, Session, SessionId, SessionSummary, Status};
    d.add::<Status>(cfg)
        .add::<Timestamp>(cfg)
        .add::<SessionId>(cfg)
        .add::<ErrorCode>(cfg)
        .add::<crate::CommandError>(cfg)
        .add::<WorkspaceInfo>(cfg)
        .add::<studio_core::remote::link::LinkState>(cfg)
        .add::<RemoteStatus>(cfg)
        .add::<CloudStatus>(cfg)
        .add::<CloudImported>(cfg)
        .add::<UsageFormat>(cfg)
        .add::<Tokens>(cfg)
        .add::<CostSource>(cfg)
        .add::<NodeUsage>(cfg)
        .add::<UsageTotal>(cfg)
        .add::<NodeSummary>(cfg)
        .add::<Problem>(cfg)
        .add::<SessionSummary>(cfg)
        .add::<SessionRow>(cfg)
        .add::<Filters>(cfg)
        .add::<SavedView>(cfg)
        .add::<studio_core::share::otlp::TraceSetting>(cfg)
        .add::<studio_core::app::SessionListing>(cfg)
        .add::<studio_core::app::SessionsPage>(cfg)
        .add::<studio_core::app::across::LocalSessions>(cfg)
        .add::<InheritEnv>(cfg)
        .add::<Agent>(cfg)
        .add::<LaunchFile>(cfg)
        .add::<Budget>(cfg)
        .add::<ShownLaunch>(cfg)
        .add::<Launch>(cfg)
        .add::<StartedRun>(cfg)
        .add::<OutsideStop>(cfg)
        .add::<StoppedBy>(cfg)
        .add::<BudgetSpend>(cfg)
        .add::<RunRecord>(cfg)
        .add::<RunEvent>(cfg)
        .add::<FileRef>(cfg)
        .add::<NodeArtifacts>(cfg)
        .add::<SessionNode>(cfg)
        .add::<SessionInfo>(cfg)
        .add::<Layout>(cfg)
        .add::<Imported>(cfg)
        .add::<Session>(cfg)
        .add::<Message>(cfg)
        .add::<Level>(cfg)
        .add::<LogLine>(cfg)
        .add::<SpanKind>(cfg)
        .add::<Span>(cfg)
        .add::<Stream>(cfg)
        .add::<OutputLine>(cfg)
        .add::<OutputPage>(cfg)
        .add::<OutputFind>(cfg)
        .add::<FileEntry>(cfg)
        .add::<FileChunk>(cfg)
        .add::<SearchHitKind>(cfg)
        .add::<SearchHit>(cfg)
        .add::<crate::events::RunOutput<'static>>(cfg)
        .add::<crate::events::SessionsChanged>(cfg)
        .add::<crate::events::WatchNotice<'static>>(cfg)
        .add::<crate::desktop::QuitRequested>(cfg)
        .add::<crate::share::SessionOpened>(cfg)
        .add::<crate::share::ExportedBundle>(cfg);
    {
        use studio_core::compare::json::{JsonDiff, PathChange, PathDiff};
        use studio_core::compare::text::{DiffLine, Hunk, LineOp, TextDiff, WordPart};
        use studio_core::compare::{Change, NodeDiff, NodeSide, RunDiff, RunSummary};
        d.add::<LineOp>(cfg)
            .add::<WordPart>(cfg)
            .add::<DiffLine>(cfg)
            .add::<Hunk>(cfg)
            .add::<TextDiff>(cfg)
            .add::<PathChange>(cfg)
            .add::<PathDiff>(cfg)
            .add::<JsonDiff>(cfg)
            .add::<RunSummary>(cfg)
            .add::<Change>(cfg)
            .add::<NodeSide>(cfg)
            .add::<NodeDiff>(cfg)
            .add::<RunDiff>(cfg);
    }
}

/// The names of the Tauri events the shell sends, with what each carries.
fn declare_events(d: &mut Declarations) {
    d.constant(
        "The Tauri event the shell sends run events as (payload: `RunEvent`).",
        "RUN_EVENT",
        crate::events::RUN_EVENT,
    )
    .constant(
        "The Tauri event the shell sends output progress as (payload: `RunOutput`).",
        "RUN_OUTPUT",
        crate::events::RUN_OUTPUT,
    )
    .constant(
        "The Tauri event the shell sends the watcher's session changes as (payload: `SessionsChanged`).",
        "SESSIONS_CHANGED",
        crate::events::SESSIONS_CHANGED,
    )
    .constant(
        "The Tauri event the shell sends when the workspace's `.zibby/studio.toml` was created, changed or removed (no payload: list the agents again).",
        "AGENTS_CHANGED",
        crate::events::AGENTS_CHANGED,
    )
    .constant(
        "The Tauri event the shell says the sessions are polled, not watched live, with (payload: `WatchNotice`).",
        "WATCH_NOTICE",
        crate::events::WATCH_NOTICE,
    )
    .constant(
        "The Tauri event the shell sends when the workspace was switched (payload: `WorkspaceInfo`).",
        "WORKSPACE_CHANGED",
        crate::window::WORKSPACE_CHANGED,
    )
    .constant(
        "The Tauri event the shell sends when the remote workspace's link changes: reconnecting, back, lost (payload: `RemoteStatus`).",
        "REMOTE_STATUS",
        crate::events::REMOTE_STATUS,
    )
    .constant(
        "The Tauri event the shell says which remote workspace it is connecting to with (payload: its target, or null once done).",
        "REMOTE_CONNECTING",
        crate::remote::REMOTE_CONNECTING,
    )
    .constant(
        "The Tauri event the shell asks the window to show the Open Remote Workspace form with (no payload).",
        "REMOTE_OPEN_REQUESTED",
        crate::remote::REMOTE_OPEN_REQUESTED,
    )
    .constant(
        "The Tauri event the shell asks the window to show the Open Cloud Workspace form with (no payload).",
        "CLOUD_OPEN_REQUESTED",
        crate::cloud::CLOUD_OPEN_REQUESTED,
    )
    .constant(
        "The Tauri event the shell sends when the cloud workspace's status changes: a warm open's check is done, a refresh fails or works again (payload: `CloudStatus`).",
        "CLOUD_STATUS",
        crate::cloud::CLOUD_STATUS,
    )
    .constant(
        "The Tauri event the shell sends when the app is closing with live runs (payload: `QuitRequested`).",
        "QUIT_REQUESTED",
        crate::desktop::QUIT_REQUESTED,
    )
    .constant(
        "The Tauri event the shell asks the window to show a session with: imported, or asked for by a launch (payload: `SessionOpened`).",
        "SESSION_OPENED",
        crate::share::SESSION_OPENED,
    )
    .constant(
        "The Tauri event the shell says an import from the menu or a drop failed with (payload: `CommandError`).",
        "IMPORT_FAILED",
        crate::share::IMPORT_FAILED,
    );
}

fn generated_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(GENERATED)
}

#[test]
fn generated_ipc_types_are_current() {
    let rendered = render();
    let path = generated_path();
    if std::env::var_os("UPDATE_IPC_TYPES").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("create ui/src/generated");
        std::fs::write(&path, &rendered).expect("write the generated IPC types");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk != rendered {
        let first_difference = on_disk
            .lines()
            .zip(rendered.lines())
            .position(|(disk, now)| disk != now)
            .unwrap_or_else(|| on_disk.lines().count().min(rendered.lines().count()));
        panic!(
            "{GENERATED} is stale: the Rust types that cross IPC changed (first difference at line {}). \
             Regenerate it with `scripts/gen-ipc-types.sh` (or \
             `UPDATE_IPC_TYPES=1 cargo test -p zibby-studio --lib ipc_types`) and commit it.\n\
             --- on disk ---\n{}\n--- from the Rust types ---\n{}",
            first_difference + 1,
            on_disk.lines().nth(first_difference).unwrap_or("(end of file)"),
            rendered.lines().nth(first_difference).unwrap_or("(end of file)"),
        );
    }
}

/// The studio server's methods (`zstudio serve --stdio`) are the window's IPC commands: each of
/// them is a command of `ipc_commands!` taking the same arguments, by name and in order.
#[test]
fn every_server_method_is_an_ipc_command_with_its_arguments() {
    let cfg = Config::new().with_large_int("number");
    let commands = crate::commands::signatures(&cfg);
    let arguments_of = |name: &str| {
        commands.iter().find(|command| command.name == name).map(|command| {
            command
                .arguments
                .iter()
                .map(|(argument, _)| *argument)
                .collect::<Vec<_>>()
        })
    };
    let mut differences = Vec::new();
    for (method, parameters) in studio_core::remote::methods::IPC_METHODS {
        match arguments_of(method) {
            None => differences.push(format!("`{method}` is no command of ipc_commands!")),
            Some(arguments) if arguments != *parameters => differences.push(format!(
                "`{method}` takes {parameters:?} on the server, {arguments:?} in ipc_commands!"
            )),
            Some(_) => {}
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert!(
        studio_core::remote::methods::IPC_METHODS.len() >= 21,
        "the server serves every command that needs no window"
    );
}
