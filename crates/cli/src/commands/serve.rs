//! `zstudio serve --stdio`: the studio server on standard input and output (JSON lines, see
//! docs/cli.md and `studio_core::remote`), over the workspace and the store the global options
//! name, as every other command opens them. One banner line first, then frames; it ends at the
//! end of its input, leaving the runs it started running (through the keeper). With `--keep-for`
//! (a `--remote` command's start script) it relays to the workspace's kept server instead
//! (`studio_core::remote::kept_server`), which `--listen` is.

use std::sync::Arc;
use std::time::Duration;

use studio_core::app::Studio;
use studio_core::remote::kept_server;
use studio_core::remote::protocol::{is_build_id, kept_socket_path};
use studio_core::remote::server::{serve as serve_stdio, ServeOptions};

use crate::cli::{Globals, ServeArgs};

/// The variable naming the run keeper's program (`studio_core::app::find_program`).
const KEEPER_VARIABLE: &str = "ZIBBY_STUDIO_KEEPER";

/// How many requests the server answers at once.
const WORKERS: usize = 4;

pub fn serve(args: &ServeArgs, globals: &Globals) -> anyhow::Result<()> {
    let root = match globals.workspace.first() {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    // The runs it starts go through this very program as their keeper, so that they outlive
    // it: on a host it is `~/.zibby-studio/server/zstudio-<version>-<build>`, with no `zstudio`
    // beside it nor on the PATH to be found by name. Set before any thread starts.
    if std::env::var_os(KEEPER_VARIABLE).is_none() {
        std::env::set_var(KEEPER_VARIABLE, std::env::current_exe()?);
    }
    // Its agents inherit the environment ssh gave it: trust prompts say so.
    studio_core::launch::Environment::serving_on_a_host();
    let options = ServeOptions {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        nonce: args.nonce.clone(),
        workers: WORKERS,
    };
    if let (Some(socket), Some(idle)) = (&args.listen, args.keep_for) {
        // Its socket names the build the start script verified: this one's, or none is kept.
        let build = studio_core::remote::ssh::build_id(&std::env::current_exe()?)?;
        if args.kept_build.as_deref() != Some(build.as_str()) {
            anyhow::bail!("this server is build {build}, not the one its socket names");
        }
        let (studio, _) = Studio::open(Some(&root), globals.store.location());
        kept_server::serve_kept(Arc::new(studio), socket, Duration::from_secs(idle), &options)?;
        return Ok(());
    }
    if let Some(attached) = attach(args, &root) {
        match attached {
            // Attached: the kept server serves the client; an error now ends the command (the
            // client may have had the kept server's banner: a second server would confuse it).
            Ok(relay) => return Ok(relay.run()?),
            // Nothing said to the client yet: served here as without it.
            Err(error) => eprintln!("zstudio serve: no kept server ({error}): this one serves"),
        }
    }
    // A workspace or a store that does not open is said to every request that needs it.
    let (studio, subscriptions) = Studio::open(Some(&root), globals.store.location());
    let run_events = subscriptions.map(|(events, _)| events);
    let stdin = std::io::stdin().lock();
    serve_stdio(Arc::new(studio), run_events, stdin, std::io::stdout(), &options)?;
    Ok(())
}

/// `--keep-for`: the client attached to the workspace's kept server (started when none answers),
/// named by the build the start script verified; `None` without it (or without a home).
fn attach(
    args: &ServeArgs,
    root: &std::path::Path,
) -> Option<Result<studio_core::remote::kept_server::KeptRelay, studio_core::Error>> {
    let (idle, build) = (args.keep_for?, args.kept_build.as_deref()?);
    let home = std::env::var("HOME").ok().filter(|home| home.starts_with('/'))?;
    if !is_build_id(build) || idle == 0 {
        return None;
    }
    let workspace = root.to_str()?;
    let socket = std::path::PathBuf::from(kept_socket_path(&home, build, workspace));
    let mut start = std::process::Command::new(std::env::current_exe().ok()?);
    start
        .args([
            "serve",
            "--keep-for",
            &idle.to_string(),
            "--kept-build",
            build,
            "--listen",
        ])
        .arg(&socket)
        .arg("--workspace")
        .arg(root);
    Some(kept_server::attach_to_kept(&socket, &args.nonce, &mut start))
}
