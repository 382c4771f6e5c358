//! What running an agent would do, exactly, as a person must see it before trusting it: part of
//! the vocabulary (the `agents_untrusted` error carries one), so it depends on nothing else of the
//! crate. `agents::find` makes one from a workspace's agents file.
//!
//! What trust is bound to ([`Launch::digest`]): the agent's name, its command (placeholders
//! unexpanded), its folder, the variables it sets and which of the studio's environment it
//! inherits, the identity of the workspace folder (device, inode and creation time: a repository
//! cloned anew at the same path is another workspace), and the content of every file inside the
//! workspace that the command names (a script edited since is asked about again). It is not bound
//! to what those files run in turn (a module a script imports), nor to programs outside the
//! workspace (`node`, `zibby` on the PATH).
//!
//! A launch's [`Budget`] is part of it only where it would loosen something: trust is kept by
//! [`Launch::trust_key`] (everything but the budget) with the budget trusted beside it, and a
//! budget [`Budget::within`] that one (lowered, or added) asks nothing; raised or removed, it is
//! asked about again. [`Launch::digest`] covers the budget too: what the user saw is what is
//! trusted.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::vocabulary::visible::{quoted, shown};

/// Which of the studio's own environment an agent gets (`inherit_env` in `.zibby/studio.toml`).
/// Either way, the studio's own variables (`ZIBBY_STUDIO_*`, and those the app sets for its
/// window) are never passed on, and the variables the agent sets are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "\"all\" | Array<string>"))]
#[serde(try_from = "InheritEnvText", into = "InheritEnvText")]
pub enum InheritEnv {
    /// `inherit_env = "all"` (the default): every variable the studio was started with.
    #[default]
    All,
    /// `inherit_env = ["PATH", "HOME"]`: only these.
    Only(Vec<String>),
}

impl InheritEnv {
    /// Whether the agent gets the studio's variable `name` (its own aside).
    pub fn passes(&self, name: &str) -> bool {
        !is_studio_variable(name)
            && match self {
                InheritEnv::All => true,
                InheritEnv::Only(names) => names.iter().any(|n| n == name),
            }
    }

    /// In words, for a prompt, as this process's agents get it ([`Environment::of_this_process`]).
    pub fn describe(&self) -> String {
        self.describe_in(Environment::of_this_process())
    }

