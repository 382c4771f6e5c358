//! Full-text search (SQLite FTS5) over run output, messages, logs, node names and notes.
//!
//! One contentless FTS table; each row's rowid is `source id * 8 + kind` ([`rowid`]), so the text
//! is stored once (in its own table, or for a `file`, in the session folder's file) and a hit leads
//! back to its row. The text of session folders' node output files is indexed at search time
//! (`folder_text`). A word `tag:NAME` of a query is no text to find: it keeps the hits of sessions
//! tagged NAME; a query of such words alone finds the sessions tagged so (kind `tag`).

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::connection::{write_transaction, QueryResult};
use super::{file_text, output, workspaces};
use crate::sessions::session::Workspace;

/// What a search hit is: the kind of row of the index it leads back to (that row's FTS rowid is
/// `source id * 8 + kind`). The lookups below select the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum SearchHitKind {
    Output = 0,
    Message = 1,
    Log = 2,
    Node = 3,
    /// A node's output file in a session folder (`folder_text`): what a run the studio did not
    /// start (a terminal, CI, a bucket) printed.
    File = 4,
    /// A session's note (`tags`): its source id is the session's key.
    Note = 5,
    /// A session holding the tags a query of `tag:NAME` words alone asks for: no row of the index.
    Tag = 6,
}

/// Kinds per source id in the FTS rowids: room for 8 (6 used).
pub(super) const KINDS: i64 = 8;

/// The FTS rowid of a source row of a kind.
pub(super) fn rowid(kind: Kind, source_id: i64) -> i64 {
    source_id * KINDS + kind as i64
}

pub(super) use SearchHitKind as Kind;

impl SearchHitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchHitKind::Output => "output",
            SearchHitKind::Message => "message",
            SearchHitKind::Log => "log",
            SearchHitKind::Node => "node",
            SearchHitKind::File => "file",
            SearchHitKind::Note => "note",
            SearchHitKind::Tag => "tag",
        }
    }
}

impl std::fmt::Display for SearchHitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A kind compares equal to its word (`hit.kind == "node"`), as the wire carries it.
impl PartialEq<&str> for SearchHitKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl rusqlite::types::FromSql for SearchHitKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<SearchHitKind> {
        match value.as_str()? {
            "output" => Ok(SearchHitKind::Output),
            "message" => Ok(SearchHitKind::Message),
            "log" => Ok(SearchHitKind::Log),
            "node" => Ok(SearchHitKind::Node),
            "file" => Ok(SearchHitKind::File),
            "note" => Ok(SearchHitKind::Note),
            "tag" => Ok(SearchHitKind::Tag),
            other => Err(rusqlite::types::FromSqlError::Other(
                format!("unknown search hit kind `{other}`").into(),
            )),
        }
    }
}

/// Indexes the text of one source row.
pub(super) fn index(conn: &Connection, kind: Kind, source_id: i64, text: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO search_text (rowid, text) VALUES (?1, ?2)")?
        .execute(params![rowid(kind, source_id), text])?;
    Ok(())
}

/// Removes a session's rows from the index (before the rows themselves go).
pub(super) fn unindex_session(tx: &Connection, session_key: i64) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM search_text WHERE rowid IN (
            SELECT b.id * 8 + 0 FROM output_blocks b JOIN runs r ON r.key = b.run_key WHERE r.session_key = ?1
            UNION ALL SELECT id * 8 + 1 FROM messages WHERE session_key = ?1
            UNION ALL SELECT id * 8 + 2 FROM logs WHERE session_key = ?1
            UNION ALL SELECT s.id * 8 + 3 FROM spans s JOIN runs r ON r.id = s.run_id WHERE r.session_key = ?1
            UNION ALL SELECT key * 8 + 5 FROM sessions WHERE key = ?1 AND note IS NOT NULL)",
        [session_key],
    )?;
    Ok(())
}

/// Removes a session's note from the index (before it changes).
pub(super) fn unindex_note(tx: &Connection, session_key: i64) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM search_text WHERE rowid = ?1")?
        .execute([rowid(Kind::Note, session_key)])?;
    Ok(())
}

