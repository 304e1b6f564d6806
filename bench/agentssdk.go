package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	"github.com/recallkit/recall"
)

// sdkRow is the OpenAI Agents SDK's SQLite session schema, the store a
// Python agent built on that SDK gets by default.
const sdkRow = "Agents SDK SQLite"

// sdkSchema is the SDK's SQLiteSession schema
// (agents/memory/sqlite_session.py): a sessions table and a messages
// table indexed on (session_id, created_at).
const sdkSchema = `
CREATE TABLE IF NOT EXISTS agent_sessions (
	session_id TEXT PRIMARY KEY,
	created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
	updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS agent_messages (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT NOT NULL,
	message_data TEXT NOT NULL,
	created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
	FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_agent_messages_session_id ON agent_messages (session_id, created_at);`

// sdkContender is the SDK's add_items on its schema, on modernc.org/sqlite
// (the driver sqlstore uses) with Python's sqlite3 defaults: a rollback
// journal and synchronous=FULL, so every save is durable. It writes only.
func sdkContender(root string) contender {
	dir := filepath.Join(root, "agents-sdk")
	appendOnly := "the SDK's schema is measured on saves only"
	return contender{
		name:   sdkRow,
		kind:   kindPeer,
		medium: mediumModernc,
		note: "the OpenAI Agents SDK's `SQLiteSession` schema and its `add_items` (one transaction: make sure of " +
			"the session row, insert each item, touch `updated_at`), on modernc.org/sqlite with Python's sqlite3 " +
			"defaults (rollback journal, synchronous=FULL: every save is durable). Measured on saves only.",
		skip: map[string]string{
			"W2": appendOnly, "W3": appendOnly, "W4": appendOnly, "W5": appendOnly, "W6": appendOnly,
		},
		open: func(ctx context.Context, scope string) (subject, error) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, scope+".db")+"?_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
			if err != nil {
				return nil, err
			}
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(ctx, sdkSchema); err != nil {
				db.Close()
				return nil, err
			}
			return &sdkSession{unsupported: unsupported{why: appendOnly}, db: db}, nil
		},
		dropScope: removeGlob(dir),
	}
}

// sdkSession is the SDK's schema opened on one scope.
type sdkSession struct {
	unsupported
	db *sql.DB
}

// append is the SDK's add_items: one transaction for the whole batch.
func (s *sdkSession) append(ctx context.Context, session string, items []recall.Item) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)`, session); err != nil {
		return err
	}
	for _, it := range items {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)`, session, string(it)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agent_sessions SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?`, session); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sdkSession) close() error { return s.db.Close() }
