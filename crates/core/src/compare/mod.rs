//! Two runs compared, node by node (issue 16): what `zstudio diff` prints and the window's
//! compare view shows.
//!
//! - [`sides`]: what a side is (a recorded run, a session folder, a captured log) and its node
//!   executions and output lines, streamed.
//! - [`text`]: bounded line diffs (lines hashed, only the shown hunks read as text), changed
//!   words marked.
//! - [`json`]: `result.json` as a structural diff.
//!
//! Nodes are matched by name and occurrence: the n-th execution of node X in A against the n-th
//! in B (retries, loops and re-runs in order). A node whose status, output, prompt or result
//! differs is `changed`; durations alone are no change. Each side's output is read once, every
//! line hashed and its place kept (sixteen bytes a line), both sides at the same time; then only
//! the lines of the hunks shown are read again, where they are.

pub mod json;
pub mod sides;
pub mod text;

use std::collections::HashMap;

use serde::Serialize;

use crate::sessions::cost::{change_label, NodeUsage, UsageTotal};
use crate::status::Status;
use crate::store::Store;
use crate::vocabulary::error::Error;

use self::json::{diff_values, JsonDiff};
pub use self::sides::RunSummary;
use self::sides::{last_occurrences, Execution, Side, Source, Target};
use self::text::{Limits, TextDiff};

/// How a node of B differs from its match in A (`Change::as_str` gives its JSON name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Same,
    Changed,
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
}

impl Change {
    /// `same`, `changed`, `added` or `removed`, as `--json` and the window say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Same => "same",
            Change::Changed => "changed",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }
}

/// One side of a node execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeSide {
    pub status: Status,
    pub elapsed_ms: Option<u64>,
    /// When it began, from its run's start (for one time axis); null when unknown (logs, folders).
    pub started_ms: Option<u64>,
    /// What it used (the usage object, docs/cli.md): a node's usage is its last execution's
    /// (the raw stream holds the last one's), so earlier executions of it have none.
    pub usage: Option<NodeUsage>,
}

/// One node execution matched across the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeDiff {
    pub name: String,
    /// Which execution of the node this is (0 for the first), on both sides.
    pub occurrence: usize,
    pub change: Change,
    pub a: Option<NodeSide>,
    pub b: Option<NodeSide>,
    /// What B cost more or less than A (`cost::change_label`): null unless both sides know it.
    /// A cost alone never makes a node changed (its output does).
    pub cost_change: Option<String>,
    pub output: TextDiff,
    /// The node's `prompt.txt`, when either side's folder has one for this execution (a node
    /// folder holds its last execution's files) and both sides' folders are their runs' (two
    /// session folders, or a session's last run): null otherwise.
    pub prompt: Option<TextDiff>,
    /// The node's `result.json`, on the same terms as `prompt`.
    pub result: Option<JsonDiff>,
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunDiff {
    pub a: RunSummary,
    pub b: RunSummary,
    pub nodes: Vec<NodeDiff>,
    /// The output printed outside any node: the whole output when neither run's nodes are known.
    pub output: TextDiff,
    /// What B cost more or less than A, over all nodes: null unless both totals are exact (every
    /// node priced) or both report tokens.
    pub cost_change: Option<String>,
}

impl RunDiff {
    /// Whether the runs differ (what `zstudio diff`'s exit status says, as `diff(1)`'s): a node
    /// changed, added or removed, the output outside nodes changed, or the runs ended otherwise.
    pub fn differs(&self) -> bool {
        self.a.status != self.b.status || self.output.changed || self.nodes.iter().any(|n| n.change != Change::Same)
    }
}

/// What to compare and how much of it.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only the executions of this node.
    pub node: Option<String>,
    /// With `node`: only this execution of it (for more hunks of one node).
    pub occurrence: Option<usize>,
    pub limits: Limits,
}

/// The largest prompt compared (it is read whole).
const MAX_PROMPT_BYTES: u64 = 8 * 1024 * 1024;

