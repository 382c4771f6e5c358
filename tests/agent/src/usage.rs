//! What a node's coding agent prints about the work it did, in the shapes Claude Code, Codex and
//! Gemini CLI print it (docs/cli.md, "The usage object"; `tests/fixtures/usage` has one of each,
//! with where each shape comes from). `--usage plan=claude-code,review=codex` makes those nodes
//! print such a stream inside the node and write it as their `raw_stream_output.txt`.
//!
//! The figures are made up but steady: the same node and prompt always report the same tokens,
//! and another prompt other ones (so two runs compared differ in cost where their prompts do).

use serde_json::{json, Value};

/// A coding agent's machine-readable output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code `-p --output-format stream-json --verbose`: it reports its own cost.
    ClaudeCode,
    /// Codex `exec --json`: tokens, and no model named, so its cost cannot be known.
    Codex,
    /// Gemini CLI `--output-format stream-json`: tokens and the model, no cost (the studio
    /// estimates it from its price table).
    GeminiCli,
}

/// Claude Code's model here, and its prices per token (input, output, cache read, cache write),
/// from which it reports its cost.
const CLAUDE_MODEL: &str = "claude-sonnet-4-5";
const CLAUDE_PRICES: [f64; 4] = [3e-6, 15e-6, 0.3e-6, 3.75e-6];
const GEMINI_MODEL: &str = "gemini-2.5-flash";

impl Format {
    fn parse(name: &str) -> Result<Format, String> {
        match name {
            "claude-code" => Ok(Format::ClaudeCode),
            "codex" => Ok(Format::Codex),
            "gemini-cli" => Ok(Format::GeminiCli),
            other => Err(format!("--usage: `{other}` is not claude-code, codex or gemini-cli")),
        }
    }
}

/// `plan=claude-code,review=codex`: which nodes print usage, in which format.
pub fn parse_spec(spec: &str) -> Result<Vec<(String, Format)>, String> {
    spec.split(',')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (node, format) = part
                .split_once('=')
                .ok_or_else(|| format!("--usage: `{part}` is not NODE=FORMAT"))?;
            Ok((node.to_owned(), Format::parse(format)?))
        })
        .collect()
}

/// A steady pseudo-random number from the node and the prompt (FNV-1a).
fn seed(node: &str, prompt: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in node.bytes().chain([0]).chain(prompt.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The lines `format` prints for one node's work on `prompt` that took `millis`: the last line
/// is the one that carries the usage.
pub fn stream(format: Format, node: &str, prompt: &str, millis: u64) -> Vec<String> {
    let seed = seed(node, prompt);
    let words = prompt.split_whitespace().count() as u64;
    // Input grows with the prompt; the rest varies by node and prompt.
    let input = 1_200 + words * 180 + seed % 2_400;
    let cached = (seed >> 12) % (input / 2);
    let output = 120 + (seed >> 24) % 900;
    let id = format!("{:08x}-demo-{:04x}", seed as u32, (seed >> 32) as u16);
    let answer = format!("{node}: done");
    match format {
        Format::ClaudeCode => {
            let (fresh, cache_write) = (input - cached, 512 + (seed >> 36) % 1_024);
            let [p_in, p_out, p_read, p_write] = CLAUDE_PRICES;
            let cost =
                fresh as f64 * p_in + output as f64 * p_out + cached as f64 * p_read + cache_write as f64 * p_write;
            let cost = (cost * 1e6).round() / 1e6;
            vec![
                ordered(&[
                    ("type", json!("system")),
                    ("subtype", json!("init")),
                    ("session_id", json!(id)),
                    ("model", json!(CLAUDE_MODEL)),
                    ("tools", json!(["Read", "Write", "Bash"])),
                ]),
                ordered(&[
                    ("type", json!("assistant")),
                    (
                        "message",
                        json!({"model": CLAUDE_MODEL, "role": "assistant", "content": [{"type": "text", "text": answer}]}),
                    ),
                    ("session_id", json!(id)),
                ]),
                ordered(&[
                    ("type", json!("result")),
                    ("subtype", json!("success")),
                    ("is_error", json!(false)),
                    ("duration_ms", json!(millis)),
                    ("duration_api_ms", json!(millis * 9 / 10)),
                    ("num_turns", json!(1 + seed % 3)),
                    ("result", json!(answer)),
                    ("session_id", json!(id)),
                    ("total_cost_usd", json!(cost)),
                    (
                        "usage",
                        json!({"input_tokens": fresh, "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cached, "output_tokens": output}),
                    ),
                    (
                        "modelUsage",
                        json!({CLAUDE_MODEL: {"inputTokens": fresh, "outputTokens": output, "cacheReadInputTokens": cached, "cacheCreationInputTokens": cache_write, "costUSD": cost}}),
                    ),
                ]),
            ]
        }
        Format::Codex => vec![
            ordered(&[("type", json!("thread.started")), ("thread_id", json!(id))]),
            ordered(&[("type", json!("turn.started"))]),
            ordered(&[
                ("type", json!("item.completed")),
                ("item", json!({"id": "item_0", "type": "agent_message", "text": answer})),
            ]),
            ordered(&[
                ("type", json!("turn.completed")),
                (
                    "usage",
                    json!({"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output}),
                ),
            ]),
        ],
        Format::GeminiCli => vec![
            ordered(&[
                ("type", json!("init")),
                ("session_id", json!(id)),
                ("model", json!(GEMINI_MODEL)),
            ]),
            ordered(&[
                ("type", json!("message")),
                ("role", json!("assistant")),
                ("content", json!(answer)),
                ("delta", json!(true)),
            ]),
            ordered(&[
                ("type", json!("result")),
                ("status", json!("success")),
                (
                    "stats",
                    json!({"total_tokens": input + output, "input_tokens": input, "output_tokens": output, "cached": cached, "duration_ms": millis, "tool_calls": seed % 4}),
                ),
            ]),
        ],
    }
}

/// A JSON object with its keys in the order given, as the agents print theirs (`type` first).
fn ordered(fields: &[(&str, Value)]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("{}:{value}", Value::from(*key)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_nodes_and_formats() {
        assert_eq!(
            parse_spec("plan=claude-code,review=codex").unwrap(),
            [
                ("plan".to_owned(), Format::ClaudeCode),
                ("review".to_owned(), Format::Codex)
            ]
        );
        assert!(parse_spec("plan").unwrap_err().contains("NODE=FORMAT"));
        assert!(parse_spec("plan=cursor").unwrap_err().contains("`cursor`"));
    }

    #[test]
    fn the_figures_follow_the_prompt() {
        let a = stream(Format::Codex, "plan", "one prompt", 100);
        assert_eq!(a, stream(Format::Codex, "plan", "one prompt", 100));
        assert_ne!(a, stream(Format::Codex, "plan", "another prompt", 100));
    }

    #[test]
    fn each_event_is_one_json_object_its_type_first() {
        for format in [Format::ClaudeCode, Format::Codex, Format::GeminiCli] {
            for line in stream(format, "plan", "a \"quoted\" prompt", 100) {
                let event: Value = serde_json::from_str(&line).unwrap();
                assert!(event.is_object() && line.starts_with(r#"{"type":"#), "{line}");
            }
        }
    }
}