    /// In words, for a prompt, when the studio that starts the agent has `environment`.
    pub fn describe_in(&self, environment: Environment) -> String {
        match (self, environment) {
            (InheritEnv::All, Environment::Studio) => {
                "all of the studio's environment (your shell's: tokens and cloud keys too), \
                 but the studio's own ZIBBY_STUDIO_* variables"
                    .to_owned()
            }
            (InheritEnv::All, Environment::HostServer) => {
                "all of the environment of the studio server on this host (what ssh gives a command there, \
                 not your interactive shell's: tokens and cloud keys it sets too), but the studio's own \
                 ZIBBY_STUDIO_* variables"
                    .to_owned()
            }
            (InheritEnv::Only(names), _) if names.is_empty() => "none of the studio's environment".to_owned(),
            (InheritEnv::Only(names), _) => format!(
                "only {} of the studio's environment",
                names.iter().map(|n| shown(n)).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// Whose environment the studio that starts an agent has: a studio the user started (the app,
/// `zstudio`: their shell's), or a studio server on a host (`zstudio serve --stdio`, started by
/// ssh for a remote workspace: what ssh gives a command there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Studio,
    HostServer,
}

/// Set once by a process that serves a remote workspace (`zstudio serve`).
static HOST_SERVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Environment {
    /// This process's: [`Environment::HostServer`] once [`Environment::serving_on_a_host`] was
    /// called.
    pub fn of_this_process() -> Environment {
        if HOST_SERVER.load(std::sync::atomic::Ordering::Relaxed) {
            Environment::HostServer
        } else {
            Environment::Studio
        }
    }

    /// Says that this process is a studio server on a host (`zstudio serve`): the agents it
    /// starts inherit the environment ssh gave it, and prompts say so.
    pub fn serving_on_a_host() {
        HOST_SERVER.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The studio's own variables (where its store is, which keeper to run): an agent never gets
/// them, so it cannot reach or redirect the studio's files.
pub fn is_studio_variable(name: &str) -> bool {
    name.starts_with("ZIBBY_STUDIO_")
}

/// How `inherit_env` is written: the word `"all"`, or a list of names.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum InheritEnvText {
    Word(String),
    Names(Vec<String>),
}

impl TryFrom<InheritEnvText> for InheritEnv {
    type Error = String;
    fn try_from(text: InheritEnvText) -> Result<InheritEnv, String> {
        match text {
            InheritEnvText::Word(word) if word == "all" => Ok(InheritEnv::All),
            InheritEnvText::Word(word) => Err(format!(
                "inherit_env is \"all\" or a list of variable names, not {word:?}"
            )),
            InheritEnvText::Names(names) => Ok(InheritEnv::Only(names)),
        }
    }
}

impl From<InheritEnv> for InheritEnvText {
    fn from(inherit: InheritEnv) -> InheritEnvText {
        match inherit {
            InheritEnv::All => InheritEnvText::Word("all".to_owned()),
            InheritEnv::Only(names) => InheritEnvText::Names(names),
        }
    }
}

/// What a run may spend (`.zibby/studio.toml`: an agent's `max_cost_usd` and `max_tokens`, the
/// workspace's `[budget] daily_usd`); `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Budget {
    /// At most this many US dollars per run (its priced cost).
    pub max_cost_usd: Option<f64>,
    /// At most this many tokens per run.
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub max_tokens: Option<u64>,
    /// At most this many US dollars a local calendar day, over the workspace's runs.
    pub daily_usd: Option<f64>,
}

// Budgets are finite numbers (the agents file refuses others): equality is total.
impl Eq for Budget {}

impl Budget {
    /// Whether every limit of this budget is at most `trusted`'s: none is raised, and none that
    /// `trusted` has is removed (a limit `trusted` lacks may be added).
    pub fn within(&self, trusted: &Budget) -> bool {
        fn limit_within<T: PartialOrd>(now: Option<T>, trusted: Option<T>) -> bool {
            match (now, trusted) {
                (_, None) => true,
                (Some(now), Some(trusted)) => now <= trusted,
                (None, Some(_)) => false,
            }
        }
        limit_within(self.max_cost_usd, trusted.max_cost_usd)
            && limit_within(self.max_tokens, trusted.max_tokens)
            && limit_within(self.daily_usd, trusted.daily_usd)
    }

    /// Whether it has any limit.
    pub fn is_set(&self) -> bool {
        self.max_cost_usd.is_some() || self.max_tokens.is_some() || self.daily_usd.is_some()
    }

    /// Its limits in words (`at most $0.50 a run, 20,000 tokens a run, $20.00 a day`), `None`
    /// when it has none.
    pub fn describe(&self) -> Option<String> {
        let mut limits = Vec::new();
        if let Some(usd) = self.max_cost_usd {
            limits.push(format!("{} a run", dollars(usd)));
        }
        if let Some(tokens) = self.max_tokens {
            limits.push(format!(
                "{} tokens a run",
                crate::vocabulary::visible::thousands(tokens)
            ));
        }
        if let Some(usd) = self.daily_usd {
            limits.push(format!("{} a day", dollars(usd)));
        }
        (!limits.is_empty()).then(|| format!("at most {}", limits.join(", ")))
    }
}

/// Dollars as a budget is written: cents, or four decimals below a cent.
fn dollars(usd: f64) -> String {
    if usd >= 0.01 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// A file inside the workspace that the command names (a script, a config): trust covers its
/// content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LaunchFile {
    /// Relative to the workspace.
    pub path: PathBuf,
    pub bytes: u64,
    /// The SHA-256 of its content.
    pub sha256: String,
}

/// A cloned repository can declare any command, folder and environment. Trust is given to this
/// launch, by its [`Launch::digest`] (what it covers: the module's docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Launch {
    pub agent: String,
    /// The command, placeholders unexpanded (`{prompt}`, `{session_id}`, ...).
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The variables the file sets, with their values (`NODE_OPTIONS` can run code too).
    pub env: Vec<(String, String)>,
    pub inherit_env: InheritEnv,
    pub agents_file: PathBuf,
    /// The workspace folder's identity: `device:inode:creation time`.
    pub workspace_identity: String,
    /// The files of the workspace the command names, with their content's digest.
    pub files: Vec<LaunchFile>,
    /// What a run of it may spend: trusted as a ceiling (the module's docs).
    pub budget: Budget,
    /// The SHA-256 of all of the above: what the user is shown and says yes to.
    pub digest: String,
    /// The SHA-256 of all of the above but the budget: what trust is kept by, with the budget
    /// trusted beside it.
    pub trust_key: String,
    /// What a prompt shows: every value escaped and folded ([`crate::vocabulary::visible::shown`]),
    /// the command as it will run for this run's prompt, session and node.
    pub shown: ShownLaunch,
}

/// A [`Launch`] as a trust prompt shows it: nothing in it can draw a line, reorder text or hide
/// a character, and no value is longer than a few lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ShownLaunch {
    pub agent: String,
    /// Each argument, quoted, as it will run (placeholders filled where this run knows their
    /// value).
    pub command: Vec<String>,
    /// The arguments as one list: `["sh", "agent.sh", "Plan a trip"]`.
    pub command_line: String,
    pub cwd: String,
    /// `NAME=value`, each.
    pub env: Vec<String>,
    /// Which of the studio's environment the agent gets, in words.
    pub inherits: String,
    pub agents_file: String,
    /// What trusting it covers, in words: each thing whose change asks again.
    pub covers: Vec<String>,
}

/// What [`Launch::new`] is made of.
pub struct LaunchParts {
    pub agent: String,
    pub argv: Vec<String>,
    /// The command with the placeholders this run knows filled (shown, not trusted).
    pub argv_for_this_run: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub inherit_env: InheritEnv,
    pub agents_file: PathBuf,
    pub workspace_identity: String,
    pub files: Vec<LaunchFile>,
    pub budget: Budget,
}

/// The SHA-256 of a JSON value's text, in hex.
fn sha256_hex(value: &serde_json::Value) -> String {
    crate::vocabulary::digest::sha256_hex(value.to_string().as_bytes(), 32)
}

impl Launch {
    pub fn new(parts: LaunchParts) -> Launch {
        let LaunchParts {
            agent,
            argv,
            argv_for_this_run,
            cwd,
            env,
            inherit_env,
            agents_file,
            workspace_identity,
            files,
            budget,
        } = parts;
        let mut exact = serde_json::json!({
            "agent": agent,
            "argv": argv,
            "cwd": cwd,
            "env": env,
            "inherit_env": inherit_env,
            "workspace": workspace_identity,
            "files": files,
        });
        // Without the budget: the digest trust was kept by before budgets, so trust given then
        // holds.
        let trust_key = sha256_hex(&exact);
        exact["budget"] = serde_json::json!(budget);
        let digest = sha256_hex(&exact);
        let mut covers = vec![
            "this command, its folder and the variables it sets".to_owned(),
            format!(
                "this workspace folder itself ({}): a repository cloned anew at the same path is asked about again",
                shown(&workspace_identity)
            ),
        ];
        covers.extend(files.iter().map(|file| {
            format!(
                "the content of {} ({} bytes, SHA-256 {}…)",
                shown(&file.path.display().to_string()),
                crate::vocabulary::visible::thousands(file.bytes),
                &file.sha256[..12]
            )
        }));
        if let Some(limits) = budget.describe() {
            covers.push(format!(
                "its budget, {limits}: lowering it asks nothing, raising or removing it asks again"
            ));
        }
        let command: Vec<String> = argv_for_this_run.iter().map(|arg| quoted(arg)).collect();
        let shown_launch = ShownLaunch {
            agent: shown(&agent),
            command_line: format!("[{}]", command.join(", ")),
            command,
            cwd: shown(&cwd.display().to_string()),
            env: env.iter().map(|(k, v)| shown(&format!("{k}={v}"))).collect(),
            inherits: inherit_env.describe(),
            agents_file: shown(&agents_file.display().to_string()),
            covers,
        };
        Launch {
            agent,
            argv,
            cwd,
            env,
            inherit_env,
            agents_file,
            workspace_identity,
            files,
            budget,
            digest,
            trust_key,
            shown: shown_launch,
        }
    }

