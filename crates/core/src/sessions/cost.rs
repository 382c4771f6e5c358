//! What a node's work used and cost ([`NodeUsage`]: one shape for every agent), and the totals
//! over a run's or a session's nodes ([`UsageTotal`]); docs/cli.md, "The usage object".
//!
//! - **Where from**: what the agent printed, read by `studio_protocol::usage` (formats told apart
//!   by content). The node's `raw_stream_output.txt` is read from its end only (the result event
//!   is last): its last [`FIRST_TAIL_BYTES`], then, when they hold no usage, its last
//!   [`RAW_TAIL_BYTES`]. A listing reads it again only when the file's fingerprint (its time and
//!   size, in the session folder's fingerprint: `session::fingerprint`) changed. The engine
//!   overwrites the file at each attempt, so a retried node's usage is its last attempt's; where
//!   a node's output shows several results, [`NodeUsage::last_attempt_only`] says so.
//! - **Cost**: the cost the agent reported wins ([`CostSource::Reported`]; Claude Code's is an
//!   API-equivalent estimate by Anthropic's own account, and says so in
//!   [`NodeUsage::api_equivalent`]). Else it is estimated from the price table shipped in
//!   `crates/core/data/model-prices.json` (LiteLLM's, MIT; its version in
//!   [`price_table_version`]), per model, each kind of token at its own price (a cache price the
//!   table lacks is taken as the input price); tiered prices (above 200k tokens per request)
//!   are not applied, as the agents report totals, not requests. A model the table does not know
//!   makes the cost unknown ("–"), never 0.
//! - **Totals**: a total over nodes of which some have no cost is a lower bound, and says so:
//!   "≥ $X (n of m nodes priced)" ([`UsageTotal::label`]).
//! - **Words**: every surface (the CLI, the window) shows the labels made here
//!   ([`NodeUsage::cost_label`], [`UsageTotal::label`], [`tokens_label`]), sent with the numbers:
//!   one owner for how a cost reads.
//! - **From stdout**: a node with no raw stream (a failed agent node, a node of a captured CI
//!   log) may still have printed its agent's result on stdout between its markers:
//!   [`OutputUsageReader`] reads it as a run's output goes by; the store keeps what it found per
//!   run and node, and the session model lays it under the raw streams' word.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::sessions::untrusted;
use studio_protocol::usage::{self, ModelTokens, ReportedUsage, Tokens, UsageFormat};

/// A raw stream is read from its end, this much first (most result events fit).
pub const FIRST_TAIL_BYTES: u64 = 16 * 1024;

/// At most this much of a raw stream's end is read (the result event is last).
pub const RAW_TAIL_BYTES: u64 = 256 * 1024;

/// Where a node's cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum CostSource {
    /// The agent said what it cost.
    Reported,
    /// Computed from the price table.
    Estimated,
    /// Neither: no cost reported and a model the table does not know (or none named).
    Unknown,
}

/// One node's usage, in one shape whatever the agent (docs/cli.md, "The usage object").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NodeUsage {
    /// The format it was read from.
    pub format: UsageFormat,
    /// Its tokens; `None` where the format reports none (Cursor).
    pub tokens: Option<Tokens>,
    /// The models it used, as the agent named them.
    pub models: Vec<String>,
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub turns: Option<u64>,
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub duration_ms: Option<u64>,
    /// In US dollars; `None` when unknown (never 0 for "unknown").
    pub cost_usd: Option<f64>,
    pub cost_source: CostSource,
    /// The reported cost is what the tokens would cost at API prices (Claude Code's), not a bill.
    pub api_equivalent: bool,
    /// The node ran more than once and this is its last attempt's usage only.
    pub last_attempt_only: bool,
    /// `$0.0123`, `~$0.0123` (estimated) or `–`: what every surface shows of the cost.
    pub cost_label: String,
    /// `1,234 tokens (in 10, cache read 1,000, cache write 24, out 200)`, or `no tokens
    /// reported`.
    pub tokens_label: String,
}

