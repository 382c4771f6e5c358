//! The store's schema, as an append-only list of migrations over SQLite's `user_version`.
//!
//! Never edit or remove a migration that has shipped: add a new one. The test below applies the
//! list from an empty file and from every earlier version.

use rusqlite::Connection;

/// Each entry takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    r#"
    CREATE TABLE workspaces (
        id INTEGER PRIMARY KEY,
        root TEXT NOT NULL UNIQUE
    );
    CREATE TABLE sessions (
        key INTEGER PRIMARY KEY,
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        agent TEXT,
        title TEXT,
        metadata TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        pinned_at INTEGER,
        UNIQUE (workspace_id, session_id)
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_key INTEGER NOT NULL REFERENCES sessions(key) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (session_key, seq)
    );
    CREATE TABLE runs (
        key INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_key INTEGER NOT NULL REFERENCES sessions(key) ON DELETE CASCADE,
        agent TEXT,
        command TEXT NOT NULL,
        pid INTEGER,
        pgid INTEGER,
        owner_pid INTEGER,
        status TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        exit_code INTEGER,
        error TEXT,
        stopped_by TEXT,
        -- A stop asked for by another studio process: graceful or forced.
        stop_requested TEXT,
        -- The run keeper's folder (its output files and exit status), for a run that may outlive
        -- the studio that started it.
        keeper_dir TEXT,
        replayed_node TEXT
    );
    CREATE INDEX runs_by_session ON runs (session_key, started_at);
    CREATE INDEX runs_running ON runs (status) WHERE status = 'running';
    -- A run's output in blocks of lines (see output.rs): `text` is the lines joined by a
    -- newline, `spans` their stream, arrival time and node, run-length encoded as JSON.
    CREATE TABLE output_blocks (
        id INTEGER PRIMARY KEY,
        run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
        first_seq INTEGER NOT NULL,
        line_count INTEGER NOT NULL,
        text TEXT NOT NULL,
        spans TEXT NOT NULL,
        -- 0 until the block is in the search index (indexing runs behind the output).
        indexed INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX output_blocks_by_run ON output_blocks (run_key, first_seq);
    CREATE INDEX output_blocks_to_index ON output_blocks (id) WHERE indexed = 0;
    CREATE TABLE logs (
        id INTEGER PRIMARY KEY,
        session_key INTEGER NOT NULL REFERENCES sessions(key) ON DELETE CASCADE,
        run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
        at INTEGER NOT NULL,
        level TEXT NOT NULL,
        event TEXT NOT NULL,
        message TEXT NOT NULL,
        fields TEXT
    );
    CREATE INDEX logs_by_session ON logs (session_key, id);
    CREATE INDEX logs_by_run ON logs (run_id);
    CREATE TABLE spans (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        parent_id INTEGER REFERENCES spans(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        depth INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        status TEXT NOT NULL
    );
    CREATE INDEX spans_by_run ON spans (run_id);
    CREATE INDEX spans_by_parent ON spans (parent_id);
    CREATE TABLE folder_index (
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        summary TEXT NOT NULL,
        PRIMARY KEY (workspace_id, session_id)
    );
    -- Full-text search over output blocks, messages, logs and node names. Contentless: the text
    -- lives in its own table; the rowid says where (source row id * 4 + kind, see search.rs).
    CREATE VIRTUAL TABLE search_text USING fts5 (
        text,
        content = '',
        contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2'
    );
    "#,
    // 2: when the window last opened each workspace (the recent workspaces, the last one).
    r#"
    ALTER TABLE workspaces ADD COLUMN opened_at INTEGER;
    CREATE INDEX workspaces_by_opened ON workspaces (opened_at) WHERE opened_at IS NOT NULL;
    "#,
    // 3: who the run's process group leader is, beyond its id (which the system reuses): when it
    // started (/proc/<pid>/stat field 22, clock ticks since boot) and in which boot. No signal
    // goes to a run whose leader does not match (process.rs).
    r#"
    ALTER TABLE runs ADD COLUMN pgid_start_time INTEGER;
    ALTER TABLE runs ADD COLUMN boot_id TEXT;
    "#,
    // 4: the agent launches the user trusted to run, by workspace and a SHA-256 of the exact
    // agent, command, folder and environment (agents::Launch).
    r#"
    CREATE TABLE trusted_launches (
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        digest TEXT NOT NULL,
        trusted_at INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, digest)
    );
    "#,
    // 5: log lines and node names are added to the search index behind the run, as output blocks
    // are (a run of 80,000 nodes spent most of its time indexing its node log lines one by one).
    // The rows that were there are indexed already.
    r#"
    ALTER TABLE logs ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX logs_to_index ON logs (id) WHERE indexed = 0;
    ALTER TABLE spans ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX spans_to_index ON spans (id) WHERE indexed = 0;
    "#,
    // 6: summaries name their session (`agent`, `title` from the folder): the folder index's
    // summaries, cached before they did, are read again once (the index is a cache).
    r#"
    DELETE FROM folder_index;
    "#,
    // 7: sessions brought in by `zstudio import` (a bundle, a session folder, a captured log):
    // what they were imported from and when.
    r#"
    ALTER TABLE sessions ADD COLUMN imported_from TEXT;
    ALTER TABLE sessions ADD COLUMN imported_at INTEGER;
    "#,
    // 8: what each node of a run printed on stdout that it used (`cost::OutputUsageReader`): the
    // fallback for nodes whose folder has no raw stream. The folder index keeps its summaries'
    // node usage apart (`index`, module doc), and the usage objects now carry their labels, so
    // its summaries (a cache) are read again once.
    r#"
    ALTER TABLE folder_index ADD COLUMN node_usage TEXT;
    CREATE TABLE node_usage (
        run_key INTEGER NOT NULL REFERENCES runs(key) ON DELETE CASCADE,
        node TEXT NOT NULL,
        usage TEXT NOT NULL,
        PRIMARY KEY (run_key, node)
    );
    DELETE FROM folder_index;
    "#,
    // 9: the studio process that follows a run is known by its start time too (`/proc/<pid>/stat`
    // field 22), as a run's leader is: an owner id reused by another process is not the owner.
    r#"
    ALTER TABLE runs ADD COLUMN owner_start_time INTEGER;
    "#,
    // 10: summaries of runs the studio did not start order their nodes by `currentNode`, mark
    // guessed places (`order_uncertain`) and say what is not known (`not_known`): the folder
    // index's summaries, cached before they did, are read again once (the index is a cache).
    r#"
    DELETE FROM folder_index;
    "#,
    // 11: the nodes a live watch saw of a session the studio did not run, in the order seen
    // (`nodes_seen`), laid over the folder by every surface. The folder index's summaries, which
    // held that order alone (so `sessions` and `show` told different orders), are read again.
    r#"
    CREATE TABLE nodes_seen (
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        nodes TEXT NOT NULL,
        PRIMARY KEY (workspace_id, session_id)
    );
    DELETE FROM folder_index;
    "#,
    // 12: the text of session folders' node output files is searched too (`folder_text`): a
    // fifth kind of hit, so the search index's rowids become `source id * 8 + kind` (they were
    // `* 4`). The index is contentless: it is made again from the rows it indexed. Messages
    // (indexed as they are stored) are indexed here; outputs, logs and node names are marked not
    // indexed, for `search::index_pending` behind the window, as new ones are: re-indexing 1 GB
    // of output here held the launch about a minute (docs/benchmarks.md). (Edited after it
    // shipped, in session 16; the schema it makes is the same, a store made by either is valid.)
    // `folder_text` is what each session folder's text was indexed from, `folder_files` each file
    // indexed (the FTS row of kind 4).
    r#"
    DROP TABLE search_text;
    CREATE VIRTUAL TABLE search_text USING fts5 (
        text,
        content = '',
        contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2'
    );
    INSERT INTO search_text (rowid, text) SELECT id * 8 + 1, text FROM messages;
    UPDATE output_blocks SET indexed = 0 WHERE indexed = 1;
    UPDATE logs SET indexed = 0 WHERE indexed = 1;
    UPDATE spans SET indexed = 0 WHERE indexed = 1;
    CREATE TABLE folder_text (
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        print TEXT NOT NULL,
        PRIMARY KEY (workspace_id, session_id)
    );
    CREATE TABLE folder_files (
        id INTEGER PRIMARY KEY,
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        -- Relative to the session folder, `/`-separated.
        path TEXT NOT NULL,
        node TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        modified TEXT NOT NULL,
        -- Where the text indexed begins (past the first line cut, for a file's tail).
        first_byte INTEGER NOT NULL,
        UNIQUE (workspace_id, session_id, path)
    );
    "#,
    // 13: where a run was asked for, when not by the studio's own faces: `mcp` for a run a coding
    // agent started through `zstudio mcp` (`runs::set_origin`). Null for the others.
    r#"
    ALTER TABLE runs ADD COLUMN origin TEXT;
    "#,
    // 14: what a user gives sessions (issue 44): tags (`session_tags`, keyed by the session row as
    // a pin is), one note per session (`sessions.note`, in the search index as kind 5, rowid
    // `session key * 8 + 5`), and saved views: the table's filters under a name, per workspace
    // (`filters` is `views::Filters` as JSON).
    r#"
    CREATE TABLE session_tags (
        session_key INTEGER NOT NULL REFERENCES sessions(key) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        tagged_at INTEGER NOT NULL,
        PRIMARY KEY (session_key, tag)
    );
    CREATE INDEX session_tags_by_tag ON session_tags (tag);
    ALTER TABLE sessions ADD COLUMN note TEXT;
    ALTER TABLE sessions ADD COLUMN noted_at INTEGER;
    CREATE TABLE saved_views (
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        saved_at INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, name)
    );
    "#,
    // 15: the budget trusted with a launch (`Launch::trust_key` in `digest` from now on: the same
    // text as the digests kept before), its ceiling: NULL is no limit, which any budget keeps
    // within, so what was trusted before stays trusted.
    r#"
    ALTER TABLE trusted_launches ADD COLUMN max_cost_usd REAL;
    ALTER TABLE trusted_launches ADD COLUMN max_tokens INTEGER;
    ALTER TABLE trusted_launches ADD COLUMN daily_usd REAL;
    "#,
    // 16: the folder index as a catalogue (`catalogue`): each row's place in the listing (its
    // summary's `updated_at`, ms) and whether it was `running` when read, indexed, so that a page
    // of the listing is read in the listing's order without the rows after it; `folder_names`,
    // the sessions folder's own time when its names were last all compared with the index (a
    // trigger forgets it when a row goes, so a row dropped for any reason sends the next page to
    // the names again). The index's rows, stored before they had a place, are read again once.
    r#"
    ALTER TABLE folder_index ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE folder_index ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX folder_index_by_recency ON folder_index (workspace_id, updated_at DESC, session_id DESC);
    CREATE INDEX folder_index_running ON folder_index (workspace_id) WHERE running = 1;
    CREATE TABLE folder_names (
        workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
        stamp TEXT NOT NULL
    );
    CREATE TRIGGER folder_index_forgets_names AFTER DELETE ON folder_index BEGIN
        DELETE FROM folder_names WHERE workspace_id = OLD.workspace_id;
    END;
    DELETE FROM folder_index;
    "#,
    // 17: the limits a run was started with (`runs.budget`: JSON of its `max_cost_usd` and
    // `max_tokens`; NULL for none), so that a studio that adopts a kept run holds it to them.
    r#"
    ALTER TABLE runs ADD COLUMN budget TEXT;
    "#,
    // 18: how many rows the folder index holds for each workspace, kept by triggers as rows come
    // and go (an upsert that updates a row inserts none), so that a page's count of every session
    // is one row read, not the index's 100,000 entries counted (`catalogue::len`).
    r#"
    CREATE TABLE folder_counts (
        workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
        sessions INTEGER NOT NULL
    );
    INSERT INTO folder_counts (workspace_id, sessions)
        SELECT workspace_id, count(*) FROM folder_index GROUP BY workspace_id;
    CREATE TRIGGER folder_index_counts_a_row AFTER INSERT ON folder_index BEGIN
        INSERT INTO folder_counts (workspace_id, sessions) VALUES (NEW.workspace_id, 1)
            ON CONFLICT (workspace_id) DO UPDATE SET sessions = sessions + 1;
    END;
    CREATE TRIGGER folder_index_uncounts_a_row AFTER DELETE ON folder_index BEGIN
        UPDATE folder_counts SET sessions = sessions - 1 WHERE workspace_id = OLD.workspace_id;
    END;
    "#,
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

#[derive(Debug)]
pub enum MigrateError {
    TooNew { found: i64 },
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sql(e)
    }
}

