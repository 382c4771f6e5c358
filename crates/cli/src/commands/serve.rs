//! `zstudio serve --stdio`: the studio server on standard input and output (JSON lines, see
//! docs/cli.md and `studio_core::remote`), over the workspace and the store the global options
//! name, as every other command opens them. One banner line first, then frames; it ends at the
//! end of its input, leaving the runs it started running (through the keeper).

use std::sync::Arc;

use studio_core::app::Studio;
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
    // A workspace or a store that does not open is said to every request that needs it.
    let (studio, subscriptions) = Studio::open(Some(&root), globals.store.location());
    let options = ServeOptions {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        nonce: args.nonce.clone(),
        workers: WORKERS,
    };
    let run_events = subscriptions.map(|(events, _)| events);
    let stdin = std::io::stdin().lock();
    serve_stdio(Arc::new(studio), run_events, stdin, std::io::stdout(), &options)?;
    Ok(())
}
