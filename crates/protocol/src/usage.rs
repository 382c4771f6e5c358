//! What an agent said a node's work used: tokens, models, turns, time and (where the agent says)
//! cost, read from the machine-readable stream the agent printed (docs/cli.md, "The usage
//! object"). Pure: text in, a [`ReportedUsage`] out; which file or output to read, the price
//! table and the roll-ups are the core's (`studio_core::usage`).
//!
//! Formats are told apart by their content, never by an agent's name; anything not recognised
//! is "no usage data" (`None`), never zeros:
//!
//! | format | what is read |
//! |---|---|
//! | Claude Code `--output-format json` / `stream-json` | the `result` event (the last line): `total_cost_usd` (`cost_usd` before 1.0.22), `usage`, `modelUsage`, `num_turns`, `duration_ms` |
//! | Codex `exec --json` | the last `turn.completed` `usage` (a running total for the thread: the last, never a sum); older builds' `token_count` events (`msg.info.total_token_usage`, or the counts on the event itself) |
//! | Gemini CLI `--output-format json` | `stats.models.<model>.tokens` (`prompt`, `candidates`, `cached`, `thoughts`) |
//! | Gemini CLI `--output-format stream-json` | the `result` event's `stats` (per model when it has `models`), the model from the `init` event |
//! | Cursor `stream-json` / `json` | the `result` event: duration only (Cursor documents no usage) |
//!
//! **Per-provider rules**, so that every format lands in one shape ([`Tokens`]): `input` is the
//! input *not* read from a cache. Anthropic's `input_tokens` already excludes the cache;
//! OpenAI's and Gemini's input counts include it, so the cached part is taken out. Thinking
//! (reasoning) tokens are output: `output` includes them and `reasoning` says how many of them
//! there were (Codex's `reasoning_output_tokens` are part of its `output_tokens`; Gemini's
//! `thoughts` are not part of its `candidates`, so they are added).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The engine wraps a node's lines at this many columns (`\n│ ` inserted; docs/protocol.md §2).
pub const WRAP_COLUMNS: usize = 120;

/// A JSON line rejoined from wrapped pieces is at most this long (a result event is small).
const MAX_REJOINED_BYTES: usize = 256 * 1024;

/// Which machine-readable format a node's usage was read from (told by content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum UsageFormat {
    /// Claude Code's `result` event (`json` or `stream-json`).
    ClaudeCode,
    /// Codex `exec --json` (`turn.completed`, or the older `token_count` events).
    Codex,
    /// Gemini CLI `json` (`stats.models`) or `stream-json` (the `result` event's `stats`).
    GeminiCli,
    /// Cursor's `result` event: it documents no usage, so only its duration is known.
    Cursor,
}

/// Token counts in one shape for every provider (see the module doc for the rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Tokens {
    /// Input not read from a cache.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub input: u64,
    /// Input read from the provider's cache.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub cache_read: u64,
    /// Input written to the provider's cache (Anthropic bills it apart).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub cache_write: u64,
    /// Output, thinking included.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub output: u64,
    /// How much of `output` was thinking, where the agent says.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub reasoning: Option<u64>,
}

impl Tokens {
    /// Adds `other`; a sum past `u64::MAX` (forged counts) stays at it rather than wrapping.
    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = match (self.reasoning, other.reasoning) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
    }

    /// Every token counted once (reasoning is part of output), at most `u64::MAX`.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
            .saturating_add(self.output)
    }
}

/// One model's share of a node's usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTokens {
    pub model: String,
    pub tokens: Tokens,
    /// What the agent said this model cost (Claude Code's `modelUsage.<model>.costUSD`).
    pub reported_cost_usd: Option<f64>,
}

/// What an agent's stream said about the work it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportedUsage {
    pub format: UsageFormat,
    /// The whole node's tokens; `None` when the format carries none (Cursor).
    pub tokens: Option<Tokens>,
    /// Per model, where the format says; else one entry when the model is known.
    pub models: Vec<ModelTokens>,
    pub turns: Option<u64>,
    pub duration_ms: Option<u64>,
    /// The cost the agent itself reported, in US dollars.
    pub reported_cost_usd: Option<f64>,
    /// How many times the agent ran in the text (its start or result events): a retried node
    /// printed several, and the last counts.
    pub results_seen: usize,
}