// Costs are finite numbers (never NaN): equality is total.
impl Eq for NodeUsage {}

/// The total over a run's or a session's nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UsageTotal {
    /// The sum over the nodes that reported tokens.
    pub tokens: Tokens,
    /// The sum over the priced nodes; `None` when none is.
    pub cost_usd: Option<f64>,
    /// Every node counted (m).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub nodes: usize,
    /// The nodes that reported any usage.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub nodes_with_usage: usize,
    /// The nodes with a cost, reported or estimated (n): fewer than `nodes` makes `cost_usd` a
    /// lower bound.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub nodes_priced: usize,
    /// `$0.42`, `≥ $0.42 (2 of 3 nodes priced)` or `–` ([`UsageTotal::label`]).
    pub label: String,
    /// `$0.42`, `≥ $0.42` or `–`, for a table's column ([`UsageTotal::short_label`]).
    pub short_label: String,
    /// The tokens, as [`tokens_label`] words them.
    pub tokens_label: String,
}

impl Eq for UsageTotal {}

impl UsageTotal {
    /// The total over nodes, each with its usage if it has one; `None` when none has any.
    pub fn of<'a>(nodes: impl IntoIterator<Item = Option<&'a NodeUsage>>) -> Option<UsageTotal> {
        let mut total = UsageTotal::nothing();
        for node in nodes {
            total.nodes += 1;
            let Some(usage) = node else { continue };
            total.nodes_with_usage += 1;
            if let Some(tokens) = &usage.tokens {
                total.tokens.add(tokens);
            }
            if let Some(cost) = usage.cost_usd {
                total.nodes_priced += 1;
                total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + cost);
            }
        }
        total.finish()
    }

    /// The total over groups of nodes (the sessions of a workspace): each its node count and its
    /// total, if any node of it has usage; `None` when none has.
    pub fn sum<'a>(groups: impl IntoIterator<Item = (usize, Option<&'a UsageTotal>)>) -> Option<UsageTotal> {
        let mut sum = UsageTotal::nothing();
        for (nodes, total) in groups {
            sum.nodes += nodes;
            let Some(total) = total else { continue };
            sum.tokens.add(&total.tokens);
            sum.nodes_with_usage += total.nodes_with_usage;
            sum.nodes_priced += total.nodes_priced;
            if let Some(cost) = total.cost_usd {
                sum.cost_usd = Some(sum.cost_usd.unwrap_or(0.0) + cost);
            }
        }
        sum.finish()
    }

    /// A total before anything is counted.
    fn nothing() -> UsageTotal {
        UsageTotal {
            tokens: Tokens::default(),
            cost_usd: None,
            nodes: 0,
            nodes_with_usage: 0,
            nodes_priced: 0,
            label: String::new(),
            short_label: String::new(),
            tokens_label: String::new(),
        }
    }

    /// The labels of a total just counted; `None` when no node has usage.
    fn finish(mut self) -> Option<UsageTotal> {
        if self.nodes_with_usage == 0 {
            return None;
        }
        self.label = self.make_label();
        self.short_label = self.make_short_label();
        self.tokens_label = tokens_label(&self.tokens);
        Some(self)
    }

    /// Every node has a cost: the total is exact.
    pub fn is_complete(&self) -> bool {
        self.cost_usd.is_some() && self.nodes_priced == self.nodes
    }

    /// `$0.42`, `≥ $0.42` (not every node priced), or `–` (none): for a table column.
    fn make_short_label(&self) -> String {
        match self.cost_usd {
            None => "–".to_owned(),
            Some(cost) if self.is_complete() => dollars(cost),
            Some(cost) => format!("≥ {}", dollars(cost)),
        }
    }

    /// `$0.42`, or `≥ $0.42 (2 of 3 nodes priced)`, or `–` when no node is priced.
    fn make_label(&self) -> String {
        match self.cost_usd {
            None => "–".to_owned(),
            Some(cost) if self.is_complete() => dollars(cost),
            Some(cost) => format!(
                "≥ {} ({} of {} nodes priced)",
                dollars(cost),
                self.nodes_priced,
                self.nodes
            ),
        }
    }
}

