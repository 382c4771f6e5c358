//! `zstudio diff`: two runs compared node by node (`studio_core::compare`), or two captured logs.

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use studio_core::app::across::AcrossMachines;
use studio_core::SessionId;

use studio_core::compare::sides::{CapturedLog, Source};
use studio_core::compare::text::{Hunk, Limits, LineOp, TextDiff};
use studio_core::compare::{compare, Change, NodeDiff, NodeSide, Options, RunDiff, RunSummary};

use crate::cli::{DiffArgs, Globals};
use crate::place::Place;
use crate::print;

/// The options of the comparison `args` asks for.
fn options(args: &DiffArgs) -> Options {
    Options {
        node: args.node.clone(),
        occurrence: None,
        limits: Limits {
            hunks: args.hunks,
            ..Limits::default()
        },
    }
}

/// Exit status as `diff(1)`'s: 0 when the runs are the same, 1 when they differ (0 with
/// `--exit-zero`); trouble is 2 ([`TROUBLE`], `main`'s). With `--remote HOST:PATH`, A is a
/// session of the host and B one of the local workspace, each their last run, brought together
/// and compared as the window compares across machines ([`AcrossMachines`]): nothing of the
/// local workspace or store is changed.
pub fn diff(args: &DiffArgs, place: &Place, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let Place::Host(remote) = place else {
        return diff_in(args, globals, None, out);
    };
    let [a, b] = &args.runs[..] else {
        anyhow::bail!("with --remote, give A (a session of the host) and B (a session here); --log is not taken");
    };
    let (a, b) = (SessionId::parse(a)?, SessionId::parse(b)?);
    let (store, workspace) = (globals.open_store()?, globals.open_workspace()?);
    let across = AcrossMachines::prepare(
        |bundle| remote.export_session(&a, false, bundle),
        &a,
        &store,
        &workspace,
        &b,
        SystemTime::now(),
    )?;
    let compared = across.compare(&options(args))?;
    finish(&compared, args, globals, out)
}

/// [`diff`], a session id not found in `globals`' workspace looked up in `local`'s (with
/// `--source`: a cloud session compared with a local one).
pub fn diff_in(
    args: &DiffArgs,
    globals: &Globals,
    local: Option<&Globals>,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let options = options(args);
    let compared = if args.log.is_empty() {
        let store = globals.open_store()?;
        let workspace = globals.open_workspace()?;
        let local = local.map(Globals::open_workspace).transpose()?;
        let [a, b] = &args.runs[..] else {
            anyhow::bail!("give two runs to compare (session or run ids), or --log FILE twice");
        };
        let resolve = |id: &str| match (Source::resolve(&store, &workspace, id), &local) {
            (Err(error), Some(local)) => Source::resolve(&store, local, id).map_err(|_| error),
            (found, _) => found,
        };
        let (a, b) = (resolve(a)?, resolve(b)?);
        compare(Some(&store), &a, &b, &options)?
    } else {
        let [a, b] = captured_logs(args)?;
        compare(None, &Source::Log(a), &Source::Log(b), &options)?
    };
    finish(&compared, args, globals, out)
}

