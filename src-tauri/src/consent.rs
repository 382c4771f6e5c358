//! What only the user may decide, and the web page may only ask for: trusting an agent's launch
//! (opening a workspace the studio has not opened before is `opening`'s). The shell asks in the
//! system's own dialog ([`crate::window::ask_natively`]), which the page can neither draw nor answer, about
//! what the shell works out itself: a page that sends a digest or a path asserts nothing.

use std::time::SystemTime;

use studio_core::app::elsewhere::Elsewhere;
use studio_core::launch::ShownLaunch;
use studio_core::remote::protocol::AGENT_TRUST;
use studio_core::store::Store;
use studio_core::{Error, ErrorCode, SessionId, Workspace};

/// The run the window wants to start, for which it asks the user to trust the agent's launch.
pub struct WantedRun {
    pub agent: String,
    pub prompt: Option<String>,
    pub session: Option<SessionId>,
    /// A replay of this node (the agent's replay command), else a run.
    pub node: Option<String>,
}

/// The title of the native trust question.
pub const TRUST_TITLE: &str = "Trust this agent's command?";

/// Trusts the launch `wanted` would run, once `ask` (the user, natively) said yes to it as the
/// core shows it. The launch is worked out here from the workspace's agents file, as the run
/// will work it out: nothing the page sends is trusted. Returns whether the launch is trusted
/// now (already, or by this answer); a "no" records nothing.
pub fn trust_after_asking(
    store: &Store,
    workspace: &Workspace,
    wanted: WantedRun,
    now: SystemTime,
    ask: impl FnOnce(&ShownLaunch) -> bool,
) -> Result<bool, Error> {
    let WantedRun {
        agent,
        prompt,
        session,
        node,
    } = wanted;
    match studio_core::app::agent_run_request(store, workspace, &agent, prompt, session, node) {
        Ok(_) => Ok(true),
        Err(Error::AgentsUntrusted { launch }) => {
            if !ask(&launch.shown) {
                return Ok(false);
            }
            store.trust_launch(workspace, &launch, now)?;
            Ok(true)
        }
        Err(error) => Err(error),
    }
}

/// [`trust_after_asking`] for a workspace on another machine: the host's studio server works the
/// launch out from its own agents file (`agent_trust` with a digest that is no launch's answers
/// with it), `ask` shows it, and only the user's yes trusts it there, in the host's store, by the
/// digest the host gave (refused there when the file changed meanwhile). Nothing is recorded here.
pub fn trust_on_host(
    remote: &dyn Elsewhere,
    wanted: WantedRun,
    ask: impl FnOnce(&ShownLaunch) -> bool,
) -> Result<bool, Error> {
    let call = |digest: &str| -> Result<bool, Error> {
        let params = serde_json::json!({
            "agent": wanted.agent,
            "node": wanted.node,
            "prompt": wanted.prompt,
            "session_id": wanted.session.as_ref().map(SessionId::as_str),
            "digest": digest,
        });
        let answer = remote.forward(AGENT_TRUST, params).unwrap_or_else(|| {
            Err(Error::InvalidRequest {
                reason: format!("the remote workspace does not answer `{AGENT_TRUST}`"),
            })
        })?;
        Ok(answer.as_bool() == Some(true))
    };
    match call("") {
        Err(refused) if refused.code() == ErrorCode::AgentsUntrusted => {
            let Some((digest, shown)) = refused.untrusted_launch() else {
                return Err(refused);
            };
            if !ask(&shown) {
                return Ok(false);
            }
            call(&digest)
        }
        answered => answered,
    }
}