/// Dollars as the surfaces print them: cents from $1, four decimals below.
pub fn dollars(cost: f64) -> String {
    if cost >= 1.0 {
        format!("${cost:.2}")
    } else {
        format!("${cost:.4}")
    }
}

/// `1,234 tokens (in 10, cache read 1,000, cache write 24, out 200, of which thinking 50)`.
pub fn tokens_label(tokens: &Tokens) -> String {
    let reasoning = tokens
        .reasoning
        .map(|r| format!(", of which thinking {}", thousands(r)))
        .unwrap_or_default();
    format!(
        "{} tokens (in {}, cache read {}, cache write {}, out {}{reasoning})",
        thousands(tokens.total()),
        thousands(tokens.input),
        thousands(tokens.cache_read),
        thousands(tokens.cache_write),
        thousands(tokens.output)
    )
}

pub use crate::vocabulary::visible::thousands;

/// No node of an agent costs this much: a figure past it (or negative, or not a number) was
/// forged or misread, and is taken as not reported rather than summed into `$inf`.
pub const MAX_PLAUSIBLE_NODE_COST_USD: f64 = 100_000.0;

fn plausible(cost: f64) -> bool {
    cost.is_finite() && (0.0..=MAX_PLAUSIBLE_NODE_COST_USD).contains(&cost)
}

impl NodeUsage {
    /// The shape of what an agent reported, its cost reported or estimated.
    pub fn from_reported(reported: ReportedUsage) -> NodeUsage {
        let (cost_usd, cost_source) = match reported.reported_cost_usd.filter(|cost| plausible(*cost)) {
            Some(cost) => (Some(cost), CostSource::Reported),
            None => match estimate(&reported.models).filter(|cost| plausible(*cost)) {
                Some(cost) => (Some(cost), CostSource::Estimated),
                None => (None, CostSource::Unknown),
            },
        };
        let cost_label = match (cost_usd, cost_source) {
            (Some(cost), CostSource::Estimated) => format!("~{}", dollars(cost)),
            (Some(cost), _) => dollars(cost),
            (None, _) => "–".to_owned(),
        };
        NodeUsage {
            format: reported.format,
            tokens_label: reported
                .tokens
                .as_ref()
                .map_or_else(|| "no tokens reported".to_owned(), tokens_label),
            tokens: reported.tokens,
            models: reported.models.iter().map(|m| m.model.clone()).collect(),
            turns: reported.turns,
            duration_ms: reported.duration_ms,
            cost_usd,
            cost_source,
            api_equivalent: cost_source == CostSource::Reported && reported.format == UsageFormat::ClaudeCode,
            last_attempt_only: reported.results_seen > 1,
            cost_label,
        }
    }
}

/// The usage of a node from the end of its raw stream (`<node>/raw_stream_output.txt`); `None`
/// when there is none (a custom-code node), or nothing in it is a known format.
pub fn read_node_usage(raw_stream: &Path) -> Option<NodeUsage> {
    let path = raw_stream;
    let (bytes, whole) = untrusted::read_suffix(path, FIRST_TAIL_BYTES).ok()?;
    let found = usage::read_raw_stream(&String::from_utf8_lossy(&bytes), whole);
    let found = match found {
        Some(found) => Some(found),
        None if !whole => {
            let (bytes, whole) = untrusted::read_suffix(path, RAW_TAIL_BYTES).ok()?;
            usage::read_raw_stream(&String::from_utf8_lossy(&bytes), whole)
        }
        None => None,
    };
    found.map(NodeUsage::from_reported)
}

