//! What an export writes otherwise than the studio recorded it: secrets that look like keys and
//! tokens replaced by `[redacted]`, and the home folder written as `~`, in what the studio itself
//! recorded about how the session ran: the runs' commands and errors (`records/runs.jsonl`), its
//! log lines' messages and fields (`records/logs.jsonl`) and `.session-info.json` (its `config`
//! left as it is when `--include-config` asks for it). What the agent printed and wrote (output,
//! messages, the session's other files) is the session itself and is not changed. The manifest
//! says what was replaced ([`Redaction`]).
//!
//! A secret is: the value of an option or a variable whose name holds `TOKEN`, `SECRET`, `KEY`,
//! `PASSWORD`, `PASSWD` or `CREDENTIAL` (`--api-key=…`, `--api-key …`, `GITHUB_TOKEN=…`, the
//! text of a JSON field `apiKey`; a number is no secret); a value shaped like a known key or token (`sk-…`, `ghp_…` and GitHub's
//! other prefixes, `github_pat_…`, `AKIA…`/`ASIA…`, `xox…-`, `AIza…`, `glpat-…`); what follows
//! `Bearer `; the password of a URL (`https://user:…@host`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// What an export redacted, as its manifest says (`redaction`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Redaction {
    /// Whether the home folder (`$HOME`) was written as `~` in the members looked at.
    pub home_as_tilde: bool,
    /// The members looked at for secrets and the home folder; the others are as they were.
    pub looked_at: Vec<String>,
    /// What was replaced by `[redacted]`: by member and kind, how many times.
    pub secrets: Vec<RedactedSecret>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedSecret {
    pub member: String,
    /// What it was: `the value of --api-key`, `an sk-… key`, ….
    pub what: String,
    pub count: u64,
}

/// Redacts what an export looks at, counting what it replaced.
pub(super) struct Redactor {
    /// The home folder, without a trailing `/` (none when `$HOME` is unset, relative or `/`).
    home: Option<String>,
    home_replaced: bool,
    looked_at: BTreeSet<String>,
    found: BTreeMap<(String, String), u64>,
}

/// Whether a variable, option or field of this name holds a secret.
fn is_secret_name(name: &str) -> bool {
    let upper = name.trim_start_matches('-').to_ascii_uppercase();
    ["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|word| upper.contains(word))
}

/// A token shaped like a known kind of key: its pattern and what it is called.
fn token_patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (r"\bsk-[A-Za-z0-9_-]{16,}", "an sk-… key"),
            (r"\bgh[pousr]_[A-Za-z0-9]{20,}", "a GitHub gh…_ token"),
            (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "a GitHub github_pat_… token"),
            (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "an AWS AKIA… access key id"),
            (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "a Slack xox…- token"),
            (r"\bAIza[0-9A-Za-z_-]{35}", "a Google AIza… key"),
            (r"\bglpat-[A-Za-z0-9_-]{20,}", "a GitLab glpat-… token"),
        ]
        .into_iter()
        .map(|(pattern, what)| (Regex::new(pattern).expect("a valid pattern"), what))
        .collect()
    })
}

/// `--name=value` / `--name value`, `NAME=value`, `Bearer value`, `scheme://user:value@`.
fn shaped_patterns() -> &'static (Regex, Regex, Regex, Regex) {
    static PATTERNS: OnceLock<(Regex, Regex, Regex, Regex)> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let value = r#"("[^"]*"|'[^']*'|[^\s"'&;,]+)"#;
        (
            Regex::new(&format!(r"(^|\s)(--?[A-Za-z][A-Za-z0-9_.-]*)(=|[ \t]+){value}")).expect("option"),
            Regex::new(&format!(r"\b([A-Za-z_][A-Za-z0-9_]*)={value}")).expect("variable"),
            Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}").expect("bearer"),
            Regex::new(r"([a-z][a-z0-9+.-]*://[^\s/:@]+):[^\s/@]+@").expect("url"),
        )
    })
}

/// `text` with its secrets replaced by [`REDACTED`] as an export replaces them in free text (the
/// home folder left as it is): for what shows a session's text to another program (`zstudio
/// mcp`).
pub fn redact_secrets(text: &str) -> String {
    Redactor::new(None).text("text", text)
}