/// Reads the usage at the end of a node's raw stream (the tail of `raw_stream_output.txt`).
/// `from_start`: the text is the whole file (else its first line may be a piece, and is
/// skipped).
pub fn read_raw_stream(text: &str, from_start: bool) -> Option<ReportedUsage> {
    let text = if from_start {
        text
    } else {
        text.find('\n').map_or("", |at| &text[at + 1..])
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    // One JSON document (Claude's, Cursor's or Gemini's `json` format), pretty-printed or not.
    if from_start && trimmed.starts_with('{') {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed) {
            if let Some(usage) = from_document(&map) {
                return Some(usage);
            }
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    from_lines(&lines).or_else(|| gemini_stats_near_end(text))
}

/// The words without which no format's usage reads: a result event (Claude Code, Gemini CLI's
/// `stream-json`, Cursor), Codex's events, Gemini CLI's `json` statistics.
pub const USAGE_WORDS: [&str; 4] = ["\"result\"", "turn.completed", "token_count", "\"stats\""];

/// Reads the usage in a node's output as the engine printed it on stdout, between its markers:
/// the `│ ` prefixes are taken off and lines the engine wrapped at [`WRAP_COLUMNS`] are joined
/// again before the formats are looked for.
pub fn read_node_output<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<ReportedUsage> {
    let lines: Vec<&str> = lines.into_iter().collect();
    // Most nodes print no usage: when no line is wide enough to have been wrapped (so no word of
    // the formats is cut in two) and none holds a word every format's usage needs, there is none,
    // and nothing is unwrapped or parsed (a line's bytes are at least its columns).
    let may_hold_usage = |line: &&str| line.len() >= WRAP_COLUMNS || USAGE_WORDS.iter().any(|word| line.contains(word));
    if !lines.iter().any(may_hold_usage) {
        return None;
    }
    let joined = unwrap_node_output(lines);
    let as_str: Vec<&str> = joined.iter().map(String::as_str).collect();
    if let Some(usage) = from_lines(&as_str) {
        return Some(usage);
    }
    let text = joined.join("\n");
    read_raw_stream(&text, true)
}

/// A node's stdout lines without the engine's `│ ` prefixes and colours, with wrapped lines
/// joined: a line [`WRAP_COLUMNS`] wide that starts a JSON object which does not parse yet is
/// joined with the lines after it until it parses (at most 256 KiB).
pub fn unwrap_node_output<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for line in lines {
        let plain = crate::protocol::strip_ansi(line.as_bytes());
        let plain = String::from_utf8_lossy(&plain);
        let plain = plain.trim_end_matches('\r');
        let wide = plain.chars().count() >= WRAP_COLUMNS;
        let content = without_bars(plain);
        if let Some(mut so_far) = pending.take() {
            so_far.push_str(content);
            if parses(&so_far) || !wide || so_far.len() > MAX_REJOINED_BYTES {
                out.push(so_far);
            } else {
                pending = Some(so_far);
            }
            continue;
        }
        if wide && content.trim_start().starts_with('{') && !parses(content) {
            pending = Some(content.to_owned());
        } else {
            out.push(content.to_owned());
        }
    }
    out.extend(pending);
    out
}

fn parses(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text.trim()).is_ok()
}

/// A line without the leading `│ ` prefixes the engine puts before every line printed inside a
/// node (one bar and at most one space each; a bar alone is a blank nested line).
pub fn without_bars(line: &str) -> &str {
    let mut rest = line;
    while let Some(after) = rest.strip_prefix('│') {
        rest = after.strip_prefix(' ').unwrap_or(after);
    }
    rest
}