/// The usage in a node's output as printed on stdout between its markers (`│ ` prefixes and
/// the engine's wraps undone).
pub fn node_output_usage<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<NodeUsage> {
    usage::read_node_output(lines).map(NodeUsage::from_reported)
}

/// The usage each node of a run printed on stdout, read as the run's output goes by
/// ([`line`](Self::line), then [`finish`](Self::finish)): a node's lines come in stretches (its
/// children's lines are theirs: each line belongs to the innermost node running when it came);
/// the end of each stretch, at most [`RAW_TAIL_BYTES`] of it, is read by [`node_output_usage`].
/// A node's usage is the last one found; one found in two stretches (a node run again) is its
/// last attempt's only. Memory: one stretch's tail, and one usage per node.
/// Keyed by node name (`String`, the store's) or by anything else a caller tells nodes apart
/// by (a comparison's execution index).
///
/// While a stretch goes on, its usage is read as soon as it is printed ([`so_far`](Self::so_far),
/// for a budget): from a line holding a word of a usage format, the lines from there are read
/// when one ends (a narrow line, or one that ends a JSON object; a few tries at most, until a
/// narrow line), at most [`RAW_TAIL_BYTES`] of them.
#[derive(Debug)]
pub struct OutputUsageReader<K = String> {
    node: Option<K>,
    /// The stretch's lines so far, each ended by `\n`: its end, between [`RAW_TAIL_BYTES`] and
    /// twice that (one buffer, reused: a line costs a copy, never an allocation).
    stretch: String,
    found: HashMap<K, NodeUsage>,
    /// Where in `stretch` the line with a usage format's word began, and how many tries were
    /// made to read it since.
    pending: Option<(usize, u8)>,
    /// The going stretch's usage as read so far.
    current: Option<NodeUsage>,
    /// Counts the changes of what [`so_far`](Self::so_far) gives.
    revision: u64,
    /// The executions going (begun, not ended), each with what its stretches said so far
    /// (a node's lines before and after an inner node's are two stretches).
    executions: HashMap<K, Option<NodeUsage>>,
}

/// Tries at reading a pending usage line before a narrow line comes.
const MAX_EARLY_TRIES: u8 = 8;