/// Compares two runs (see the module doc). `store` is needed for recorded runs.
pub fn compare(store: Option<&Store>, a: &Source, b: &Source, options: &Options) -> Result<RunDiff, Error> {
    let is_folder = |source: &Source| matches!(source, Source::Folder { .. });
    let (a, b) = both(
        || Side::open(store, a, is_folder(b)),
        || Side::open(store, b, is_folder(a)),
    );
    let (a, b) = (a?, b?);
    let pairs: Vec<Pair> = align(&a.executions, &b.executions)
        .into_iter()
        .filter(|pair| options.node.as_ref().is_none_or(|node| *node == pair.name))
        .filter(|pair| options.occurrence.is_none_or(|k| k == pair.occurrence))
        .collect();
    let limits = &options.limits;
    // The hunks to show, planned from the hashes; then their lines read, both sides at once.
    let outside_plan = text::plan(a.hashes.of(Target::Outside), b.hashes.of(Target::Outside), limits);
    let plans: Vec<text::Plan> = pairs
        .iter()
        .map(|pair| text::plan(execution_hashes(&a, pair.a), execution_hashes(&b, pair.b), limits))
        .collect();
    let mut wanted_a: HashMap<Target, Vec<usize>> = HashMap::new();
    let mut wanted_b: HashMap<Target, Vec<usize>> = HashMap::new();
    let mut want = |target_a: Option<Target>, target_b: Option<Target>, plan: &text::Plan| {
        let (lines_a, lines_b) = text::wanted_lines(plan, limits);
        if let Some(target) = target_a {
            wanted_a.insert(target, lines_a);
        }
        if let Some(target) = target_b {
            wanted_b.insert(target, lines_b);
        }
    };
    want(Some(Target::Outside), Some(Target::Outside), &outside_plan);
    for (pair, plan) in pairs.iter().zip(&plans) {
        want(pair.a.map(Target::Execution), pair.b.map(Target::Execution), plan);
    }
    let (text_a, text_b) = both(
        || a.read_lines(store, &wanted_a, limits.line_chars),
        || b.read_lines(store, &wanted_b, limits.line_chars),
    );
    let (mut text_a, mut text_b) = (text_a?, text_b?);
    let take = |texts: &mut HashMap<Target, HashMap<usize, String>>, target: Option<Target>| {
        target.and_then(|t| texts.remove(&t)).unwrap_or_default()
    };
    let output = text::hunks(
        outside_plan,
        &take(&mut text_a, Some(Target::Outside)),
        &take(&mut text_b, Some(Target::Outside)),
        limits,
    );
    let last_a = last_occurrences(&a.executions);
    let last_b = last_occurrences(&b.executions);
    let mut nodes = Vec::with_capacity(pairs.len());
    for (pair, plan) in pairs.into_iter().zip(plans) {
        let output = text::hunks(
            plan,
            &take(&mut text_a, pair.a.map(Target::Execution)),
            &take(&mut text_b, pair.b.map(Target::Execution)),
            limits,
        );
        nodes.push(node_diff(&a, &b, pair, output, (&last_a, &last_b), limits));
    }
    let exact_cost = |total: &UsageTotal| total.is_complete().then_some(total.cost_usd).flatten();
    let (total_a, total_b) = (a.summary.usage.as_ref(), b.summary.usage.as_ref());
    let cost_change = change_label(
        total_a.and_then(exact_cost),
        total_a.map(|t| &t.tokens),
        total_b.and_then(exact_cost),
        total_b.map(|t| &t.tokens),
    );
    Ok(RunDiff {
        a: a.summary,
        b: b.summary,
        nodes,
        output,
        cost_change,
    })
}

/// One pair of executions compared: their output's hunks (`output`, read with both sides'), their
/// prompt and `result.json` (a node folder holds its last execution's files), statuses and cost.
fn node_diff(
    a: &Side,
    b: &Side,
    pair: Pair,
    output: TextDiff,
    (last_a, last_b): (&HashMap<&str, usize>, &HashMap<&str, usize>),
    limits: &Limits,
) -> NodeDiff {
    // A node folder holds its last execution's files.
    let files_a = pair
        .a
        .filter(|&i| last_a.get(a.executions[i].name.as_str()) == Some(&i));
    let files_b = pair
        .b
        .filter(|&i| last_b.get(b.executions[i].name.as_str()) == Some(&i));
    let (artifacts_a, artifacts_b) = if a.has_files && b.has_files {
        (
            files_a.and_then(|_| a.artifacts.get(&pair.name)),
            files_b.and_then(|_| b.artifacts.get(&pair.name)),
        )
    } else {
        (None, None)
    };
    let prompt_of = |artifacts: Option<&crate::sessions::session::NodeArtifacts>| {
        artifacts
            .and_then(|a| a.prompt.as_ref())
            .map(|file| read_prompt(&file.path))
    };
    let (prompt_a, prompt_b) = (prompt_of(artifacts_a), prompt_of(artifacts_b));
    let prompt = (prompt_a.is_some() || prompt_b.is_some()).then(|| {
        text::diff_texts(
            prompt_a.as_deref().unwrap_or(""),
            prompt_b.as_deref().unwrap_or(""),
            limits,
        )
    });
    let result_a = artifacts_a.and_then(|a| a.result_value.as_ref());
    let result_b = artifacts_b.and_then(|b| b.result_value.as_ref());
    let result = (result_a.is_some() || result_b.is_some()).then(|| diff_values(result_a, result_b, limits));
    let side = |side: &Side, index: Option<usize>| {
        index.map(|i| {
            let execution = &side.executions[i];
            NodeSide {
                status: execution.status,
                elapsed_ms: execution.elapsed_ms,
                started_ms: execution.started_ms,
                usage: execution.usage.clone(),
            }
        })
    };
    let (node_a, node_b) = (side(a, pair.a), side(b, pair.b));
    let change = match (&node_a, &node_b) {
        (None, _) => Change::Added,
        (_, None) => Change::Removed,
        (Some(x), Some(y)) => {
            let differs = x.status != y.status
                || output.changed
                || prompt.as_ref().is_some_and(|p| p.changed)
                || result.as_ref().is_some_and(|r| r.changed);
            if differs {
                Change::Changed
            } else {
                Change::Same
            }
        }
    };
    let usage_a = node_a.as_ref().and_then(|n| n.usage.as_ref());
    let usage_b = node_b.as_ref().and_then(|n| n.usage.as_ref());
    let cost_change = change_label(
        usage_a.and_then(|u| u.cost_usd),
        usage_a.and_then(|u| u.tokens.as_ref()),
        usage_b.and_then(|u| u.cost_usd),
        usage_b.and_then(|u| u.tokens.as_ref()),
    );
    NodeDiff {
        name: pair.name,
        occurrence: pair.occurrence,
        change,
        a: node_a,
        b: node_b,
        cost_change,
        output,
        prompt,
        result,
    }
}