/// The native trust question's text: the command as it will run first (on `host`, a remote
/// workspace's), then the rest of what the core shows (every value already escaped and folded by it).
pub fn trust_question(shown: &ShownLaunch, host: Option<&str>) -> String {
    let on_host = host
        .map(|host| format!(" on {}", studio_core::visible::shown(host)))
        .unwrap_or_default();
    let mut text = format!(
        "Agent {} of this workspace{on_host} would run:\n\n{}\n\nIn: {}\n",
        shown.agent, shown.command_line, shown.cwd
    );
    if shown.env.is_empty() {
        text.push_str("Sets: no variable of its own\n");
    } else {
        text.push_str("Sets:\n");
        for variable in &shown.env {
            text.push_str(&format!("  {variable}\n"));
        }
    }
    text.push_str(&format!(
        "Inherits: {}\nFile: {}\n\nTrust covers:\n",
        shown.inherits, shown.agents_file
    ));
    for covered in &shown.covers {
        text.push_str(&format!("  • {covered}\n"));
    }
    text.push_str(
        "\nRun it only if you trust where the file comes from: the studio asks again whenever any of this changes.",
    );
    text
}

/// The title of the native question before the window sends the workspace's runs somewhere.
pub const TRACES_TITLE: &str = "Send this workspace's runs as traces?";