/// Adds up to `max_blocks` output blocks (and up to 64 times as many log lines and node names)
/// to the search index, oldest first; returns how many. Output and logs are stored at once and
/// indexed behind them, so a flood of output or of nodes is never slowed by indexing.
pub(super) fn index_pending(conn: &Connection, max_blocks: usize) -> QueryResult<usize> {
    let rows = max_blocks.saturating_mul(64);
    Ok(index_pending_rows(
        conn,
        "SELECT id, text FROM output_blocks WHERE indexed = 0 ORDER BY id LIMIT ?1",
        "UPDATE output_blocks SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
        Kind::Output,
        max_blocks,
    )? + index_pending_rows(
        conn,
        "SELECT id, event || ' ' || message FROM logs WHERE indexed = 0 ORDER BY id LIMIT ?1",
        "UPDATE logs SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
        Kind::Log,
        rows,
    )? + index_pending_rows(
        conn,
        "SELECT id, name FROM spans WHERE indexed = 0 ORDER BY id LIMIT ?1",
        "UPDATE spans SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
        Kind::Node,
        rows,
    )?)
}

/// Indexes up to `max` rows that `select` (id, text) finds not indexed yet, then marks them.
fn index_pending_rows(conn: &Connection, select: &str, mark: &str, kind: Kind, max: usize) -> QueryResult<usize> {
    let tx = write_transaction(conn)?;
    let pending: Vec<(i64, String)> = tx
        .prepare_cached(select)?
        .query_map([max as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, text) in &pending {
        index(&tx, kind, *id, text)?;
    }
    if let Some((last, _)) = pending.last() {
        tx.prepare_cached(mark)?.execute([last])?;
    }
    tx.commit()?;
    Ok(pending.len())
}

/// One place a search matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SearchHit {
    pub kind: SearchHitKind,
    pub session_id: String,
    pub run_id: Option<String>,
    pub node: Option<String>,
    /// The output line number, message number or log id; for a file, the line number in it
    /// (counted from the start of its last MiB when it is larger, the part indexed).
    pub line: i64,
    pub text: String,
    /// A `file` hit's file, relative to the session folder (`plan/raw_stream_output.txt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub path: Option<String>,
}

/// The tags a query's `tag:NAME` words ask for, and its other words (the text to find).
fn split_tags(query: &str) -> (Vec<&str>, String) {
    let (tags, words): (Vec<&str>, Vec<&str>) = query.split_whitespace().partition(|word| word.starts_with("tag:"));
    let tags = tags.into_iter().map(|word| &word["tag:".len()..]).collect();
    (tags, words.join(" "))
}

