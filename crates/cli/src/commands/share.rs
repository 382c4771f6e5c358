//! `zstudio export` and `zstudio import`: a session as one bundle to share, and a bundle, a
//! session folder or a captured log brought into a workspace (`studio_core::share`); and
//! `zstudio open`: the window brought to a session.

use std::io::Write;

use studio_core::remote::import::RemoteImport;
use studio_core::SessionId;

use crate::cli::{ExportArgs, Globals, ImportArgs, SessionArg};
use crate::place::Place;
use crate::print;

/// `export`: a session of the workspace as a bundle here (a host's written there and streamed
/// here), or with `--otlp` its traces as OTLP/JSON.
pub fn export(args: &ExportArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    if let Some(file) = &args.otlp {
        return super::otlp::export(place, &args.session_id, file, args.include_output, globals, out);
    }
    let id = SessionId::parse(&args.session_id)?;
    let path = match &args.output {
        Some(path) => path.clone(),
        None => std::env::current_dir()?.join(format!("{id}.zip")),
    };
    let exported = place.export_session(&id, args.include_config, &path)?;
    print::emit(out, globals.format(), &exported, |out, exported| {
        print::exported(out, exported)
    })
}

/// `import`: a bundle, a session folder or a captured log here brought into the workspace and
/// store, here or on the host of `--remote` (uploaded and imported there, as `zstudio import`
/// there would; a session folder is refused: a bundle of it is uploaded).
pub fn import(args: &ImportArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let request = RemoteImport {
        as_new: args.as_new,
        stderr: args.stderr.clone(),
        exit_code: args.exit_code,
        max_bytes: args.max_bytes,
    };
    let imported = place.import(&args.source, &request)?;
    print::emit(out, globals.format(), &imported, |out, imported| {
        print::imported(out, imported)
    })
}

/// What `zstudio open` started.
#[derive(serde::Serialize)]
struct Opened {
    session_id: String,
    /// The workspace as the app was given it: a folder, `HOST:PATH` or a bucket URL.
    workspace: String,
    app: std::path::PathBuf,
}

/// Starts the app on the session (of this machine's workspace, or `zibby-studio --session ID
/// HOST:PATH` once the host of `--remote` has said the session is there): a window already
/// running on the same store takes the request over (the app's single-instance hand-over) and
/// comes to the front; the process started here then ends. Not waited for.
pub fn open(args: &SessionArg, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let id = SessionId::parse(&args.session_id)?;
    let workspace = match place {
        Place::Here(_) => {
            let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
            crate::open::require_session(&store, &workspace, &id)?;
            workspace.root().as_os_str().to_owned()
        }
        Place::Host(remote) => {
            place.methods()?.session_get(id.to_string())?;
            std::ffi::OsString::from(&remote.target)
        }
    };
    launch_app(&id, &workspace, globals, out)
}

/// Starts the app on session `id` of `workspace` (a folder, `HOST:PATH` of `--remote` or a
/// bucket URL of `--source`, as the app takes them), with the store and ssh config of `globals`.
pub fn launch_app(
    id: &SessionId,
    workspace: &std::ffi::OsStr,
    globals: &Globals,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    if globals.store.memory {
        anyhow::bail!("`zstudio open` shows the session in the app's store: --memory is a store of its own");
    }
    let app = desktop_app()?;
    let mut command = std::process::Command::new(&app);
    if let Some(db) = &globals.store.db {
        command.arg("--db").arg(db);
    }
    if let Some(config) = globals.ssh_config.as_ref().filter(|_| globals.remote.is_some()) {
        command.arg("--ssh-config").arg(config);
    }
    command.arg("--session").arg(id.as_str()).arg(workspace);
    use std::os::unix::process::CommandExt;
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group: a Ctrl-C in this terminal does not end the window.
        .process_group(0);
    command
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", app.display()))?;
    let opened = Opened {
        session_id: id.to_string(),
        workspace: workspace.to_string_lossy().into_owned(),
        app,
    };
    print::emit(out, globals.format(), &opened, |out, opened| {
        writeln!(out, "opening session {} in {}", opened.session_id, opened.app.display())?;
        Ok(())
    })
}

/// The desktop app: `$ZIBBY_STUDIO_APP`, else `zibby-studio` beside this program, else on the PATH.
fn desktop_app() -> anyhow::Result<std::path::PathBuf> {
    studio_core::app::find_program("ZIBBY_STUDIO_APP", "zibby-studio").ok_or_else(|| {
        anyhow::anyhow!(
            "the Zibby Studio app (zibby-studio) is not beside zstudio nor on the PATH: set ZIBBY_STUDIO_APP"
        )
    })
}