impl<K: Eq + Hash> Default for OutputUsageReader<K> {
    fn default() -> Self {
        OutputUsageReader {
            node: None,
            stretch: String::new(),
            found: HashMap::new(),
            pending: None,
            current: None,
            revision: 0,
            executions: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> OutputUsageReader<K> {
    pub fn new() -> OutputUsageReader<K> {
        OutputUsageReader::default()
    }

    /// One stdout line, with the node running when it came (`None`: outside any node).
    pub fn line<Q>(&mut self, node: Option<&Q>, text: &str)
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
    {
        if self.node.as_ref().map(Borrow::borrow) != node {
            self.end_stretch();
            self.node = node.map(ToOwned::to_owned);
        }
        if self.node.is_none() {
            return;
        }
        let line_start = self.stretch.len();
        self.stretch.push_str(text);
        self.stretch.push('\n');
        if self.stretch.len() > 2 * RAW_TAIL_BYTES as usize {
            let keep_from = tail_start(&self.stretch);
            self.stretch.drain(..keep_from);
            self.pending = None;
        }
        self.read_early(line_start.min(self.stretch.len()), text);
    }

    /// The going stretch's usage read as soon as a line that may end it came (see the type).
    fn read_early(&mut self, line_start: usize, text: &str) {
        if self.pending.is_none() && usage::USAGE_WORDS.iter().any(|word| text.contains(word)) {
            self.pending = Some((line_start, 0));
        }
        let Some((from, tries)) = self.pending else { return };
        let narrow = text.len() < usage::WRAP_COLUMNS;
        if self.stretch.len() - from > RAW_TAIL_BYTES as usize {
            self.pending = None;
            return;
        }
        if !narrow && (tries >= MAX_EARLY_TRIES || !text.trim_end().ends_with('}')) {
            return;
        }
        self.pending = if narrow { None } else { Some((from, tries + 1)) };
        if let Some(usage) = node_output_usage(self.stretch[from..].lines()) {
            if self.current.as_ref() != Some(&usage) {
                self.current = Some(usage);
                self.revision += 1;
            }
            self.pending = None;
        }
    }

    /// Ends the going stretch; what it said its node used, when it said.
    fn end_stretch(&mut self) -> Option<&NodeUsage> {
        self.pending = None;
        if self.current.take().is_some() {
            self.revision += 1;
        }
        let node = self.node.take()?;
        let tail = &self.stretch[tail_start(&self.stretch)..];
        let said = node_output_usage(tail.lines());
        self.stretch.clear();
        let mut usage = said?;
        usage.last_attempt_only |= self.found.contains_key(&node);
        self.revision += 1;
        if let Some(going) = self.executions.get_mut(&node) {
            *going = Some(usage.clone());
        }
        Some(self.found.entry(node).insert_entry(usage).into_mut())
    }

    /// An execution of node `node` began: [`end_node`](Self::end_node) says what it used.
    pub fn begin_node<Q>(&mut self, node: &Q)
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
    {
        self.executions.insert(node.to_owned(), None);
    }

    /// The execution of node `node` begun last ended (its last line came): what its lines said
    /// it used, when they said (a live span carries it); the next line starts a stretch of its
    /// own.
    pub fn end_node<Q>(&mut self, node: &Q) -> Option<NodeUsage>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        if self.node.as_ref().map(Borrow::borrow) == Some(node) {
            self.end_stretch();
        }
        self.executions.remove(node).flatten()
    }

    /// The usage of each node so far: what its last stretch said, the going stretch's as read
    /// so far in place of its node's.
    pub fn so_far(&self) -> impl Iterator<Item = &NodeUsage> {
        let current_node = self.current.as_ref().and(self.node.as_ref());
        self.found
            .iter()
            .filter(move |(node, _)| Some(*node) != current_node)
            .map(|(_, usage)| usage)
            .chain(self.current.as_ref())
    }

    /// Changes each time what [`so_far`](Self::so_far) gives may have changed.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The usage found per node.
    pub fn finish(mut self) -> HashMap<K, NodeUsage> {
        self.end_stretch();
        self.found
    }
}

/// Where the whole lines of the last [`RAW_TAIL_BYTES`] of `lines` (each ended by `\n`) begin:
/// the last line whole when it alone is longer.
fn tail_start(lines: &str) -> usize {
    let Some(cut) = lines.len().checked_sub(RAW_TAIL_BYTES as usize) else {
        return 0;
    };
    let last_line = lines[..lines.len() - 1].rfind('\n').map_or(0, |at| at + 1);
    match lines.as_bytes()[cut..].iter().position(|&b| b == b'\n') {
        Some(at) if cut + at < last_line => cut + at + 1,
        _ => last_line,
    }
}

/// How B's cost and tokens differ from A's: `+$0.0123, +1,234 tokens` (`−` for less); the cost
/// only when both are known, the tokens only when both reported some; `None` when neither.
pub fn change_label(
    a_cost: Option<f64>,
    a_tokens: Option<&Tokens>,
    b_cost: Option<f64>,
    b_tokens: Option<&Tokens>,
) -> Option<String> {
    let mut parts = Vec::new();
    if let (Some(a), Some(b)) = (a_cost, b_cost) {
        let delta = b - a;
        let sign = if delta < 0.0 { "−" } else { "+" };
        parts.push(format!("{sign}{}", dollars(delta.abs())));
    }
    if let (Some(a), Some(b)) = (a_tokens, b_tokens) {
        let (a, b) = (a.total(), b.total());
        let sign = if b < a { "−" } else { "+" };
        parts.push(format!("{sign}{} tokens", thousands(a.abs_diff(b))));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// One model's prices, in US dollars per token.
#[derive(Debug, Clone, Copy, Deserialize)]
struct Prices {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Deserialize)]
struct PriceFile {
    litellm_version: String,
    models: HashMap<String, Prices>,
}

/// Names the agents use for a model that the table knows under another (Claude Code's
/// `--model` aliases, as of the table's version).
const ALIASES: [(&str, &str); 6] = [
    ("sonnet", "claude-sonnet-4-5"),
    ("opus", "claude-opus-4-5"),
    ("haiku", "claude-haiku-4-5"),
    ("opusplan", "claude-opus-4-5"),
    ("codex", "gpt-5-codex"),
    ("gemini-pro", "gemini-2.5-pro"),
];

fn price_file() -> &'static PriceFile {
    static TABLE: OnceLock<PriceFile> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/model-prices.json")).expect("the shipped price table parses")
    })
}

