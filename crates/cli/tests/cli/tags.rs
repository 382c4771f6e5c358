//! `zstudio tag`, `untag`, `note`, `view` and the filters of `sessions` (issue 44, points 5, 6
//! and 8): the real binary, real session folders (two captures), a real store file per test.

use std::path::Path;

use serde_json::{json, Value};
use tempfile::TempDir;

use super::{fixture_workspace, json_of, spawn_watch, text_of, walk, zstudio};

const FAILED: &str = "1795952522957_vij4";
const FANOUT: &str = "1795952527924_osmf";

/// The fixture workspace and a store file of its own.
struct Place {
    workspace: TempDir,
    data: TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            workspace: fixture_workspace(),
            data: TempDir::new().unwrap(),
        }
    }

    /// `zstudio ARGS -w ROOT --db DB`, with `stdin` as its standard input.
    fn run(&self, args: &[&str], stdin: Option<&Path>) -> std::process::Output {
        let root = self.workspace.path().to_str().unwrap().to_owned();
        let db = self.data.path().join("studio.sqlite");
        let mut all = args.to_vec();
        all.extend(["-w", &root, "--db", db.to_str().unwrap()]);
        zstudio(&all, stdin)
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        json_of(&self.run(&all, None))
    }

    fn text(&self, args: &[&str]) -> String {
        text_of(&self.run(args, None))
    }

    /// The ids `sessions --json ARGS` lists, in its order.
    fn listed(&self, args: &[&str]) -> Vec<String> {
        let mut all = vec!["sessions"];
        all.extend(args);
        self.json(&all)
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// A failed command's exit status and standard error.
    fn refused(&self, args: &[&str], stdin: Option<&Path>) -> (Option<i32>, String) {
        let output = self.run(args, stdin);
        assert!(!output.status.success(), "{args:?} succeeded");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

#[test]
fn tags_and_notes_are_kept_shown_listed_filtered_and_searched() {
    let place = Place::new();
    let tagged = place.json(&["tag", FAILED, "flaky", "needs review"]);
    assert_eq!(tagged, json!({"session_id": FAILED, "tags": ["flaky", "needs review"]}));
    assert_eq!(
        place.text(&["tag", FANOUT, "flaky"]),
        format!("tags of {FANOUT}: flaky\n")
    );
    assert_eq!(
        place.text(&["untag", FANOUT, "flaky"]),
        format!("{FANOUT} has no tags\n")
    );
    place.text(&["tag", FANOUT, "release"]);

    // Every session JSON carries them.
    let rows = place.json(&["sessions"]);
    let row = |id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|row| row["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(row(FAILED)["tags"], json!(["flaky", "needs review"]));
    assert_eq!(row(FANOUT)["tags"], json!(["release"]));
    assert_eq!(row(FAILED)["has_note"], false);
    assert_eq!(place.json(&["show", FAILED])["tags"], json!(["flaky", "needs review"]));
    assert_eq!(place.json(&["show", FAILED])["note"], Value::Null);

    // The note: set from an argument, then from standard input, read back, found by search.
    assert_eq!(place.text(&["note", FAILED]), format!("{FAILED} has no note\n"));
    place.text(&["note", FAILED, "first try"]);
    let stdin = place.data.path().join("note.txt");
    std::fs::write(&stdin, "boom again on Tuesday\nthe quokka fixture is flaky\n").unwrap();
    let saved = text_of(&place.run(&["note", FAILED, "-"], Some(&stdin)));
    assert_eq!(saved, format!("saved the note of {FAILED} (50 bytes)\n"));
    assert_eq!(
        place.json(&["note", FAILED]),
        json!({"session_id": FAILED, "note": "boom again on Tuesday\nthe quokka fixture is flaky\n"})
    );
    let shown = place.text(&["show", FAILED]);
    assert!(
        shown.contains(
            "tags      flaky, needs review\nnote      boom again on Tuesday\n          the quokka fixture is flaky\n"
        ),
        "{shown}"
    );
    assert_eq!(
        place.json(&["show", FAILED])["note"],
        "boom again on Tuesday\nthe quokka fixture is flaky\n"
    );
    assert_eq!(row_of(&place, FAILED)["has_note"], true);
    let hits = place.json(&["search", "quokka"]);
    assert_eq!(hits.as_array().unwrap().len(), 1, "{hits}");
    assert_eq!(
        (&hits[0]["kind"], &hits[0]["session_id"], &hits[0]["line"]),
        (&json!("note"), &json!(FAILED), &json!(2))
    );
    assert!(
        place.json(&["search", "first"]).as_array().unwrap().is_empty(),
        "the note replaced is not found"
    );

    // tag:NAME in search: the hits of sessions so tagged; tags alone, the sessions.
    let found = place.json(&["search", "tag:release"]);
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(
        (&found[0]["kind"], &found[0]["session_id"]),
        (&json!("tag"), &json!(FANOUT))
    );
    assert!(place
        .json(&["search", "quokka tag:release"])
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(place.json(&["search", "quokka tag:flaky"]).as_array().unwrap().len(), 1);

    // The filters of `sessions`.
    assert_eq!(place.listed(&["--tag", "flaky"]), [FAILED]);
    assert_eq!(
        place.listed(&["--tag", "flaky", "--tag", "release"]),
        Vec::<String>::new()
    );
    assert_eq!(place.listed(&["--tag", "release"]), [FANOUT]);
    // The captures' folders, copied now, read `unknown` (no engine record of how they ended).
    assert_eq!(place.listed(&["--status", "unknown", "--tag", "flaky"]), [FAILED]);
    assert!(place.listed(&["--status", "error"]).is_empty());
    assert_eq!(place.listed(&["--search", "quokka"]), [FAILED]);
    assert!(place.listed(&["--pinned"]).is_empty());
    let table = place.text(&["sessions", "--tag", "flaky"]);
    assert!(table.contains("tags: flaky, needs review"), "{table}");

    // An empty note removes it.
    assert_eq!(
        place.text(&["note", FAILED, ""]),
        format!("removed the note of {FAILED}\n")
    );
    assert!(place.json(&["search", "quokka"]).as_array().unwrap().is_empty());
    assert_eq!(row_of(&place, FAILED)["has_note"], false);
}

fn row_of(place: &Place, id: &str) -> Value {
    let rows = place.json(&["sessions"]);
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap()
        .clone()
}

#[test]
fn tags_and_notes_past_their_rules_are_refused_naming_the_rule_and_keep_nothing() {
    let place = Place::new();
    // Refused as the command line is read (exit 2), naming the rule.
    let (code, said) = place.refused(&["tag", FAILED, "ok", " padded"], None);
    assert_eq!(code, Some(2));
    assert!(said.contains("begins or ends with whitespace"), "{said}");
    let (_, said) = place.refused(&["tag", FAILED, "right\u{202E}left"], None);
    assert!(said.contains("bidirectional"), "{said}");
    let (_, said) = place.refused(&["tag", FAILED, &"t".repeat(65)], None);
    assert!(said.contains("longer than 64 characters"), "{said}");
    let (_, said) = place.refused(&["sessions", "--status", "sideways"], None);
    assert!(said.contains("a status is one of"), "{said}");
    assert_eq!(
        place.json(&["show", FAILED])["tags"],
        json!([]),
        "nothing of a refused line kept"
    );

    // The 33rd tag: refused by the store, none of the line added.
    let thirty: Vec<String> = (1..=30).map(|n| format!("t{n}")).collect();
    let mut args = vec!["tag", FAILED];
    args.extend(thirty.iter().map(String::as_str));
    place.text(&args);
    let (code, said) = place.refused(&["tag", FAILED, "a", "b", "c"], None);
    assert_eq!(code, Some(1));
    assert!(said.contains("33 tags") && said.contains("at most 32"), "{said}");
    let output = place.run(&["tag", FAILED, "a", "b", "c", "--json"], None);
    let error: Value = serde_json::from_slice(&output.stdout)
        .or_else(|_| serde_json::from_slice(&output.stderr))
        .unwrap_or(Value::Null);
    assert!(
        error.to_string().contains("too_many_tags") || String::from_utf8_lossy(&output.stderr).contains("at most 32")
    );
    assert_eq!(place.json(&["show", FAILED])["tags"].as_array().unwrap().len(), 30);

    // A note over 64 KiB on standard input: refused, the note as it was.
    place.text(&["note", FAILED, "kept"]);
    let big = place.data.path().join("big.txt");
    std::fs::write(&big, "n".repeat(64 * 1024 + 1)).unwrap();
    let (code, said) = place.refused(&["note", FAILED, "-"], Some(&big));
    assert_eq!(code, Some(1));
    assert!(said.contains("at most 65536 bytes"), "{said}");
    let binary = place.data.path().join("binary.bin");
    std::fs::write(&binary, [b'o', b'k', 0xff, 0xfe]).unwrap();
    let (_, said) = place.refused(&["note", FAILED, "-"], Some(&binary));
    assert!(said.contains("not UTF-8 text (at byte 2)"), "{said}");
    std::fs::write(&big, "n".repeat(64 * 1024)).unwrap();
    assert_eq!(
        text_of(&place.run(&["note", FAILED, "-"], Some(&big))),
        format!("saved the note of {FAILED} (65536 bytes)\n")
    );

    // A session that is not there is named.
    let (code, said) = place.refused(&["note", "1795952522957_nope", "hello"], None);
    assert_eq!(code, Some(1));
    assert!(said.contains("1795952522957_nope"), "{said}");
    let (_, said) = place.refused(&["tag", "1795952522957_nope", "x"], None);
    assert!(said.contains("1795952522957_nope"), "{said}");
    // Before its note is read from standard input (`--remote` alike: one path, `tags::note`).
    let (code, said) = place.refused(&["note", "1795952522957_nope", "-"], Some(&binary));
    assert_eq!(code, Some(1));
    assert!(
        said.contains("no session `1795952522957_nope`") && !said.contains("UTF-8"),
        "{said}"
    );
}

#[test]
fn saved_views_list_sessions_through_their_filters() {
    let place = Place::new();
    place.text(&["tag", FAILED, "flaky"]);
    place.text(&["tag", FANOUT, "flaky"]);
    place.text(&["pin", FANOUT]);
    assert_eq!(
        place.text(&["view", "save", "pinned flaky", "--tag", "flaky", "--pinned"]),
        "saved view pinned flaky: --tag \"flaky\" --pinned\n"
    );
    let saved = place.json(&["view", "save", "failures", "--status", "error"]);
    assert_eq!(saved, json!({"name": "failures", "filters": {"status": "error"}}));
    place.text(&["view", "save", "all"]);
    let views = place.json(&["view", "list"]);
    let names: Vec<&str> = views
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["all", "failures", "pinned flaky"]);
    assert_eq!(views[2]["filters"], json!({"tags": ["flaky"], "pinned": true}));
    assert_eq!(place.listed(&["--view", "pinned flaky"]), [FANOUT]);
    // The captures' folders, copied now, read `unknown`: no failure among them.
    assert!(place.listed(&["--view", "failures"]).is_empty());
    assert_eq!(place.listed(&["--view", "all"]).len(), 2);
    // Saving again under a name replaces the view.
    place.text(&["view", "save", "failures", "--status", "unknown", "--agent", "nobody"]);
    assert!(place.listed(&["--view", "failures"]).is_empty());
    place.text(&["view", "save", "failures", "--status", "unknown", "--search", "quokka"]);
    place.text(&["note", FANOUT, "a quokka was here"]);
    assert_eq!(place.listed(&["--view", "failures"]), [FANOUT]);

    let (code, said) = place.refused(&["sessions", "--view", "failures", "--tag", "x"], None);
    assert_eq!(code, Some(2));
    assert!(said.contains("cannot be used with"), "{said}");
    assert_eq!(place.text(&["view", "delete", "failures"]), "deleted view failures\n");
    let (code, said) = place.refused(&["sessions", "--view", "failures"], None);
    assert_eq!(code, Some(1));
    assert!(said.contains("no saved view `failures`"), "{said}");
    let (_, said) = place.refused(&["view", "delete", "failures"], None);
    assert!(said.contains("no saved view `failures`"), "{said}");
    let (_, said) = place.refused(&["view", "save", "bad\tname"], None);
    assert!(
        said.contains("invalid view name") && said.contains("control character"),
        "{said}"
    );
    // Another workspace has none of them.
    let other = Place {
        workspace: fixture_workspace(),
        data: TempDir::new().unwrap(),
    };
    assert_eq!(other.json(&["view", "list"]), json!([]));
}

#[test]
fn watch_json_carries_each_sessions_tags() {
    let workspace = fixture_workspace();
    let root = workspace.path().to_str().unwrap();
    // `watch` reads the default store of the test binary: tag in it.
    text_of(&zstudio(&["tag", FAILED, "watched", "-w", root], None));
    let (mut watch, changes) = spawn_watch(root);
    let mut seen = std::collections::HashMap::new();
    while seen.len() < 2 {
        let change = changes
            .recv_timeout(std::time::Duration::from_secs(15))
            .expect("watch reported both sessions");
        if change["type"] == "session_added" {
            seen.insert(
                change["session_id"].as_str().unwrap().to_owned(),
                change["tags"].clone(),
            );
        }
    }
    watch.kill().unwrap();
    watch.wait().unwrap();
    assert_eq!(seen[FAILED], json!(["watched"]));
    assert_eq!(seen[FANOUT], json!([]));
}

#[test]
fn prune_keeps_tagged_and_annotated_sessions_unless_asked_and_says_how_many() {
    let place = Place::new();
    let sessions = place.workspace.path().join(".zibby/output/sessions");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    for id in [FAILED, FANOUT] {
        for entry in walk(&sessions.join(id)) {
            std::fs::File::open(&entry).unwrap().set_modified(old).unwrap();
        }
    }
    place.text(&["note", FANOUT, "keep: the fan-out that raced"]);
    let dry = place.run(&["prune", "--keep-days", "7", "--dry-run", "--json"], None);
    let doomed = json_of(&dry);
    let ids: Vec<&str> = doomed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [FAILED], "the annotated one is kept");
    let said = String::from_utf8_lossy(&dry.stderr);
    assert!(
        said.contains("kept 0 pinned and 1 tagged or annotated session(s)") && said.contains("--include-tagged"),
        "{said}"
    );

    place.text(&["tag", FAILED, "evidence"]);
    let report = place.run(&["prune", "--keep-days", "7", "--yes"], None);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(String::from_utf8_lossy(&report.stderr).contains("kept 0 pinned and 2 tagged or annotated"));
    assert!(
        sessions.join(FAILED).is_dir() && sessions.join(FANOUT).is_dir(),
        "nothing deleted"
    );

    // Asked: the tagged and annotated go; a pinned one stays whatever is asked.
    place.text(&["pin", FANOUT]);
    let report = place.run(&["prune", "--keep-days", "7", "--include-tagged", "--yes"], None);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(
        String::from_utf8_lossy(&report.stderr).contains("kept 1 pinned and 0 tagged"),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert!(!sessions.join(FAILED).exists());
    assert!(sessions.join(FANOUT).is_dir());
}

#[test]
fn a_bundle_carries_tags_and_note_to_another_workspace() {
    let from = Place::new();
    from.text(&["tag", FAILED, "flaky", "shared"]);
    from.text(&["note", FAILED, "look at the narwhal node"]);
    let bundle = from.data.path().join("failed.zip");
    from.json(&["export", FAILED, "-o", bundle.to_str().unwrap()]);

    let to = Place {
        workspace: TempDir::new().unwrap(),
        data: TempDir::new().unwrap(),
    };
    std::fs::create_dir_all(to.workspace.path().join(".zibby/output/sessions")).unwrap();
    to.json(&["import", bundle.to_str().unwrap()]);
    let shown = to.json(&["show", FAILED]);
    assert_eq!(shown["tags"], json!(["flaky", "shared"]));
    assert_eq!(shown["note"], "look at the narwhal node");
    assert_eq!(to.listed(&["--tag", "shared"]), [FAILED]);
    let hits = to.json(&["search", "narwhal"]);
    assert_eq!(
        (&hits[0]["kind"], &hits[0]["session_id"]),
        (&json!("note"), &json!(FAILED))
    );
}