    /// The lines a terminal prompt (and the error's message) shows: every value escaped.
    pub fn describe_lines(&self) -> Vec<(&'static str, String)> {
        self.shown.describe_lines()
    }
}

/// At most this many variables, files covered or arguments of a launch another machine sent are
/// shown; the rest are counted.
pub const MAX_SHOWN_ITEMS: usize = 64;

impl ShownLaunch {
    /// A launch as another machine (a remote workspace's host) sent it, shown by the rule a launch
    /// worked out here is: each value through [`shown`] (on one line, every hidden character
    /// escaped, long values folded), the command line made again from its arguments, and each list
    /// cut at [`MAX_SHOWN_ITEMS`] with the rest counted. A host can put raw newlines or a thousand
    /// variables in what it sends; none of that draws a line of its own in a prompt. Values this
    /// machine worked out are already shown so: this changes nothing of theirs.
    pub fn shown_again(self) -> ShownLaunch {
        fn each(values: Vec<String>, what: &str) -> Vec<String> {
            let total = values.len();
            let mut kept: Vec<String> = values.iter().take(MAX_SHOWN_ITEMS).map(|v| shown(v)).collect();
            if total > MAX_SHOWN_ITEMS {
                kept.push(format!("… and {} more {what}", total - MAX_SHOWN_ITEMS));
            }
            kept
        }
        let command = each(self.command, "arguments");
        ShownLaunch {
            agent: shown(&self.agent),
            command_line: format!("[{}]", command.join(", ")),
            command,
            cwd: shown(&self.cwd),
            env: each(self.env, "variables"),
            inherits: shown(&self.inherits),
            agents_file: shown(&self.agents_file),
            covers: each(self.covers, "things covered"),
        }
    }