impl Redactor {
    /// `home`: the folder to write as `~` (`$HOME`).
    pub(super) fn new(home: Option<std::path::PathBuf>) -> Redactor {
        let home = home
            .and_then(|home| home.to_str().map(|h| h.trim_end_matches('/').to_owned()))
            .filter(|home| home.starts_with('/') && home.len() > 1);
        Redactor {
            home,
            home_replaced: false,
            looked_at: BTreeSet::new(),
            found: BTreeMap::new(),
        }
    }

    /// The redactor of this process: `$HOME` as the home folder.
    pub(super) fn of_this_user() -> Redactor {
        Redactor::new(std::env::var_os("HOME").map(std::path::PathBuf::from))
    }

    fn count(&mut self, member: &str, what: String) {
        *self.found.entry((member.to_owned(), what)).or_default() += 1;
    }

    /// Notes that `member` was looked at (even when nothing in it was replaced).
    pub(super) fn looked_at(&mut self, member: &str) {
        self.looked_at.insert(member.to_owned());
    }

    /// Free text (a command line, a log message): secrets replaced, the home folder as `~`.
    pub(super) fn text(&mut self, member: &str, text: &str) -> String {
        self.looked_at(member);
        let mut text = text.to_owned();
        for (pattern, what) in token_patterns() {
            let mut found = 0;
            text = pattern
                .replace_all(&text, |_: &Captures| {
                    found += 1;
                    REDACTED
                })
                .into_owned();
            for _ in 0..found {
                self.count(member, (*what).to_owned());
            }
        }
        let (option, variable, bearer, url) = shaped_patterns();
        let mut named = Vec::new();
        text = option
            .replace_all(&text, |c: &Captures| {
                if is_secret_name(&c[2]) && c[4] != *REDACTED {
                    named.push(format!("the value of {}", &c[2]));
                    format!("{}{}{}{REDACTED}", &c[1], &c[2], &c[3])
                } else {
                    c[0].to_owned()
                }
            })
            .into_owned();
        text = variable
            .replace_all(&text, |c: &Captures| {
                if is_secret_name(&c[1]) && c[2] != *REDACTED {
                    named.push(format!("the value of {}", &c[1]));
                    format!("{}={REDACTED}", &c[1])
                } else {
                    c[0].to_owned()
                }
            })
            .into_owned();
        text = bearer
            .replace_all(&text, |c: &Captures| {
                named.push("a Bearer token".to_owned());
                format!("{} {REDACTED}", &c[1])
            })
            .into_owned();
        text = url
            .replace_all(&text, |c: &Captures| {
                named.push("the password of a URL".to_owned());
                format!("{}:{REDACTED}@", &c[1])
            })
            .into_owned();
        for what in named {
            self.count(member, what);
        }
        self.home_as_tilde(&text)
    }

    /// A command line as its arguments: each as [`Redactor::text`], and the argument after an
    /// option named like a secret (`--api-key VALUE`) replaced whole.
    pub(super) fn command(&mut self, member: &str, args: &[String]) -> Vec<String> {
        self.looked_at(member);
        let mut after_secret_option: Option<&str> = None;
        let mut out = Vec::with_capacity(args.len());
        for arg in args {
            if let Some(option) = after_secret_option.take() {
                self.count(member, format!("the value of {option}"));
                out.push(REDACTED.to_owned());
                continue;
            }
            if arg.starts_with('-') && !arg.contains('=') && is_secret_name(arg) {
                after_secret_option = Some(arg);
            }
            out.push(self.text(member, arg));
        }
        out
    }