/// The native question's text before runs are sent to the collector at `endpoint` (a base URL,
/// as the user typed it: shown escaped), saying what each run sends.
pub fn traces_question(endpoint: &str) -> String {
    format!(
        "To: {}\n\nEvery run of this workspace will be sent there as it goes, as OpenTelemetry spans: \
         the session and run ids, the agent, each node's name, times and status, the model, tokens \
         and cost, how the run ended, and the prompt's first line (redacted). What the agent printed \
         is not sent.\n\nSaved in .zibby/studio.toml as [otlp]; the OTEL_EXPORTER_OTLP_* variables, \
         when set, win over it.",
        studio_core::visible::shown(endpoint)
    )
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::path::Path;

    use studio_core::store::StoreLocation;

    use super::*;

    fn workspace_with_agent(run: &str) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".zibby")).unwrap();
        std::fs::write(
            dir.path().join(".zibby/studio.toml"),
            format!("[[agent]]\nname = \"helper\"\nrun = {run}\n"),
        )
        .unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        (dir, workspace)
    }

    fn wanted(prompt: &str) -> WantedRun {
        WantedRun {
            agent: "helper".to_owned(),
            prompt: Some(prompt.to_owned()),
            session: None,
            node: None,
        }
    }

    fn runnable(store: &Store, workspace: &Workspace) -> bool {
        studio_core::app::agent_run_request(store, workspace, "helper", Some("p".into()), None, None).is_ok()
    }

    /// Issue 26, point 4: the page cannot trust a launch by itself. Without the user's yes
    /// nothing is recorded; what the user is asked about is the launch the shell worked out.
    #[test]
    fn only_the_users_yes_trusts_the_launch_the_shell_worked_out() {
        let store = Store::open(&StoreLocation::memory()).unwrap();
        let (_dir, workspace) = workspace_with_agent(r#"["sh", "agent.sh", "{prompt}"]"#);
        let asked = Cell::new(None);
        let trusted = trust_after_asking(&store, &workspace, wanted("Plan a trip"), SystemTime::now(), |shown| {
            asked.set(Some(shown.command_line.clone()));
            false
        })
        .unwrap();
        assert!(!trusted);
        assert_eq!(
            asked.take().as_deref(),
            Some(r#"["sh", "agent.sh", "Plan a trip"]"#),
            "asked about the command as it will run"
        );
        assert!(!runnable(&store, &workspace), "a no records nothing");

        assert!(trust_after_asking(&store, &workspace, wanted("Plan a trip"), SystemTime::now(), |_| true).unwrap());
        assert!(runnable(&store, &workspace), "a yes trusts it");
        let again = trust_after_asking(&store, &workspace, wanted("other"), SystemTime::now(), |_| {
            panic!("a trusted launch is not asked about again")
        });
        assert!(again.unwrap());
    }

    /// A host's studio server as `agent_trust` answers: the launch of its own agents file (in its
    /// own store), `agents_untrusted` with it for any other digest; what it was asked, kept.
    struct Host {
        store: Store,
        workspace: Workspace,
        asked: std::sync::Mutex<Vec<serde_json::Value>>,
    }

    impl Elsewhere for Host {
        fn forward(&self, method: &str, params: serde_json::Value) -> Option<Result<serde_json::Value, Error>> {
            assert_eq!(method, AGENT_TRUST);
            self.asked.lock().unwrap().push(params.clone());
            let prompt = params["prompt"].as_str().map(str::to_owned);
            let found = studio_core::app::agent_run_request(&self.store, &self.workspace, "helper", prompt, None, None);
            Some(match found {
                Ok(_) => Ok(serde_json::json!(true)),
                Err(Error::AgentsUntrusted { launch }) if launch.digest == params["digest"] => self
                    .store
                    .trust_launch(&self.workspace, &launch, SystemTime::now())
                    .map(|()| serde_json::json!(true)),
                Err(error) => Err(Error::Remote {
                    host: "build-box".to_owned(),
                    code: error.code(),
                    message: error.to_string(),
                    details: error.details(),
                }),
            })
        }

        fn export_session(&self, _: &str, _: bool, _: &Path) -> Result<studio_core::share::Exported, Error> {
            unreachable!()
        }

        fn import_file(&self, _: &Path, _: bool) -> Result<studio_core::share::ImportedSession, Error> {
            unreachable!()
        }

        fn status(&self) -> studio_core::app::elsewhere::RemoteStatus {
            unreachable!()
        }

        fn close(&self) {}
    }

    /// Issue 27, point 4: a remote workspace's agent is asked about with the launch its host
    /// worked out (the prompt filled in), and trusted there only on the user's yes.
    #[test]
    fn a_remote_agent_is_asked_about_as_its_host_shows_it_and_trusted_there() {
        let (_dir, workspace) = workspace_with_agent(r#"["sh", "agent.sh", "{prompt}"]"#);
        let host = Host {
            store: Store::open(&StoreLocation::memory()).unwrap(),
            workspace,
            asked: Default::default(),
        };
        let mut shown = None;
        let said_no = trust_on_host(&host, wanted("Plan a trip"), |launch| {
            shown = Some(launch.command_line.clone());
            false
        });
        assert!(!said_no.unwrap());
        assert_eq!(shown.as_deref(), Some(r#"["sh", "agent.sh", "Plan a trip"]"#));
        assert!(
            !runnable(&host.store, &host.workspace),
            "a no records nothing on the host"
        );
        assert_eq!(host.asked.lock().unwrap().len(), 1, "a no asks the host nothing more");

        assert!(trust_on_host(&host, wanted("Plan a trip"), |_| true).unwrap());
        assert!(runnable(&host.store, &host.workspace), "a yes trusts it on the host");
        let again = trust_on_host(&host, wanted("other"), |_| {
            panic!("a trusted launch is not asked about again")
        });
        assert!(again.unwrap());
    }

    #[test]
    fn an_unknown_agent_is_refused_without_asking() {
        let store = Store::open(&StoreLocation::memory()).unwrap();
        let (_dir, workspace) = workspace_with_agent(r#"["true"]"#);
        let mut wanted = wanted("p");
        wanted.agent = "nobody".to_owned();
        let refused = trust_after_asking(&store, &workspace, wanted, SystemTime::now(), |_| panic!("asked"));
        assert!(matches!(refused, Err(Error::AgentNotFound { .. })), "{refused:?}");
    }

    #[test]
    fn the_question_shows_the_command_first_and_what_trust_covers() {
        let store = Store::open(&StoreLocation::memory()).unwrap();
        let (_dir, workspace) = workspace_with_agent(r#"["echo", "\u202e", "{prompt}"]"#);
        let mut question = String::new();
        trust_after_asking(&store, &workspace, wanted("x\ny"), SystemTime::now(), |shown| {
            question = trust_question(shown, None);
            false
        })
        .unwrap();
        let command_line = question.lines().nth(2).unwrap();
        assert!(command_line.starts_with(r#"["echo", "#), "{question}");
        assert!(!question.contains('\u{202e}'), "escaped: {question}");
        assert!(question.contains("Trust covers:"), "{question}");
    }
}