/// The usage of a stream of JSON lines: the last decisive event, read from the end. Only lines
/// that can matter are parsed (a stream's lines are mostly the agent's messages).
fn from_lines(lines: &[&str]) -> Option<ReportedUsage> {
    let parse = |line: &str| -> Option<Map<String, Value>> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    };
    let decisive =
        |line: &str| line.contains("\"result\"") || line.contains("turn.completed") || line.contains("token_count");
    let naming = |line: &str| line.contains("\"model\"");
    let (at, found) = lines.iter().enumerate().rev().find_map(|(at, line)| {
        if !decisive(line) {
            return None;
        }
        let object = parse(line)?;
        let model_before = || {
            lines[..at]
                .iter()
                .rev()
                .filter(|line| naming(line))
                .filter_map(|line| parse(line))
                .find_map(|o| init_model(&o).or_else(|| codex_model(&o)))
        };
        let found = if object.get("type").and_then(Value::as_str) == Some("result") {
            from_result(&object, model_before())
        } else if let Some(usage) = codex_turn_completed(&object) {
            Some(codex_usage(usage, model_before(), None))
        } else {
            codex_token_count(&object).map(|(usage, model)| codex_usage(usage, model.or_else(model_before), None))
        }?;
        Some((at, found))
    })?;
    let mut found = found;
    // How many times the agent ran: its start events, or its result events (one per run).
    let (mut starts, mut results) = (0, 0);
    for line in &lines[..=at] {
        let maybe_start = line.contains("init") || line.contains("thread.started") || line.contains("\"sandbox\"");
        if !maybe_start && !line.contains("\"result\"") {
            continue;
        }
        if let Some(o) = parse(line) {
            starts += usize::from(is_start(&o));
            results += usize::from(o.get("type").and_then(Value::as_str) == Some("result"));
        }
    }
    found.results_seen = starts.max(results).max(1);
    Some(found)
}

/// An agent's first event: Claude's and Cursor's `system`/`init`, Gemini's `init`, Codex's
/// `thread.started`, or an older Codex's configuration line.
fn is_start(object: &Map<String, Value>) -> bool {
    match object.get("type").and_then(Value::as_str) {
        Some("init" | "thread.started") => true,
        Some("system") => object.get("subtype").and_then(Value::as_str) == Some("init"),
        Some(_) => false,
        None => object.contains_key("model") && object.contains_key("sandbox"),
    }
}

/// One JSON document: Claude's or Cursor's `json` result, or Gemini's `json` output.
fn from_document(map: &Map<String, Value>) -> Option<ReportedUsage> {
    if map.get("type").and_then(Value::as_str) == Some("result") {
        return from_result(map, None);
    }
    let stats = map.get("stats")?.as_object()?;
    let mut usage = gemini_models(stats)?;
    usage.results_seen = 1;
    Some(usage)
}

/// A `result` event: Gemini's `stream-json` (it has `stats`), Claude Code's (cost or usage),
/// or Cursor's (neither).
fn from_result(map: &Map<String, Value>, init_model: Option<String>) -> Option<ReportedUsage> {
    if let Some(stats) = map.get("stats").and_then(Value::as_object) {
        return gemini_stream_stats(stats, init_model);
    }
    let cost = ["total_cost_usd", "cost_usd", "total_cost"]
        .iter()
        .find_map(|key| number_f64(map, key));
    let usage = map.get("usage").and_then(Value::as_object);
    let model_usage = map.get("modelUsage").and_then(Value::as_object);
    let duration_ms = number(map, "duration_ms");
    if cost.is_none() && usage.is_none() && model_usage.is_none() {
        // Cursor's result: no usage documented. Anything else without a duration is not ours.
        duration_ms?;
        map.get("session_id")?;
        return Some(ReportedUsage {
            format: UsageFormat::Cursor,
            tokens: None,
            models: Vec::new(),
            turns: None,
            duration_ms,
            reported_cost_usd: None,
            results_seen: 1,
        });
    }
    let anthropic = |u: &Map<String, Value>, input: &str, read: &str, write: &str, output: &str| Tokens {
        input: number(u, input).unwrap_or(0),
        cache_read: number(u, read).unwrap_or(0),
        cache_write: number(u, write).unwrap_or(0),
        output: number(u, output).unwrap_or(0),
        reasoning: None,
    };
    let mut models: Vec<ModelTokens> = model_usage
        .into_iter()
        .flatten()
        .filter_map(|(model, value)| {
            let u = value.as_object()?;
            Some(ModelTokens {
                model: model.clone(),
                tokens: anthropic(
                    u,
                    "inputTokens",
                    "cacheReadInputTokens",
                    "cacheCreationInputTokens",
                    "outputTokens",
                ),
                reported_cost_usd: number_f64(u, "costUSD"),
            })
        })
        .collect();
    let tokens = match usage {
        Some(u) => Some(anthropic(
            u,
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        )),
        None if !models.is_empty() => Some(sum(&models)),
        None => None,
    };
    if models.is_empty() {
        let model = map
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(init_model);
        if let (Some(model), Some(tokens)) = (model, tokens) {
            models.push(ModelTokens {
                model,
                tokens,
                reported_cost_usd: cost,
            });
        }
    }
    Some(ReportedUsage {
        format: UsageFormat::ClaudeCode,
        tokens,
        models,
        turns: number(map, "num_turns"),
        duration_ms,
        reported_cost_usd: cost,
        results_seen: 1,
    })
}

