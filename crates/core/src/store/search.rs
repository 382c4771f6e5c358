//! Full-text search (SQLite FTS5) over run output, messages, logs and node names.
//!
//! One contentless FTS table; each row's rowid is `source id * 4 + kind`, so the text is stored
//! once (in its own table) and a hit leads back to its row.

use rusqlite::{params, Connection, Transaction};
use serde::Serialize;

use super::Store;
use crate::error::Error;
use crate::session::Workspace;

/// What a source row is; its FTS rowid is `source id * 4 + kind`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Output = 0,
    Message = 1,
    Log = 2,
    Node = 3,
}

/// Indexes the text of one source row.
pub(super) fn index(conn: &Connection, kind: Kind, source_id: i64, text: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO search_text (rowid, text) VALUES (?1, ?2)")?
        .execute(params![source_id * 4 + kind as i64, text])?;
    Ok(())
}

/// Removes a session's rows from the index (before the rows themselves go).
pub(super) fn unindex_session(tx: &Transaction<'_>, session_key: i64) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM search_text WHERE rowid IN (
            SELECT o.id * 4 + 0 FROM run_output o JOIN runs r ON r.id = o.run_id WHERE r.session_key = ?1
            UNION ALL SELECT id * 4 + 1 FROM messages WHERE session_key = ?1
            UNION ALL SELECT id * 4 + 2 FROM logs WHERE session_key = ?1
            UNION ALL SELECT s.id * 4 + 3 FROM spans s JOIN runs r ON r.id = s.run_id WHERE r.session_key = ?1)",
        [session_key],
    )?;
    Ok(())
}

/// One place a search matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// `output`, `message`, `log` or `node`.
    pub kind: String,
    pub session_id: String,
    pub run_id: Option<String>,
    pub node: Option<String>,
    /// The output line number, message number or log id.
    pub line: i64,
    pub text: String,
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

pub(super) fn search(store: &Store, workspace: &Workspace, query: &str, limit: usize) -> Result<Vec<SearchHit>, Error> {
    let Some(fts) = fts_query(query) else {
        return Ok(Vec::new());
    };
    let sql = "
        WITH hits AS (SELECT rowid, rank FROM search_text WHERE search_text MATCH ?1),
        ws AS (SELECT id FROM workspaces WHERE root = ?2)
        SELECT kind, session_id, run_id, node, line, text FROM (
            SELECT 'output' AS kind, s.session_id, o.run_id, o.node, o.seq AS line, o.text, h.rank
              FROM hits h JOIN run_output o ON o.id = h.rowid / 4 AND h.rowid % 4 = 0
              JOIN runs r ON r.id = o.run_id JOIN sessions s ON s.key = r.session_key
              WHERE s.workspace_id = (SELECT id FROM ws)
            UNION ALL
            SELECT 'message', s.session_id, NULL, NULL, m.seq, m.text, h.rank
              FROM hits h JOIN messages m ON m.id = h.rowid / 4 AND h.rowid % 4 = 1
              JOIN sessions s ON s.key = m.session_key WHERE s.workspace_id = (SELECT id FROM ws)
            UNION ALL
            SELECT 'log', s.session_id, l.run_id, NULL, l.id, l.event || ' ' || l.message, h.rank
              FROM hits h JOIN logs l ON l.id = h.rowid / 4 AND h.rowid % 4 = 2
              JOIN sessions s ON s.key = l.session_key WHERE s.workspace_id = (SELECT id FROM ws)
            UNION ALL
            SELECT 'node', s.session_id, sp.run_id, sp.name, sp.id, sp.name, h.rank
              FROM hits h JOIN spans sp ON sp.id = h.rowid / 4 AND h.rowid % 4 = 3
              JOIN runs r ON r.id = sp.run_id JOIN sessions s ON s.key = r.session_key
              WHERE s.workspace_id = (SELECT id FROM ws)
        ) ORDER BY rank LIMIT ?3";
    let mut statement = store.conn().prepare_cached(sql).map_err(|e| store.sql_error(e))?;
    let rows = statement
        .query_map(params![fts, workspace.root().to_string_lossy(), limit as i64], |r| {
            Ok(SearchHit {
                kind: r.get(0)?,
                session_id: r.get(1)?,
                run_id: r.get(2)?,
                node: r.get(3)?,
                line: r.get(4)?,
                text: r.get(5)?,
            })
        })
        .map_err(|e| store.sql_error(e))?;
    rows.collect::<Result<_, _>>().map_err(|e| store.sql_error(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_quoted_prefixes() {
        assert_eq!(fts_query("boom fail*").unwrap(), r#""boom"* "fail*"*"#);
        assert_eq!(fts_query(r#"say "hi""#).unwrap(), r#""say"* """hi"""*"#);
        assert_eq!(fts_query("   "), None);
    }
}
