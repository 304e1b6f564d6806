// Package sqlstore is a recall.Store on SQL databases: SQLite (embedded,
// through the pure-Go modernc.org/sqlite driver) and PostgreSQL (through a
// pgx connection pool). Both dialects share one schema and one
// implementation of the Store contract; only the SQL that differs between
// them lives in sqlite.go and postgres.go.
//
// # Schema
//
// A sessions table holds one row per session record (main sessions have
// an empty subpath), with the metadata List returns; an entries table holds
// every session's append-only log, one row per entry, UNIQUE(session, seq). The
// sessions row is kept in step with the log inside the transaction that
// appends to it, so List never reads entries. Times are stored with
// microsecond precision (recall.Now already truncates to it). The schema is
// versioned (table recall_schema) and migrated when a store is opened; a
// database written by a newer version of this package is refused with
// ErrSchemaTooNew rather than misread.
//
// # Concurrency
//
// Seqs come from the session row's last_seq, never from a clock, and are
// assigned while the row is locked: on PostgreSQL by the row lock an
// upsert or SELECT ... FOR UPDATE takes, on SQLite by the database's single
// write lock (BEGIN IMMEDIATE on the one writer connection). Several
// processes may therefore append to one session at once; each batch gets a
// dense, distinct run of seqs.
package sqlstore