/// Runs both at once (two sides are read in parallel).
fn both<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    std::thread::scope(|scope| {
        let b = scope.spawn(b);
        let a = a();
        (a, b.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// The line hashes of an execution of a side; none for a side without it.
fn execution_hashes(side: &Side, index: Option<usize>) -> &[u64] {
    index.map_or(&[][..], |i| side.hashes.of(Target::Execution(i)))
}

fn read_prompt(path: &std::path::Path) -> String {
    match crate::sessions::untrusted::read_bounded(path, MAX_PROMPT_BYTES) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => format!("(not compared: {error})"),
    }
}

/// One execution of a node on either side or both (indexes into each side's executions).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pair {
    name: String,
    occurrence: usize,
    a: Option<usize>,
    b: Option<usize>,
}

/// Executions matched by name and occurrence, in B's order; those only in A go after the
/// execution before them in A that B has too (or first).
fn align(a: &[Execution], b: &[Execution]) -> Vec<Pair> {
    let keyed = |executions: &[Execution]| -> Vec<((String, usize), usize)> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        executions
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.discarded)
            .map(|(index, e)| {
                let count = seen.entry(&e.name).or_insert(0);
                let key = (e.name.clone(), *count);
                *count += 1;
                (key, index)
            })
            .collect()
    };
    let (a_keys, b_keys) = (keyed(a), keyed(b));
    let in_b: HashMap<&(String, usize), usize> = b_keys.iter().map(|(key, index)| (key, *index)).collect();
    let in_a: HashMap<&(String, usize), usize> = a_keys.iter().map(|(key, index)| (key, *index)).collect();
    let mut only_a_first: Vec<Pair> = Vec::new();
    let mut only_a_after: HashMap<&(String, usize), Vec<Pair>> = HashMap::new();
    let mut previous_shared: Option<&(String, usize)> = None;
    for (key, index) in &a_keys {
        if in_b.contains_key(key) {
            previous_shared = Some(key);
            continue;
        }
        let pair = Pair {
            name: key.0.clone(),
            occurrence: key.1,
            a: Some(*index),
            b: None,
        };
        match previous_shared {
            Some(shared) => only_a_after.entry(shared).or_default().push(pair),
            None => only_a_first.push(pair),
        }
    }
    let mut pairs = only_a_first;
    for (key, index) in &b_keys {
        pairs.push(Pair {
            name: key.0.clone(),
            occurrence: key.1,
            a: in_a.get(key).copied(),
            b: Some(*index),
        });
        pairs.extend(only_a_after.remove(key).unwrap_or_default());
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changes_word_is_its_json_name() {
        for change in [Change::Same, Change::Changed, Change::Added, Change::Removed] {
            assert_eq!(serde_json::to_value(change).unwrap(), change.as_str());
        }
    }

    fn executions(names: &[&str]) -> Vec<Execution> {
        names
            .iter()
            .map(|name| Execution {
                name: (*name).to_owned(),
                status: Status::Success,
                started_ms: None,
                elapsed_ms: None,
                discarded: false,
                usage: None,
            })
            .collect()
    }

    fn described(pairs: &[Pair]) -> Vec<String> {
        pairs
            .iter()
            .map(|p| {
                let side = |i: Option<usize>| i.map_or("-".to_owned(), |i| i.to_string());
                format!("{}#{} {} {}", p.name, p.occurrence, side(p.a), side(p.b))
            })
            .collect()
    }

    #[test]
    fn executions_match_by_name_and_occurrence_in_bs_order() {
        let a = executions(&["draft", "review", "ship"]);
        let b = executions(&["draft", "review", "revise", "review", "ship"]);
        assert_eq!(
            described(&align(&a, &b)),
            [
                "draft#0 0 0",
                "review#0 1 1",
                "revise#0 - 2",
                "review#1 - 3",
                "ship#0 2 4"
            ]
        );
        let removed = align(&executions(&["start", "gone", "end"]), &executions(&["start", "end"]));
        assert_eq!(described(&removed), ["start#0 0 0", "gone#0 1 -", "end#0 2 1"]);
        let first = align(&executions(&["setup", "x"]), &executions(&["x"]));
        assert_eq!(described(&first), ["setup#0 0 -", "x#0 1 0"]);
    }
}