/// The LiteLLM version the shipped price table comes from.
pub fn price_table_version() -> &'static str {
    &price_file().litellm_version
}

/// The prices of a model, by its name as an agent wrote it: as it is, without a provider prefix
/// (`anthropic/…`, `models/…`), a context suffix (`[1m]`), a version after `@`, through the
/// aliases, or without a date suffix (`-20250929`, `-2025-08-07`).
fn prices_of(model: &str) -> Option<Prices> {
    let models = &price_file().models;
    let mut name = model.trim().to_ascii_lowercase();
    if let Some(at) = name.rfind('/') {
        name = name[at + 1..].to_owned();
    }
    for cut in ['[', '@'] {
        if let Some(at) = name.find(cut) {
            name.truncate(at);
        }
    }
    if let Some((_, target)) = ALIASES.iter().find(|(alias, _)| *alias == name) {
        name = (*target).to_owned();
    }
    if let Some(prices) = models.get(&name) {
        return Some(*prices);
    }
    let undated = strip_date(&name)?;
    models.get(undated).copied()
}

fn strip_date(name: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let (head, tail) = name.rsplit_once('-')?;
    if tail.len() == 8 && digits(tail) {
        return Some(head);
    }
    // -YYYY-MM-DD
    let mut parts = name.rsplitn(4, '-');
    let (day, month, year, head) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (day.len() == 2 && month.len() == 2 && year.len() == 4 && digits(day) && digits(month) && digits(year))
        .then_some(head)
}