/// Prints `compared` and says the exit status (as `diff(1)`'s).
fn finish(compared: &RunDiff, args: &DiffArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    if let Some(node) = &args.node {
        if compared.nodes.is_empty() {
            anyhow::bail!("no node `{node}` in either run");
        }
    }
    print::emit(out, globals.format(), compared, run_diff)?;
    Ok(if compared.differs() && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `zstudio diff`'s exit status on an error, as `diff(1)`'s: 1 says the runs differ.
pub const TROUBLE: u8 = 2;

/// The two logs of `--log`, each with its `--stderr` and `--exit-code` (each given once per log
/// or not at all).
fn captured_logs(args: &DiffArgs) -> anyhow::Result<[CapturedLog; 2]> {
    let [a, b] = &args.log[..] else {
        anyhow::bail!("--log is given twice, once for each run ({} given)", args.log.len());
    };
    if !matches!(args.stderr.len(), 0 | 2) {
        anyhow::bail!("--stderr is given once for each --log, in the same order, or not at all");
    }
    if !matches!(args.exit_code.len(), 0 | 2) {
        anyhow::bail!("--exit-code is given once for each --log, in the same order, or not at all");
    }
    let log = |i: usize, stdout: &std::path::PathBuf| CapturedLog {
        stdout: stdout.clone(),
        stderr: args.stderr.get(i).cloned(),
        exit_code: args.exit_code.get(i).copied(),
    };
    Ok([log(0, a), log(1, b)])
}

fn run_diff(out: &mut impl Write, diff: &RunDiff) -> anyhow::Result<()> {
    writeln!(out, "A  {}", summary(&diff.a))?;
    writeln!(out, "B  {}", summary(&diff.b))?;
    for node in &diff.nodes {
        node_diff(out, node)?;
    }
    if diff.output.changed {
        writeln!(out, "\noutside nodes: changed")?;
        text_diff(out, &diff.output)?;
    }
    let changed = diff.nodes.iter().filter(|n| n.change != Change::Same).count();
    writeln!(out, "\n{changed} of {} nodes differ", diff.nodes.len())?;
    if let Some(change) = &diff.cost_change {
        writeln!(out, "B − A: {change}")?;
    }
    Ok(())
}

fn summary(run: &RunSummary) -> String {
    let name = match (&run.session_id, &run.run_id) {
        (Some(session), Some(run_id)) => format!("session {session}, run {run_id}"),
        (Some(session), None) => format!("session {session}"),
        _ => "log".to_owned(),
    };
    let cost = run
        .usage
        .as_ref()
        .map_or_else(String::new, |u| format!(" · {}, {}", u.label, u.tokens_label));
    format!("{name}: {}{}{cost}", run.status, elapsed(run.elapsed_ms))
}

fn elapsed(ms: Option<u64>) -> String {
    ms.map_or_else(String::new, |ms| format!(" in {ms} ms"))
}

fn side(node: Option<&NodeSide>) -> String {
    node.map_or_else(
        || "-".to_owned(),
        |n| {
            let cost = n
                .usage
                .as_ref()
                .map_or_else(String::new, |u| format!(" · {}", u.cost_label));
            format!("{}{}{cost}", n.status, elapsed(n.elapsed_ms))
        },
    )
}

fn node_diff(out: &mut impl Write, node: &NodeDiff) -> anyhow::Result<()> {
    let word = node.change.as_str();
    let occurrence = if node.occurrence > 0 {
        format!(" #{}", node.occurrence + 1)
    } else {
        String::new()
    };
    let cost_change = node
        .cost_change
        .as_ref()
        .map_or_else(String::new, |change| format!("  ({change})"));
    writeln!(
        out,
        "\n{word:<8} {}{occurrence}  A: {}  B: {}{cost_change}",
        node.name,
        side(node.a.as_ref()),
        side(node.b.as_ref())
    )?;
    if node.output.changed {
        writeln!(out, "  output:")?;
        text_diff(out, &node.output)?;
    }
    if let Some(prompt) = node.prompt.as_ref().filter(|p| p.changed) {
        writeln!(out, "  prompt:")?;
        text_diff(out, prompt)?;
    }
    if let Some(result) = node.result.as_ref().filter(|r| r.changed) {
        writeln!(out, "  result.json:")?;
        for path in &result.paths {
            let value = |v: &Option<serde_json::Value>| v.as_ref().map_or("-".to_owned(), |v| v.to_string());
            let path_name = if path.path.is_empty() { "(whole)" } else { &path.path };
            writeln!(out, "    {path_name}: {} → {}", value(&path.a), value(&path.b))?;
        }
    }
    Ok(())
}

fn text_diff(out: &mut impl Write, diff: &TextDiff) -> anyhow::Result<()> {
    for hunk_of in &diff.hunks {
        hunk(out, hunk_of)?;
    }
    if diff.more {
        writeln!(out, "    … more hunks (--hunks N shows more)")?;
    }
    Ok(())
}

fn hunk(out: &mut impl Write, hunk: &Hunk) -> anyhow::Result<()> {
    writeln!(
        out,
        "    @@ -{},{} +{},{} @@",
        hunk.a_start, hunk.a_lines, hunk.b_start, hunk.b_lines
    )?;
    for line in &hunk.lines {
        let op = match line.op {
            LineOp::Same => ' ',
            LineOp::Removed => '-',
            LineOp::Added => '+',
        };
        writeln!(out, "    {op}{}", line.text)?;
    }
    if hunk.lines_cut > 0 {
        writeln!(out, "    … {} more lines in this hunk", hunk.lines_cut)?;
    }
    Ok(())
}
