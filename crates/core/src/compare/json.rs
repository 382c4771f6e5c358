//! `result.json` compared as data: the paths changed, added and removed with their values on
//! each side, from `json-patch`'s diff (RFC 6902). The patch is replayed on A to read what each
//! path held before, and the line diff of both values pretty-printed is given beside it.

use serde::Serialize;
use serde_json::Value;

use super::text::{diff_texts, Limits, TextDiff};

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum PathChange {
    Changed,
    Added,
    Removed,
}

/// One path of a JSON value that differs, as a JSON pointer (`/items/2/name`; `""`: the whole
/// value).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PathDiff {
    pub path: String,
    pub change: PathChange,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub a: Option<Value>,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub b: Option<Value>,
}

/// Two JSON values compared: their line diff (pretty-printed) and the paths that differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JsonDiff {
    pub changed: bool,
    pub hunks: Vec<super::text::Hunk>,
    pub more: bool,
    pub paths: Vec<PathDiff>,
}

/// At most this many paths are listed (the line diff still shows the rest, hunk by hunk).
const MAX_PATHS: usize = 200;

/// Compares two values; when one side has none, the other's whole value is added (or removed)
/// at the root path `""`.
pub fn diff_values(a: Option<&Value>, b: Option<&Value>, limits: &Limits) -> JsonDiff {
    let pretty = |value: Option<&Value>| value.map(|v| serde_json::to_string_pretty(v).unwrap_or_default());
    let TextDiff { changed, hunks, more } = diff_texts(
        pretty(a).as_deref().unwrap_or(""),
        pretty(b).as_deref().unwrap_or(""),
        limits,
    );
    let paths = match (a, b) {
        (Some(a), Some(b)) => paths(a, b),
        (None, Some(b)) => vec![PathDiff {
            path: String::new(),
            change: PathChange::Added,
            a: None,
            b: Some(b.clone()),
        }],
        (Some(a), None) => vec![PathDiff {
            path: String::new(),
            change: PathChange::Removed,
            a: Some(a.clone()),
            b: None,
        }],
        (None, None) => Vec::new(),
    };
    JsonDiff {
        changed: changed || !paths.is_empty(),
        hunks,
        more,
        paths,
    }
}

/// The paths of `json_patch::diff(a, b)`, each with the value it held in A (read from A as the
/// patch is replayed on it) and the value it holds in B.
fn paths(a: &Value, b: &Value) -> Vec<PathDiff> {
    let patch = json_patch::diff(a, b);
    let mut replayed = a.clone();
    let mut found = Vec::new();
    // Items removed from the end of an array share one pointer in the patch (each removal shifts
    // the next one down): shown at the index each had in A.
    let mut removed_at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for operation in patch.0 {
        if found.len() == MAX_PATHS {
            break;
        }
        let (path, change, before, after) = match &operation {
            json_patch::PatchOperation::Add(add) => {
                (add.path.to_string(), PathChange::Added, None, Some(add.value.clone()))
            }
            json_patch::PatchOperation::Remove(remove) => {
                let path = remove.path.to_string();
                let before = replayed.pointer(&path).cloned();
                let seen = removed_at.entry(path.clone()).or_insert(0);
                let shown = shift_last_index(&path, *seen);
                *seen += 1;
                (shown, PathChange::Removed, before, None)
            }
            json_patch::PatchOperation::Replace(replace) => {
                let path = replace.path.to_string();
                let before = replayed.pointer(&path).cloned();
                (path, PathChange::Changed, before, Some(replace.value.clone()))
            }
            // `diff` makes only the three above.
            _ => continue,
        };
        if json_patch::patch(&mut replayed, std::slice::from_ref(&operation)).is_err() {
            break;
        }
        found.push(PathDiff {
            path,
            change,
            a: before,
            b: after,
        });
    }
    found
}

/// `/items/3` shifted by `by` (`/items/5` for 2); a pointer not ending in an index is kept.
fn shift_last_index(path: &str, by: usize) -> String {
    match path.rsplit_once('/') {
        Some((parent, last)) => match last.parse::<usize>() {
            Ok(index) => format!("{parent}/{}", index + by),
            Err(_) => path.to_owned(),
        },
        None => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_changed_added_and_removed_carry_both_values() {
        let a = json!({"ok": true, "items": [1, 2, 3, 4], "gone": "x", "same": {"k": 1}});
        let b = json!({"ok": false, "items": [1, 9], "new": [1], "same": {"k": 1}});
        let diff = diff_values(Some(&a), Some(&b), &Limits::default());
        assert!(diff.changed);
        let described: Vec<String> = diff
            .paths
            .iter()
            .map(|p| format!("{:?} {} {:?} {:?}", p.change, p.path, p.a, p.b))
            .collect();
        for expected in [
            "Changed /ok Some(Bool(true)) Some(Bool(false))",
            "Changed /items/1 Some(Number(2)) Some(Number(9))",
            "Removed /items/2 Some(Number(3)) None",
            "Removed /items/3 Some(Number(4)) None",
            "Added /new None Some(Array [Number(1)])",
            "Removed /gone Some(String(\"x\")) None",
        ] {
            assert!(
                described.iter().any(|d| d == expected),
                "{expected} not in {described:#?}"
            );
        }
        assert_eq!(described.len(), 6);
        assert!(!diff.hunks.is_empty());
    }

    #[test]
    fn equal_values_differ_nowhere_and_a_missing_side_is_the_root_added() {
        let value = json!({"a": [1, {"b": null}]});
        assert_eq!(
            diff_values(Some(&value), Some(&value.clone()), &Limits::default()),
            JsonDiff::default()
        );
        let added = diff_values(None, Some(&value), &Limits::default());
        assert_eq!(added.paths[0].change, PathChange::Added);
        assert_eq!(added.paths[0].path, "");
    }
}