    /// What a trust prompt lists, a line each (`command`, `in`, `sets`, `inherits`, `covers`).
    pub fn describe_lines(&self) -> Vec<(&'static str, String)> {
        let s = self;
        let mut lines = vec![
            ("command", s.command_line.clone()),
            ("in", s.cwd.clone()),
            (
                "sets",
                if s.env.is_empty() {
                    "no variable of its own".to_owned()
                } else {
                    s.env.join(", ")
                },
            ),
            ("inherits", s.inherits.clone()),
        ];
        lines.extend(s.covers.iter().map(|c| ("covers", c.clone())));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(value: &str) -> LaunchParts {
        LaunchParts {
            agent: "a".into(),
            argv: vec!["sh".into(), "agent.sh".into()],
            argv_for_this_run: vec!["sh".into(), "agent.sh".into()],
            cwd: "/w".into(),
            env: vec![("MODEL".into(), value.into())],
            inherit_env: InheritEnv::All,
            agents_file: "/w/.zibby/studio.toml".into(),
            workspace_identity: "1:2:3".into(),
            files: vec![LaunchFile {
                path: "agent.sh".into(),
                bytes: 10,
                sha256: "ab".repeat(32),
            }],
            budget: Budget::default(),
        }
    }

    #[test]
    fn a_value_cannot_draw_lines_of_its_own_in_the_prompt() {
        let launch = Launch::new(parts("small\n  File  /elsewhere\u{202E}"));
        assert_eq!(launch.shown.env, ["MODEL=small\\n  File  /elsewhere\\u202e"]);
        assert!(launch
            .describe_lines()
            .iter()
            .all(|(_, line)| !line.contains('\n') && !line.contains('\u{202E}')));
    }

    /// Issue 40, point 4: what a host sends is shown by the same rule as what is worked out here.
    #[test]
    fn a_launch_from_a_host_is_shown_by_this_machines_rule() {
        let local = Launch::new(parts("small\n\u{202E}x".repeat(40).as_str())).shown;
        assert_eq!(
            local.clone().shown_again(),
            local,
            "values worked out here are unchanged"
        );

        let forged = ShownLaunch {
            agent: "a\nFile: /etc/passwd".into(),
            command: vec!["\"sh\"".into(), "\"ok\"\n\nIn: /safe".into()],
            command_line: "[\"true\"]".into(),
            cwd: "/w\r\nSets: nothing".into(),
            env: (0..1000).map(|i| format!("V{i}=x\ny")).collect(),
            inherits: "all\u{1b}]52;c;aGk=\u{7}".into(),
            agents_file: "/w/.zibby/studio.toml\u{202E}".into(),
            covers: vec!["nothing\n  • everything".into()],
        };
        let shown = forged.shown_again();
        assert_eq!(
            shown.command_line, r#"["sh", "ok"\n\nIn: /safe]"#,
            "made again from the arguments"
        );
        assert_eq!(shown.env.len(), MAX_SHOWN_ITEMS + 1);
        assert_eq!(shown.env.last().unwrap(), "… and 936 more variables");
        let every = [
            &shown.agent,
            &shown.command_line,
            &shown.cwd,
            &shown.inherits,
            &shown.agents_file,
        ]
        .into_iter()
        .chain(&shown.command)
        .chain(&shown.env)
        .chain(&shown.covers);
        for value in every {
            assert!(
                value.chars().all(|c| !crate::vocabulary::visible::is_hidden(c, false)),
                "{value:?}"
            );
        }
    }

    #[test]
    fn the_digest_covers_the_files_the_workspace_and_what_is_inherited() {
        let base = Launch::new(parts("small")).digest;
        let mut edited = parts("small");
        edited.files[0].sha256 = "cd".repeat(32);
        assert_ne!(Launch::new(edited).digest, base);
        let mut recloned = parts("small");
        recloned.workspace_identity = "1:9:3".into();
        assert_ne!(Launch::new(recloned).digest, base);
        let mut narrower = parts("small");
        narrower.inherit_env = InheritEnv::Only(vec!["PATH".into()]);
        assert_ne!(Launch::new(narrower).digest, base);
        let mut other_run = parts("small");
        other_run.argv_for_this_run = vec!["sh".into(), "other".into()];
        assert_eq!(
            Launch::new(other_run).digest,
            base,
            "what is shown for this run is not trusted"
        );
    }

    #[test]
    fn a_budget_is_shown_and_digested_but_trust_is_kept_without_it() {
        let base = Launch::new(parts("small"));
        let mut capped = parts("small");
        capped.budget.max_cost_usd = Some(0.5);
        let capped = Launch::new(capped);
        assert_ne!(capped.digest, base.digest, "what is shown covers the budget");
        assert_eq!(capped.trust_key, base.trust_key);
        assert!(
            capped.shown.covers.iter().any(|c| c.contains("$0.50 a run")),
            "{:?}",
            capped.shown.covers
        );
    }

    #[test]
    fn a_budget_is_within_another_when_it_loosens_nothing() {
        let budget = |cost: Option<f64>, tokens: Option<u64>| Budget {
            max_cost_usd: cost,
            max_tokens: tokens,
            daily_usd: None,
        };
        let trusted = budget(Some(0.5), None);
        assert!(budget(Some(0.25), None).within(&trusted), "lowered");
        assert!(budget(Some(0.5), Some(1000)).within(&trusted), "a limit added");
        assert!(!budget(Some(0.75), None).within(&trusted), "raised");
        assert!(!budget(None, None).within(&trusted), "removed");
        assert!(
            budget(Some(9.0), Some(9)).within(&Budget::default()),
            "none trusted: any is within"
        );
    }

    #[test]
    fn the_studios_own_variables_are_never_inherited() {
        assert!(!InheritEnv::All.passes("ZIBBY_STUDIO_DB"));
        assert!(InheritEnv::All.passes("HOME"));
        let only = InheritEnv::Only(vec!["PATH".into(), "ZIBBY_STUDIO_KEEPER".into()]);
        assert!(only.passes("PATH"));
        assert!(!only.passes("HOME"));
        assert!(!only.passes("ZIBBY_STUDIO_KEEPER"));
    }

    /// What a remote workspace's trust prompt says the agent inherits: the host server's
    /// environment, not the user's shell (issue 27: the window showed "your shell's").
    #[test]
    fn an_agent_of_a_host_server_is_said_to_inherit_the_servers_environment() {
        let here = InheritEnv::All.describe_in(Environment::Studio);
        let there = InheritEnv::All.describe_in(Environment::HostServer);
        assert!(here.contains("your shell's"), "{here}");
        assert!(
            there.contains("studio server on this host") && !there.contains("your shell's:"),
            "{there}"
        );
    }
}