fn sum(models: &[ModelTokens]) -> Tokens {
    let mut total = Tokens::default();
    for model in models {
        total.add(&model.tokens);
    }
    total
}

/// Gemini's tokens: `prompt` includes `cached`; `thoughts` are output beside `candidates`.
fn gemini_tokens(prompt: u64, cached: u64, candidates: u64, thoughts: Option<u64>) -> Tokens {
    Tokens {
        input: prompt.saturating_sub(cached),
        cache_read: cached,
        cache_write: 0,
        output: candidates + thoughts.unwrap_or(0),
        reasoning: thoughts,
    }
}

/// Gemini's `json` output: `stats.models.<model>.tokens`.
fn gemini_models(stats: &Map<String, Value>) -> Option<ReportedUsage> {
    let models_map = stats.get("models")?.as_object()?;
    let models: Vec<ModelTokens> = models_map
        .iter()
        .filter_map(|(model, value)| {
            let t = value.get("tokens")?.as_object()?;
            Some(ModelTokens {
                model: model.clone(),
                tokens: gemini_tokens(
                    number(t, "prompt")?,
                    number(t, "cached").unwrap_or(0),
                    number(t, "candidates").unwrap_or(0),
                    number(t, "thoughts"),
                ),
                reported_cost_usd: None,
            })
        })
        .collect();
    if models.is_empty() {
        return None;
    }
    let latency: Option<u64> = models_map
        .values()
        .filter_map(|v| v.get("api")?.get("totalLatencyMs")?.as_u64())
        .reduce(|a, b| a + b);
    let turns = models_map
        .values()
        .filter_map(|v| v.get("api")?.get("totalRequests")?.as_u64())
        .reduce(|a, b| a + b);
    Some(ReportedUsage {
        format: UsageFormat::GeminiCli,
        tokens: Some(sum(&models)),
        models,
        turns,
        duration_ms: latency,
        reported_cost_usd: None,
        results_seen: 1,
    })
}

/// Gemini's `stream-json` result `stats`: totals (`input_tokens` includes `cached`), per model
/// when it has `models`.
fn gemini_stream_stats(stats: &Map<String, Value>, init_model: Option<String>) -> Option<ReportedUsage> {
    let tokens_of = |s: &Map<String, Value>| -> Option<Tokens> {
        let prompt = number(s, "input_tokens")?;
        let cached = number(s, "cached").unwrap_or(0);
        let uncached = number(s, "input").unwrap_or(prompt.saturating_sub(cached));
        Some(Tokens {
            input: uncached,
            cache_read: cached,
            cache_write: 0,
            output: number(s, "output_tokens").unwrap_or(0),
            reasoning: None,
        })
    };
    let tokens = tokens_of(stats)?;
    let mut models: Vec<ModelTokens> = stats
        .get("models")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(model, value)| {
            Some(ModelTokens {
                model: model.clone(),
                tokens: tokens_of(value.as_object()?)?,
                reported_cost_usd: None,
            })
        })
        .collect();
    if models.is_empty() {
        if let Some(model) = init_model {
            models.push(ModelTokens {
                model,
                tokens,
                reported_cost_usd: None,
            });
        }
    }
    Some(ReportedUsage {
        format: UsageFormat::GeminiCli,
        tokens: Some(tokens),
        models,
        turns: None,
        duration_ms: number(stats, "duration_ms"),
        reported_cost_usd: None,
        results_seen: 1,
    })
}

/// The model an `init` (Gemini `stream-json`) or `system`/`init` (Claude, Cursor) event names.
fn init_model(object: &Map<String, Value>) -> Option<String> {
    let kind = object.get("type").and_then(Value::as_str)?;
    let is_init = kind == "init" || (kind == "system" && object.get("subtype").and_then(Value::as_str) == Some("init"));
    is_init
        .then(|| object.get("model").and_then(Value::as_str).map(str::to_owned))
        .flatten()
}

/// A Gemini `json` document too large for the tail to hold whole: its `"stats"` value, read
/// from the last place the key appears (it comes after the response).
fn gemini_stats_near_end(text: &str) -> Option<ReportedUsage> {
    let at = text.rfind("\"stats\"")?;
    let rest = text[at + "\"stats\"".len()..].trim_start().strip_prefix(':')?;
    let value = serde_json::Deserializer::from_str(rest)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    let mut usage = gemini_models(value.as_object()?)?;
    usage.results_seen = 1;
    Some(usage)
}