/// The estimated cost of what the models used; `None` when there is no model or one the table
/// does not know.
fn estimate(models: &[ModelTokens]) -> Option<f64> {
    if models.is_empty() {
        return None;
    }
    models.iter().try_fold(0.0, |sum, model| {
        let prices = prices_of(&model.model)?;
        let t = &model.tokens;
        Some(
            sum + t.input as f64 * prices.input
                + t.cache_read as f64 * prices.cache_read.unwrap_or(prices.input)
                + t.cache_write as f64 * prices.cache_write.unwrap_or(prices.input)
                + t.output as f64 * prices.output,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_found_through_prefixes_aliases_and_dates() {
        let sonnet = prices_of("claude-sonnet-4-5").unwrap();
        for name in [
            "claude-sonnet-4-5-20250929",
            "anthropic/claude-sonnet-4-5",
            "sonnet",
            "claude-sonnet-4-5[1m]",
            "Claude-Sonnet-4-5",
        ] {
            let found = prices_of(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(found.input, sonnet.input, "{name}");
        }
        assert!(prices_of("gpt-5-2025-08-07").is_some());
        assert!(prices_of("models/gemini-2.5-pro").is_some());
        assert!(prices_of("my-local-llama").is_none());
        assert!(!price_table_version().is_empty());
    }

    /// What a live span carries: the usage of the execution that ended, read from its own
    /// stretches (a parent's result before its inner node's lines counts), none for an execution
    /// that printed none (not an earlier execution's).
    #[test]
    fn an_ended_execution_says_what_its_own_lines_said_it_used() {
        let result = include_str!("../../../../tests/fixtures/usage/claude-code-json.json").trim();
        let printed = format!("│ {result}");
        let mut reader = OutputUsageReader::<String>::new();
        reader.begin_node("parent");
        reader.line(Some("parent"), &printed);
        reader.begin_node("child");
        reader.line(Some("child"), "│ │ working");
        assert_eq!(reader.end_node("child"), None, "the child printed no usage");
        reader.line(Some("parent"), "│ └ done");
        let parent = reader
            .end_node("parent")
            .expect("the parent's result, before its child");
        assert_eq!(parent.cost_usd, Some(0.0123));
        reader.begin_node("parent");
        reader.line(Some("parent"), "│ run again, quietly");
        assert_eq!(reader.end_node("parent"), None, "not the first execution's usage");
        assert_eq!(
            reader.finish()["parent"].cost_usd,
            Some(0.0123),
            "the run's record keeps it"
        );
    }

    #[test]
    fn output_usage_is_read_per_node_stretch_and_a_second_result_is_a_retry() {
        let result = include_str!("../../../../tests/fixtures/usage/claude-code-json.json").trim();
        let printed = format!("│ {result}");
        let mut reader = OutputUsageReader::<String>::new();
        reader.line(Some("parent"), "│ starting the child");
        reader.line(Some("child"), &printed);
        reader.line(Some("parent"), &printed); // after its child: its own result
        reader.line(None::<&str>, "◆ between runs of the parent");
        reader.line(Some("quiet"), "│ no agent here");
        reader.line(Some("parent"), "│ run again");
        reader.line(Some("parent"), &printed);
        let found = reader.finish();
        let mut names: Vec<&str> = found.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["child", "parent"], "a node that printed no usage has none");
        assert_eq!(found["child"].cost_usd, Some(0.0123));
        assert!(!found["child"].last_attempt_only);
        assert!(found["parent"].last_attempt_only, "the parent printed a result twice");
        assert_eq!(found["parent"].cost_label, "$0.0123");
    }

    #[test]
    fn a_stretch_longer_than_the_tail_is_read_from_its_end() {
        let result = include_str!("../../../../tests/fixtures/usage/claude-code-json.json").trim();
        let mut reader = OutputUsageReader::<String>::new();
        reader.line(Some("node"), &format!("│ {result}"));
        let filler = "x".repeat(1024);
        for _ in 0..(RAW_TAIL_BYTES / 1024 + 8) {
            reader.line(Some("node"), &filler);
        }
        assert!(reader.stretch.len() <= 2 * RAW_TAIL_BYTES as usize + filler.len() + 1);
        assert!(reader.finish().is_empty(), "the result fell out of the tail");
        let mut reader = OutputUsageReader::<String>::new();
        for _ in 0..(RAW_TAIL_BYTES / 1024 + 8) {
            reader.line(Some("node"), &filler);
        }
        reader.line(Some("node"), &format!("│ {result}"));
        assert_eq!(reader.finish()["node"].cost_usd, Some(0.0123));
    }

    #[test]
    fn a_change_says_more_or_less_of_what_both_sides_know() {
        let tokens = |output| Tokens {
            output,
            ..Tokens::default()
        };
        let (few, many) = (tokens(200), tokens(1_434));
        assert_eq!(
            change_label(Some(0.5), Some(&few), Some(0.0123), Some(&many)).as_deref(),
            Some("−$0.4877, +1,234 tokens")
        );
        assert_eq!(
            change_label(Some(1.0), None, Some(2.5), None).as_deref(),
            Some("+$1.50")
        );
        assert_eq!(
            change_label(None, Some(&many), Some(2.5), Some(&few)).as_deref(),
            Some("−1,234 tokens")
        );
        assert_eq!(change_label(None, None, Some(2.5), Some(&few)), None);
    }

    #[test]
    fn forged_figures_neither_wrap_nor_sum_to_infinity() {
        let huge = Tokens {
            input: u64::MAX - 1,
            output: u64::MAX,
            ..Tokens::default()
        };
        let reported = |cost: f64| ReportedUsage {
            format: UsageFormat::ClaudeCode,
            tokens: Some(huge),
            models: Vec::new(),
            turns: None,
            duration_ms: None,
            reported_cost_usd: Some(cost),
            results_seen: 1,
        };
        for absurd in [f64::INFINITY, f64::NAN, -1.0, 1e300] {
            let usage = NodeUsage::from_reported(reported(absurd));
            assert_eq!(
                (usage.cost_usd, usage.cost_source),
                (None, CostSource::Unknown),
                "{absurd}"
            );
            assert_eq!(usage.cost_label, "–");
        }
        let a = NodeUsage::from_reported(reported(2.0));
        let b = NodeUsage::from_reported(reported(3.0));
        let total = UsageTotal::of([Some(&a), Some(&b)]).unwrap();
        assert_eq!(total.tokens.input, u64::MAX, "saturated, not wrapped");
        assert_eq!(total.tokens.total(), u64::MAX);
        assert_eq!(total.cost_usd, Some(5.0));
        assert!(!total.label.contains("inf"), "{}", total.label);
    }

    #[test]
    fn thousands_are_separated() {
        let cases = [(0, "0"), (999, "999"), (1_000, "1,000"), (1_234_567, "1,234,567")];
        for (n, text) in cases {
            assert_eq!(thousands(n), text);
        }
    }

    #[test]
    fn an_unknown_model_has_no_estimate_never_zero() {
        let tokens = Tokens {
            input: 10,
            output: 10,
            ..Tokens::default()
        };
        let model = |name: &str| ModelTokens {
            model: name.into(),
            tokens,
            reported_cost_usd: None,
        };
        assert_eq!(estimate(&[model("my-local-llama")]), None);
        assert_eq!(estimate(&[model("gpt-5"), model("my-local-llama")]), None);
        assert_eq!(estimate(&[]), None);
        let known = estimate(&[model("gpt-5")]).unwrap();
        assert!((known - (10.0 * 1.25e-6 + 10.0 * 1e-5)).abs() < 1e-12, "{known}");
    }

    #[test]
    fn totals_over_partly_priced_nodes_are_lower_bounds() {
        let node = |cost: Option<f64>| NodeUsage {
            format: UsageFormat::Codex,
            tokens: Some(Tokens {
                input: 1,
                output: 2,
                ..Tokens::default()
            }),
            models: Vec::new(),
            turns: None,
            duration_ms: None,
            cost_usd: cost,
            cost_source: if cost.is_some() {
                CostSource::Estimated
            } else {
                CostSource::Unknown
            },
            api_equivalent: false,
            last_attempt_only: false,
            cost_label: String::new(),
            tokens_label: String::new(),
        };
        let (a, b, c) = (node(Some(0.25)), node(None), node(Some(1.5)));
        let total = UsageTotal::of([Some(&a), Some(&b), None, Some(&c)]).unwrap();
        assert_eq!((total.nodes, total.nodes_with_usage, total.nodes_priced), (4, 3, 2));
        assert_eq!(total.tokens.total(), 9);
        assert_eq!(total.label, "≥ $1.75 (2 of 4 nodes priced)");
        assert_eq!(total.short_label, "≥ $1.75");
        assert_eq!(
            total.tokens_label,
            "9 tokens (in 3, cache read 0, cache write 0, out 6)"
        );
        let exact = UsageTotal::of([Some(&a), Some(&c)]).unwrap();
        assert_eq!((exact.label.as_str(), exact.short_label.as_str()), ("$1.75", "$1.75"));
        let none = UsageTotal::of([Some(&b)]).unwrap();
        assert_eq!((none.label.as_str(), none.short_label.as_str()), ("–", "–"));
        assert_eq!(UsageTotal::of([None, None]), None);
    }
}
