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
// microsecond precision (storekit.Now already truncates to it). The schema is
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
// dense, distinct run of seqs. Append's recall.Guard is checked under that
// same lock, inside the transaction that writes: a failed guard writes
// nothing and creates no row.
//
// Reads that must agree run in one snapshot: Load, Entries and ReadItems
// in a read transaction (REPEATABLE READ on PostgreSQL, a WAL read transaction on
// SQLite), Items in one statement whose first row is the entry at
// last_seq, or in a read transaction when it must page. Every method returns the context's error
// when it ends first; on SQLite a write is checked again once it holds the
// write lock, which it may have waited for (busy_timeout), and once it has
// run, so a caller that gave up meanwhile has written nothing.
//
// # Metadata and damaged rows
//
// The sessions row caches what recall.Meta.Apply derives from the log,
// the metadata map (a JSON column) and Updated included; Updated moves for
// conversation activity only (recall.Kind.IsActivity), and migration 2
// recomputed it for databases written by version 1. An item row whose
// payload is not a JSON object (written by another program, or damaged)
// is left out of Items, Pop and the view, returned verbatim by Load and
// Entries, and counted in Meta.Corrupt by Load and Stat (List, which reads
// only sessions rows, reports 0, and Stat, which counts the rows above the
// session's checked_seq only). Payloads are checked in full, those this
// package wrote and validated too, since a row can be damaged after it
// was written (see read.go).
//
// # Pages of a view
//
// Store is a storekit.ItemPager: ReadItems reads one page of a view by
// position in O(page + the view's pops and removes), whatever the
// session's length. Migration 9 adds a partial index of each log's pop,
// remove, clear and compaction entries, from which it learns where the
// view starts and what was removed, then it reads only the window of seqs
// the page lies in (see itempage.go).
//
// # Search
//
// Store is a recall.Searcher. Migration 3 adds a search table: one row per
// item of a main session's log that has text (search.Text), its text
// normalized (search.Normalize), its entry's time, and whether it is in
// the live view, which pop, remove, clear and compaction entries change as
// recall.Replay does. On PostgreSQL the rows are written by the
// transaction (on its fast path, the statement) that appends the
// entries. On SQLite that transaction only marks the session behind
// (migration 8), and the rows are written a few dozen entries later by a
// write transaction of their own on the store's background goroutine,
// off the append's path (see searchbehind.go and sqlitebg.go); a search
// first writes those still missing, so search never lags the logs. The
// migration computes the rows for the logs written before it. A trigram index chooses the rows a query looks at:
// FTS5's trigram tokenizer on SQLite, pg_trgm on PostgreSQL (with an
// index of the pairs of adjacent CJK characters, migration 6, for terms of
// two, which hold no trigram); every hit is then checked as an exact
// substring, so the hits are search.Scan's. Each dialect defers the
// indexing of a small append's rows once: SQLite writes the rows late,
// and each joins the trigram index as it is written (migration 11);
// PostgreSQL writes them with the append into a tail that the GIN indexes
// take in batches, in the background, and a search reads the tail
// without them (see ginCleaner, migration 7; migration 11 says why
// PostgreSQL keeps the indexes' own pending lists too).
// See search.go for how a page is found.
package sqlstore