/// Codex `exec --json`: `{"type":"turn.completed","usage":{…}}`.
fn codex_turn_completed(object: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if object.get("type").and_then(Value::as_str) != Some("turn.completed") {
        return None;
    }
    object.get("usage")?.as_object()
}

/// Older Codex `exec --json`: `{"id":…,"msg":{"type":"token_count",…}}`, the counts either on
/// the event or in `info.total_token_usage` (a running total).
fn codex_token_count(object: &Map<String, Value>) -> Option<(&Map<String, Value>, Option<String>)> {
    let msg = object.get("msg").and_then(Value::as_object).unwrap_or(object);
    if msg.get("type").and_then(Value::as_str) != Some("token_count") {
        return None;
    }
    let model = msg.get("model").and_then(Value::as_str).map(str::to_owned);
    if let Some(info) = msg.get("info") {
        let total = info.get("total_token_usage")?.as_object()?;
        return Some((total, model));
    }
    number(msg, "input_tokens")?;
    Some((msg, model))
}

/// The model an older Codex build named on its first line (`{"model":…,…}`) or in a
/// `session_configured` event.
fn codex_model(object: &Map<String, Value>) -> Option<String> {
    let msg = object.get("msg").and_then(Value::as_object).unwrap_or(object);
    let model = msg.get("model").and_then(Value::as_str)?;
    let kind = msg.get("type").and_then(Value::as_str);
    matches!(kind, None | Some("session_configured" | "turn_context")).then(|| model.to_owned())
}

/// Codex counts: `input_tokens` includes `cached_input_tokens`; `output_tokens` includes
/// `reasoning_output_tokens`.
fn codex_usage(usage: &Map<String, Value>, model: Option<String>, turns: Option<u64>) -> ReportedUsage {
    let input = number(usage, "input_tokens").unwrap_or(0);
    let cached = number(usage, "cached_input_tokens").unwrap_or(0);
    let tokens = Tokens {
        input: input.saturating_sub(cached),
        cache_read: cached,
        cache_write: 0,
        output: number(usage, "output_tokens").unwrap_or(0),
        reasoning: number(usage, "reasoning_output_tokens"),
    };
    ReportedUsage {
        format: UsageFormat::Codex,
        tokens: Some(tokens),
        models: model
            .into_iter()
            .map(|model| ModelTokens {
                model,
                tokens,
                reported_cost_usd: None,
            })
            .collect(),
        turns,
        duration_ms: None,
        reported_cost_usd: None,
        results_seen: 1,
    }
}

/// A count: a non-negative integer (a float that is one too: some agents write `12.0`).
fn number(map: &Map<String, Value>, key: &str) -> Option<u64> {
    let value = map.get(key)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
            .map(|f| f as u64)
    })
}

fn number_f64(map: &Map<String, Value>, key: &str) -> Option<f64> {
    map.get(key)?.as_f64().filter(|f| f.is_finite() && *f >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_wraps_are_undone() {
        let json = format!(
            r#"{{"type":"result","total_cost_usd":0.5,"usage":{{"input_tokens":3,"output_tokens":4}},"result":"{}"}}"#,
            "x".repeat(300)
        );
        let line = format!("│ {json}");
        let mut pieces = Vec::new();
        let chars: Vec<char> = line.chars().collect();
        pieces.push(chars[..WRAP_COLUMNS].iter().collect::<String>());
        for chunk in chars[WRAP_COLUMNS..].chunks(WRAP_COLUMNS - 2) {
            pieces.push(format!("│ {}", chunk.iter().collect::<String>()));
        }
        let lines = unwrap_node_output(pieces.iter().map(String::as_str));
        assert_eq!(lines, vec![json]);
        let usage = read_node_output(pieces.iter().map(String::as_str)).unwrap();
        assert_eq!(usage.reported_cost_usd, Some(0.5));
    }

    #[test]
    fn unrecognised_text_is_no_usage() {
        assert_eq!(read_raw_stream("hello\n{\"answer\":1}\n", true), None);
        assert_eq!(read_raw_stream("{\"type\":\"result\"}", true), None);
        assert_eq!(read_raw_stream("", true), None);
    }
}