    /// A JSON value: the text under a field named like a secret replaced whole (an empty text,
    /// a number or a flag is no secret: `max_tokens: 4096` stays), an array of text as a
    /// command, other text as [`Redactor::text`].
    pub(super) fn json(&mut self, member: &str, value: &mut serde_json::Value) {
        use serde_json::Value;
        self.looked_at(member);
        match value {
            Value::Object(object) => {
                for (key, field) in object.iter_mut() {
                    if is_secret_name(key) {
                        self.redact_all_text(member, key, field);
                    } else {
                        self.json(member, field);
                    }
                }
            }
            Value::Array(items) if items.iter().all(Value::is_string) => {
                let args: Vec<String> = items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect();
                *items = self.command(member, &args).into_iter().map(Value::String).collect();
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(member, item)),
            Value::String(text) => *text = self.text(member, text),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Every text under the field `key` (named like a secret) replaced.
    fn redact_all_text(&mut self, member: &str, key: &str, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) if !text.is_empty() && text != REDACTED => {
                self.count(member, format!("the value of {key}"));
                *text = REDACTED.to_owned();
            }
            Value::Array(items) => items
                .iter_mut()
                .for_each(|item| self.redact_all_text(member, key, item)),
            Value::Object(object) => object
                .values_mut()
                .for_each(|field| self.redact_all_text(member, key, field)),
            Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `text` with the home folder written as `~` wherever it stands as a path of its own (not
    /// `/home/al` in `/home/alice`).
    fn home_as_tilde(&mut self, text: &str) -> String {
        let Some(home) = &self.home else {
            return text.to_owned();
        };
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(home.as_str()) {
            let after = &rest[at + home.len()..];
            let ends = after
                .chars()
                .next()
                .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
            let starts = rest[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')));
            out.push_str(&rest[..at]);
            if ends && starts {
                out.push('~');
                self.home_replaced = true;
            } else {
                out.push_str(home);
            }
            rest = after;
        }
        out.push_str(rest);
        out
    }

    /// What was redacted, for the manifest.
    pub(super) fn finish(self) -> Redaction {
        Redaction {
            home_as_tilde: self.home.is_some(),
            looked_at: self.looked_at.into_iter().collect(),
            secrets: self
                .found
                .into_iter()
                .map(|((member, what), count)| RedactedSecret { member, what, count })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new(Some("/home/alice".into()))
    }

    #[test]
    fn keys_and_tokens_are_redacted_wherever_they_stand() {
        let mut r = redactor();
        let cases = [
            ("agent --api-key=abc123 run", "agent --api-key=[redacted] run"),
            ("agent --api-key abc123 run", "agent --api-key [redacted] run"),
            (
                "GITHUB_TOKEN=ghx1 MY_SECRET='a b' PATH=/bin",
                "GITHUB_TOKEN=[redacted] MY_SECRET=[redacted] PATH=/bin",
            ),
            ("use sk-ant-api03-abcdefghijklmnop now", "use [redacted] now"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123", "[redacted]"),
            ("key AKIAIOSFODNN7EXAMPLE here", "key [redacted] here"),
            (
                "Authorization: Bearer eyJhbGciOi.x.y",
                "Authorization: Bearer [redacted]",
            ),
            (
                "https://bob:hunter2@example.com/x",
                "https://bob:[redacted]@example.com/x",
            ),
            ("--nodes plan:20,act:20 --verbose", "--nodes plan:20,act:20 --verbose"),
        ];
        for (from, to) in cases {
            assert_eq!(r.text("m", from), to, "{from}");
        }
        let redaction = r.finish();
        assert!(redaction
            .secrets
            .iter()
            .any(|s| s.what == "the value of --api-key" && s.count == 2));
        assert!(redaction.secrets.iter().any(|s| s.what == "an sk-… key"));
    }

    #[test]
    fn a_secret_option_s_next_argument_is_redacted_whole() {
        let mut r = redactor();
        let args: Vec<String> = ["/home/alice/bin/agent", "--token", "abc def", "--model", "opus"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            r.command("m", &args),
            ["~/bin/agent", "--token", "[redacted]", "--model", "opus"]
        );
    }

    #[test]
    fn the_home_folder_is_written_as_tilde_only_as_a_path_of_its_own() {
        let mut r = redactor();
        assert_eq!(r.text("m", "/home/alice"), "~");
        assert_eq!(r.text("m", "cd /home/alice/ws && ls"), "cd ~/ws && ls");
        assert_eq!(
            r.text("m", "/home/alicea/x /x/home/alice"),
            "/home/alicea/x /x/home/alice"
        );
    }

    #[test]
    fn json_fields_named_like_secrets_are_redacted() {
        let mut r = redactor();
        let mut value = serde_json::json!({
            "apiKey": "k", "env": {"OPENAI_API_KEY": "v", "HOME": "/home/alice"},
            "command": ["agent", "--password", "p"], "empty_token": "", "keep": true,
            "max_tokens": 4096, "api_keys": ["a", {"b": "c"}]
        });
        r.json("m", &mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "apiKey": "[redacted]", "env": {"OPENAI_API_KEY": "[redacted]", "HOME": "~"},
                "command": ["agent", "--password", "[redacted]"], "empty_token": "", "keep": true,
                "max_tokens": 4096, "api_keys": ["[redacted]", {"b": "[redacted]"}]
            })
        );
    }
}