/// The sessions of a workspace holding every one of `tags` (and the tags each holds), most
/// recently tagged first.
fn tagged_sessions(conn: &Connection, workspace_key: i64, tags: &[&str]) -> QueryResult<Vec<(String, String)>> {
    let mut wanted: Vec<&str> = tags.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut statement = conn.prepare_cached(
        "SELECT s.session_id, group_concat(t.tag, ' ') FROM sessions s JOIN session_tags t ON t.session_key = s.key
             WHERE s.workspace_id = ?1 GROUP BY s.key
             HAVING sum(t.tag IN (SELECT value FROM json_each(?2))) = ?3
             ORDER BY max(t.tagged_at) DESC, s.session_id",
    )?;
    let rows = statement.query_map(
        params![
            workspace_key,
            serde_json::to_string(&wanted).unwrap_or_default(),
            wanted.len() as i64
        ],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A query of `tag:NAME` words alone: one hit for each session `tagged`, its tags as its text.
fn tag_hits(tagged: Vec<(String, String)>, limit: usize) -> Vec<SearchHit> {
    tagged
        .into_iter()
        .take(limit)
        .map(|(session_id, held)| SearchHit {
            kind: SearchHitKind::Tag,
            session_id,
            run_id: None,
            node: None,
            line: 0,
            text: held,
            path: None,
        })
        .collect()
}

/// Words of the query, each quoted (so `"`, `*`, `-` and `:` are text, not syntax) and matched as
/// a prefix; all must occur.
fn fts_query(query: &str) -> Option<String> {
    let terms: Vec<String> = query
        .split_whitespace()
        .map(|word| format!("\"{}\"*", word.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

/// Hits newest first: the FTS table is walked in descending rowid order (no ranking of every
/// match, so a common word costs no more than a rare one), each hit looked up in its own table
/// and kept when it belongs to the workspace, until `limit` are found.
pub(super) fn search(
    conn: &Connection,
    workspace: &Workspace,
    query: &str,
    limit: usize,
) -> QueryResult<Vec<SearchHit>> {
    let (tags, words) = split_tags(query);
    let Some(workspace_key) = workspaces::known_key(conn, workspace)? else {
        return Ok(Vec::new());
    };
    let tagged = if tags.is_empty() {
        None
    } else {
        Some(tagged_sessions(conn, workspace_key, &tags)?)
    };
    let Some(fts) = fts_query(&words) else {
        return Ok(tag_hits(tagged.unwrap_or_default(), limit));
    };
    let allowed: Option<std::collections::HashSet<String>> =
        tagged.map(|tagged| tagged.into_iter().map(|(id, _)| id).collect());
    let mut matches =
        conn.prepare_cached("SELECT rowid FROM search_text WHERE search_text MATCH ?1 ORDER BY rowid DESC")?;
    let mut rows = matches.query([fts])?;
    let mut lookups = [
        // One per kind, in the order of the kind codes. An output hit is a block of lines.
        "SELECT 'output', s.session_id, r.id, b.spans, b.first_seq, b.text FROM output_blocks b
           JOIN runs r ON r.key = b.run_key JOIN sessions s ON s.key = r.session_key
           WHERE b.id = ?1 AND s.workspace_id = ?2",
        "SELECT 'message', s.session_id, NULL, NULL, m.seq, m.text FROM messages m
           JOIN sessions s ON s.key = m.session_key WHERE m.id = ?1 AND s.workspace_id = ?2",
        "SELECT 'log', s.session_id, l.run_id, NULL, l.id, l.event || ' ' || l.message FROM logs l
           JOIN sessions s ON s.key = l.session_key WHERE l.id = ?1 AND s.workspace_id = ?2",
        "SELECT 'node', s.session_id, sp.run_id, sp.name, sp.id, sp.name FROM spans sp
           JOIN runs r ON r.id = sp.run_id JOIN sessions s ON s.key = r.session_key
           WHERE sp.id = ?1 AND s.workspace_id = ?2",
        // A file hit is the file's text from where it was indexed (its path, until read below).
        "SELECT 'file', f.session_id, NULL, f.node, f.first_byte, f.path FROM folder_files f
           WHERE f.id = ?1 AND f.workspace_id = ?2",
        "SELECT 'note', s.session_id, NULL, NULL, 0, s.note FROM sessions s
           WHERE s.key = ?1 AND s.workspace_id = ?2 AND s.note IS NOT NULL",
    ]
    .iter()
    .map(|sql| conn.prepare_cached(sql))
    .collect::<Result<Vec<_>, _>>()?;
    let terms: Vec<String> = words.split_whitespace().map(fold).collect();
    let mut hits = Vec::new();
    while hits.len() < limit {
        let Some(row) = rows.next()? else {
            break;
        };
        let rowid: i64 = row.get(0)?;
        let Some(lookup) = lookups.get_mut((rowid % KINDS) as usize) else {
            continue;
        };
        let hit = lookup
            .query_row(params![rowid / KINDS, workspace_key], |r| {
                Ok(SearchHit {
                    kind: r.get(0)?,
                    session_id: r.get(1)?,
                    run_id: r.get(2)?,
                    // For output, the block's spans until it is narrowed to lines below.
                    node: r.get(3)?,
                    line: r.get(4)?,
                    text: r.get(5)?,
                    path: None,
                })
            })
            .optional()?;
        let Some(hit) = hit else { continue };
        if allowed
            .as_ref()
            .is_some_and(|allowed| !allowed.contains(&hit.session_id))
        {
            continue;
        }
        if hit.kind == SearchHitKind::Note {
            hits.push(note_hit(hit, &terms));
            continue;
        }
        if hit.kind == SearchHitKind::File {
            file_hits(workspace, hit, &terms, limit - hits.len(), &mut hits);
            continue;
        }
        if hit.kind != SearchHitKind::Output {
            hits.push(hit);
            continue;
        }
        let lines = output::block_lines(hit.line, &hit.text, hit.node.as_deref().unwrap_or("[]"));
        let matching: Vec<_> = lines.iter().filter(|line| line_matches(&line.text, &terms)).collect();
        // The index matched the block; if no single line holds every word, the block's first line
        // stands for it.
        let chosen = if matching.is_empty() {
            lines.iter().take(1).collect()
        } else {
            matching
        };
        for line in chosen.into_iter().rev().take(limit - hits.len()) {
            hits.push(SearchHit {
                kind: SearchHitKind::Output,
                session_id: hit.session_id.clone(),
                run_id: hit.run_id.clone(),
                node: line.node.clone(),
                line: line.seq,
                text: line.text.clone(),
                path: None,
            });
        }
    }
    Ok(hits)
}

/// The hits of one indexed file (`hit` as looked up: its path in `text`, where its indexed text
/// begins in `line`): its lines that hold every word, last first, at most `room`. A file whose
/// text no longer matches (it changed since; the next search indexes it again) gives none; when
/// no single line holds every word, its first line holding one stands for it.
fn file_hits(workspace: &Workspace, hit: SearchHit, terms: &[String], room: usize, hits: &mut Vec<SearchHit>) {
    let path = hit.text;
    let Some(text) = file_text::indexed_text(workspace, &hit.session_id, &path, hit.line as u64) else {
        return;
    };
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(at, line)| (at + 1, line)).collect();
    let mut matching: Vec<&(usize, &str)> = lines.iter().filter(|(_, line)| line_matches(line, terms)).collect();
    if matching.is_empty() {
        let any = |line: &str| terms.iter().any(|term| line_matches(line, std::slice::from_ref(term)));
        matching = lines.iter().filter(|(_, line)| any(line)).take(1).collect();
    }
    for (number, line) in matching.into_iter().rev().take(room) {
        hits.push(SearchHit {
            kind: SearchHitKind::File,
            session_id: hit.session_id.clone(),
            run_id: None,
            node: hit.node.clone(),
            line: *number as i64,
            text: excerpt(line, terms, EXCERPT_CHARS),
            path: Some(path.clone()),
        });
    }
}

/// A note's hit: its first line holding every word (else its first line), cut around the match,
/// with its line number.
fn note_hit(hit: SearchHit, terms: &[String]) -> SearchHit {
    let mut lines = hit.text.lines().enumerate();
    let (at, line) = lines
        .clone()
        .find(|(_, line)| line_matches(line, terms))
        .or_else(|| lines.next())
        .unwrap_or((0, ""));
    SearchHit {
        line: at as i64 + 1,
        text: excerpt(line, terms, EXCERPT_CHARS),
        ..hit
    }
}

/// A file hit's text is at most this many characters of its line, around the first match.
const EXCERPT_CHARS: usize = 240;

/// At most `max` characters of `line`, from a little before the first term found (with `…`
/// where it is cut).
fn excerpt(line: &str, terms: &[String], max: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= max {
        return line.to_owned();
    }
    let folded = fold(line);
    // `fold` keeps one character for one (lower case may add some: then the start is a guess).
    let at = terms
        .iter()
        .filter_map(|term| folded.find(term.as_str()))
        .min()
        .map_or(0, |byte| folded[..byte].chars().count());
    let start = at.saturating_sub(max / 4).min(chars.len() - max);
    let end = start + max;
    let mut text = String::new();
    if start > 0 {
        text.push('…');
    }
    text.extend(&chars[start..end]);
    if end < chars.len() {
        text.push('…');
    }
    text
}

/// Whether a line holds every term as the start of a word, the way the index compares text:
/// case and common accents folded.
fn line_matches(line: &str, terms: &[String]) -> bool {
    let line = fold(line);
    terms.iter().all(|term| {
        line.match_indices(term.as_str())
            .any(|(at, _)| at == 0 || !line[..at].chars().next_back().is_some_and(char::is_alphanumeric))
    })
}

/// Lower case, with the accents of Latin letters removed (`Hôtel` → `hotel`).
fn fold(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => 'a',
            'ç' | 'ć' | 'č' => 'c',
            'ď' => 'd',
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => 'e',
            'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' => 'i',
            'ñ' | 'ń' | 'ň' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => 'o',
            'ř' => 'r',
            'ś' | 'š' | 'ş' => 's',
            'ť' | 'ţ' => 't',
            'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' => 'u',
            'ý' | 'ÿ' => 'y',
            'ź' | 'ż' | 'ž' => 'z',
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_its_first_match() {
        let line = format!("{}needle{}", "a ".repeat(500), " b".repeat(500));
        let cut = excerpt(&line, &["needle".to_owned()], 40);
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("needle"), "{cut}");
        assert_eq!(cut.chars().count(), 42);
        assert_eq!(excerpt("short needle", &["needle".to_owned()], 40), "short needle");
    }

    #[test]
    fn query_words_are_quoted_prefixes() {
        assert_eq!(fts_query("boom fail*").unwrap(), r#""boom"* "fail*"*"#);
        assert_eq!(fts_query(r#"say "hi""#).unwrap(), r#""say"* """hi"""*"#);
        assert_eq!(fts_query("   "), None);
    }

    #[test]
    fn lines_match_word_prefixes_without_case_or_accents() {
        let terms: Vec<String> = ["hotel", "kyo"].iter().map(|t| fold(t)).collect();
        assert!(line_matches("Réserve un Hôtel à Kyōto", &terms));
        assert!(
            !line_matches("a motel in Kyoto", &terms),
            "inside a word is not a word start"
        );
        assert!(!line_matches("hotel only", &terms), "every term must be there");
    }
}
