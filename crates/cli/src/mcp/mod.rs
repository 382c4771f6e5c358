//! `zstudio mcp`: the studio as a Model Context Protocol server on standard input and output,
//! for coding agents (Claude Code, Codex, Gemini CLI, Cursor) to ask about sessions, runs and
//! nodes, and with `--allow-runs` to start, re-run and stop runs of trusted agents.
//!
//! - `tools`: the tools, their arguments and what they answer, over `app::Studio`.
//! - `answer`: a tool's result or error, as the tools give it to the SDK.
//! - `lookup`: the ids a call names, checked and looked up (sessions, runs, nodes).
//! - `output`: `read_output`'s pages and cursors.
//! - `shown`: a session's text made inert for another model's context.
//! - `sdk`: the MCP SDK (`rmcp`), and nothing else knows it.
//! - `host`: `--remote HOST:PATH`, the host's own server with this process's standard input
//!   and output.

mod answer;
mod host;
mod lookup;
mod output;
mod sdk;
mod shown;
mod tools;

use std::sync::Arc;

use studio_core::app::cloud::CloudWorkspace;
use studio_core::app::Studio;
use studio_core::bucket::{cache, MirrorOptions, Source};

use crate::cli::{Globals, McpArgs, SourceArgs};

/// The variable naming the run keeper's program (`studio_core::app::find_program`).
const KEEPER_VARIABLE: &str = "ZIBBY_STUDIO_KEEPER";

/// Serves the workspace (with `--source` the bucket prefix, with `--remote` the host's
/// workspace through its own server) and the store the global options name (opened as
/// `zstudio serve` and the window open them) until the client closes standard input; the runs
/// it started go on.
pub fn mcp(args: &McpArgs, globals: &Globals) -> anyhow::Result<()> {
    if let Some(target) = &globals.remote {
        return host::serve_host(target, args, globals);
    }
    let root = match globals.workspace.first() {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    // The runs it starts go through this very program as their keeper, so that they outlive
    // the server. Set before any thread starts.
    if args.allow_runs && std::env::var_os(KEEPER_VARIABLE).is_none() {
        std::env::set_var(KEEPER_VARIABLE, std::env::current_exe()?);
    }
    let studio = match &globals.source.source {
        None => Studio::open(Some(&root), globals.store.location()).0,
        // A bucket prefix: its mirror's folder, opened as the window opens a cloud workspace
        // (read-only; listed sessions fetched as they are asked for).
        Some(url) => {
            let cloud = open_cloud(url, &globals.source)?;
            let (studio, _) = Studio::open(Some(&cloud.workspace_root()), globals.store.location());
            studio.store()?;
            studio.open_cloud(cloud)?;
            studio
        }
    };
    // A workspace or a store that does not open is said at once, not to every call.
    studio.workspace()?;
    studio.store()?;
    let studio = Arc::new(studio);
    let served = sdk::serve_stdio(Arc::new(tools::Catalogue::new(studio.clone(), args.allow_runs)));
    // The client is gone: the runs it started go on through the keeper.
    studio.keep_runs_on_exit(true);
    studio.shut_down();
    served
}

/// The cloud workspace of `--source URL` (its cache cleared first when asked), listed.
fn open_cloud(url: &str, args: &SourceArgs) -> anyhow::Result<Arc<CloudWorkspace>> {
    let source = Source::parse(url)?;
    let root = cache::default_cache_root()
        .ok_or_else(|| anyhow::anyhow!("no cache folder for {source}: set XDG_CACHE_HOME or HOME"))?;
    if args.clear_cache {
        cache::clear(&root, Some(&source))?;
    }
    let mut options = MirrorOptions::new(root);
    if let Some(limit) = args.cache_limit {
        options.max_bytes = limit;
    }
    Ok(CloudWorkspace::open(&source, options, Box::new(|_| {}))?)
}