/// Brings the schema to [`SCHEMA_VERSION`], in one transaction.
pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    migrate_to(conn, SCHEMA_VERSION)
}

fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), MigrateError> {
    let version = |conn: &Connection| conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0));
    let found = version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(MigrateError::TooNew { found });
    }
    if found >= target {
        return Ok(());
    }
    // Two processes may open a new store at once: take the write lock first (a deferred
    // transaction upgrading to a write would fail with "database is locked" instead of waiting),
    // then look again at what the other one may have done meanwhile.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found = version(&tx)?;
    for (index, sql) in MIGRATIONS.iter().enumerate().take(target as usize).skip(found as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_applies_from_empty_and_from_each_earlier_version() {
        for start in 0..=SCHEMA_VERSION {
            let mut conn = Connection::open_in_memory().unwrap();
            migrate_to(&mut conn, start).unwrap();
            migrate(&mut conn).unwrap();
            let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
            assert_eq!(version, SCHEMA_VERSION, "from version {start}");
            conn.execute_batch("PRAGMA foreign_key_check; PRAGMA integrity_check;")
                .unwrap();
        }
    }

    /// Migration 12 makes the search index again with room for eight kinds: messages in the
    /// migration, outputs not (a minute at launch for 1 GB) but behind the window, by the
    /// indexer, with the new rowids.
    #[test]
    fn the_search_index_is_made_again_with_room_for_eight_kinds_outputs_behind_the_window() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, 11).unwrap();
        conn.execute_batch(
            "INSERT INTO workspaces (id, root) VALUES (1, '/w');
             INSERT INTO sessions (key, workspace_id, session_id, created_at, updated_at) VALUES (1, 1, 's', 0, 0);
             INSERT INTO messages (id, session_key, seq, role, text, created_at) VALUES (5, 1, 1, 'user', 'hello ocelot', 0);
             INSERT INTO search_text (rowid, text) VALUES (5 * 4 + 1, 'hello ocelot');
             INSERT INTO runs (key, id, session_key, command, status, started_at) VALUES (1, 'r', 1, '[]', 'success', 0);
             INSERT INTO output_blocks (id, run_key, first_seq, line_count, text, spans, indexed)
                 VALUES (7, 1, 1, 1, 'a wandering ocelot', '[]', 1);
             INSERT INTO search_text (rowid, text) VALUES (7 * 4, 'a wandering ocelot');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let found = |conn: &Connection| -> Vec<i64> {
            conn.prepare("SELECT rowid FROM search_text WHERE search_text MATCH 'ocelot' ORDER BY rowid")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(found(&conn), [5 * 8 + 1], "outputs indexed in the migration");
        assert_eq!(crate::store::search::index_pending(&conn, 100).unwrap(), 1);
        assert_eq!(found(&conn), [5 * 8 + 1, 7 * 8]);
    }

    /// Migration 18 counts each workspace's folder index rows as they were, and its triggers
    /// keep the count as rows come and go; a row updated in place (the index's upsert) is not
    /// counted again.
    #[test]
    fn the_folder_index_is_counted_and_kept_counted() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, 17).unwrap();
        let row = |w: i64, id: &str| {
            format!(
                "INSERT INTO folder_index (workspace_id, session_id, fingerprint, summary) VALUES ({w}, '{id}', 'p', '{{}}')
                 ON CONFLICT (workspace_id, session_id) DO UPDATE SET fingerprint = 'q';"
            )
        };
        conn.execute_batch("INSERT INTO workspaces (id, root) VALUES (1, '/a'), (2, '/b');")
            .unwrap();
        conn.execute_batch(&[row(1, "x"), row(1, "y"), row(2, "z")].concat())
            .unwrap();
        migrate(&mut conn).unwrap();
        let counts = |conn: &Connection| -> Vec<(i64, i64)> {
            conn.prepare("SELECT workspace_id, sessions FROM folder_counts ORDER BY workspace_id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(counts(&conn), [(1, 2), (2, 1)], "as migrated");
        conn.execute_batch(&[row(1, "x"), row(1, "w"), row(2, "v")].concat())
            .unwrap();
        assert_eq!(counts(&conn), [(1, 3), (2, 2)], "one updated, two added");
        conn.execute_batch("DELETE FROM folder_index WHERE session_id IN ('x', 'v');")
            .unwrap();
        assert_eq!(counts(&conn), [(1, 2), (2, 1)], "two gone");
        conn.execute_batch("PRAGMA foreign_keys = ON; DELETE FROM workspaces WHERE id = 2;")
            .unwrap();
        assert_eq!(counts(&conn), [(1, 2)], "a workspace gone, its count with it");
    }

    #[test]
    fn a_newer_schema_is_refused_not_touched() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        assert!(matches!(migrate(&mut conn), Err(MigrateError::TooNew { found }) if found == SCHEMA_VERSION + 1));
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0);
    }
}
