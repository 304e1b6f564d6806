package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/recallkit/recall"
)

// sqliteBusyTimeout is how long a connection waits for a lock another
// process holds (SQLite's busy_timeout) before failing with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// sqliteMmapSize is how much of the database file each reader connection
// maps into memory (PRAGMA mmap_size; SQLite caps it just under 2 GiB).
// A search reads the rows of its candidates, scattered over the file:
// through the mapping each is a read of a page the OS already caches,
// where SQLite's 2 MB page cache would copy it in with a system call
// (docs/BENCHMARKS.md, "Search: the index files mapped into memory": the
// queries with a thousand candidates or more took a quarter less time).
// Only the readers map; SQLite writes through write(2) still. SQLite
// reads no page past the file's end, so a file cut short under the
// mapping fails reads with an error (TestSQLiteReadersMapTheFile); what
// the mapping gives up, as SQLite documents, is the error of a failed
// disk read, which faults the process instead (SIGBUS).
const sqliteMmapSize int64 = 2 << 30

// OpenSQLite opens (and creates or migrates, as needed) a store in the
// SQLite database file at path, creating its directory if missing.
//
// The database runs in WAL mode with synchronous=FULL: a committed append
// is on the disk before it is acknowledged, and survives a power loss.
// With opts.SQLiteSync = SyncNormal it survives a crash of the process but
// a power loss may lose the last transactions (never corrupt the
// database). Writes go through a single
// connection whose transactions begin IMMEDIATE, taking the write lock
// before reading the session row, so writers in other processes queue on
// busy_timeout (10s) instead of failing mid-transaction; writers in this
// process share transactions (a group commit, see sqlitecommit.go). Reads
// use a separate pool of read-only connections and never wait for writers.
// The WAL's checkpoints and the search rows' catch-ups run on a goroutine
// of the store, the checkpoints on a connection of their own, so that no
// append pays for them (see sqlitebg.go); Close stops it.
func OpenSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return nil, openError("sqlite", path, "", fmt.Errorf("want the path of a database file, without '?' or '#'"))
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, openError("sqlite", path, "", err)
		}
	}
	if opts.SQLiteSync != SyncFull && opts.SQLiteSync != SyncNormal {
		return nil, openError("sqlite", path, "", fmt.Errorf("unknown synchronous setting %d", opts.SQLiteSync))
	}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(%s)", sqliteBusyTimeout.Milliseconds(), opts.SQLiteSync)
	// The writer checkpoints the WAL only past walBound pages: the
	// background goroutine does it before then (see sqlitebg.go).
	// secure_delete zeroes what a delete or an update frees, so the
	// bytes a rewrite replaces (a redaction) do not stay in free pages.
	w, err := sql.Open("sqlite", fmt.Sprintf("%s?%s&_pragma=wal_autocheckpoint(%d)&_pragma=secure_delete(ON)&_txlock=immediate", path, pragmas, walBound))
	if err != nil {
		return nil, openError("sqlite", path, "", err)
	}
	// One writer connection: SQLite allows one writer at a time anyway, and
	// queueing in the pool is cheaper than the busy handler's sleeps.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	b := &liteBackend{w: w, writer: make(chan struct{}, 1)}
	if err := setWAL(ctx, w); err != nil {
		w.Close()
		return nil, openError("sqlite", path, "", err)
	}
	if err := b.migrate(ctx); err != nil {
		w.Close()
		return nil, openError("sqlite", path, "", err)
	}
	if err := b.prepare(ctx); err != nil {
		w.Close()
		return nil, openError("sqlite", path, "", err)
	}
	r, err := sql.Open("sqlite", fmt.Sprintf("%s?%s&_pragma=query_only(1)&_pragma=mmap_size(%d)", path, pragmas, sqliteMmapSize))
	if err != nil {
		w.Close()
		return nil, openError("sqlite", path, "", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	b.r = r
	b.stmts = &stmtCache{db: r}
	if err := b.stmts.prepare(ctx, readSQL...); err != nil {
		b.close()
		return nil, openError("sqlite", path, "", err)
	}
	ckpt, err := sql.Open("sqlite", path+"?"+pragmas)
	if err != nil {
		b.close()
		return nil, openError("sqlite", path, "", err)
	}
	b.startBackground(ckpt)
	return &Store{opts: opts, db: b}, nil
}

// setWAL puts the database in WAL mode, which is persistent: once per open
// does. The switch takes an exclusive lock for a moment, and when another
// connection is opening the database too (two processes creating it at
// once) SQLite can refuse it with SQLITE_BUSY at once, without waiting on
// busy_timeout, to avoid a deadlock; it is retried up to the busy timeout.
func setWAL(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		var mode string
		err := w.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("cannot use WAL mode: journal_mode is %q", mode)
			}
			return nil
		}
		var e *sqlite.Error
		if !errors.As(err, &e) || e.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return fmt.Errorf("set WAL mode: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// liteBackend is the SQLite dialect: one writer connection, a reader pool.
type liteBackend struct {
	w, r *sql.DB

	// Statements of the append path, prepared once on the writer
	// connection: modernc.org/sqlite has no statement cache, and parsing
	// the upsert cost more than running it.
	upsertItems, insertEntry, insertSearchRow *sql.Stmt
	// searchLag, when not 0, replaces the package's constant (for
	// tests).
	searchLag int
	// Savepoints of the calls of a group commit.
	savepoint, rollbackTo, release *sql.Stmt

	// The group commit of update (see sqlitecommit.go): writer is held by
	// the goroutine running transactions; queue holds the calls waiting.
	writer chan struct{}
	mu     sync.Mutex
	queue  []*writeCall
	// transactions and calls count the group commits and the calls they
	// ran, for tests.
	transactions, calls atomic.Int64

	// bg runs the WAL checkpoints and the search rows' catch-ups off the
	// append's path (see sqlitebg.go).
	bg liteBackground

	// stmts holds the reader's prepared statements, wstmts the writer's
	// (besides those above) for the general write path, prepared before
	// the first write (wprepared), not at open: a store opened to list
	// pays nothing for them.
	stmts, wstmts *stmtCache
	wprepared     sync.Once
}

// upsertItemsSQL creates the session row or advances its last_seq by the
// batch size; see appendItems. It moves updated_at to the batch's latest
// time, as recall.Meta.Apply does: items are conversation activity (and
// items are all this path writes). checked_seq follows last_seq when it
// was at it (see advanceChecked; the right-hand sides read the row as it
// was).
const upsertItemsSQL = `INSERT INTO sessions (project, id, subpath, created_at, updated_at, item_count, last_seq,
		checked_seq, input_tokens, output_tokens, total_tokens, first_prompt)
	VALUES ($1, $2, $3, $4, $5, $6, $6, $6, $7, $8, $9, $10)
	ON CONFLICT (project, id, subpath) DO UPDATE SET
		first_prompt = CASE WHEN first_prompt = '' THEN excluded.first_prompt ELSE first_prompt END,
		updated_at = max(updated_at, excluded.updated_at),
		item_count = item_count + excluded.item_count,
		last_seq = last_seq + excluded.last_seq,
		checked_seq = CASE WHEN checked_seq = last_seq THEN last_seq + excluded.last_seq ELSE checked_seq END,
		input_tokens = input_tokens + excluded.input_tokens,
		output_tokens = output_tokens + excluded.output_tokens,
		total_tokens = total_tokens + excluded.total_tokens
	RETURNING sid, last_seq`

// insertEntrySQL inserts one entry; a batch runs it once per entry, so
// one prepared statement serves every batch size.
const insertEntrySQL = `INSERT INTO entries (session, seq, kind, payload, time, input_tokens, output_tokens, total_tokens)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// prepare prepares the append path's statements on the writer. It runs
// before any transaction: with one connection, preparing on the DB while a
// transaction holds it would wait forever.
func (b *liteBackend) prepare(ctx context.Context) error {
	var err error
	if b.upsertItems, err = b.w.PrepareContext(ctx, upsertItemsSQL); err != nil {
		return err
	}
	if b.insertEntry, err = b.w.PrepareContext(ctx, insertEntrySQL); err != nil {
		return err
	}
	if b.insertSearchRow, err = b.w.PrepareContext(ctx, insertSearchSQL); err != nil {
		return err
	}
	if b.savepoint, err = b.w.PrepareContext(ctx, `SAVEPOINT call`); err != nil {
		return err
	}
	if b.rollbackTo, err = b.w.PrepareContext(ctx, `ROLLBACK TO call`); err != nil {
		return err
	}
	if b.release, err = b.w.PrepareContext(ctx, `RELEASE call`); err != nil {
		return err
	}
	b.wstmts = &stmtCache{db: b.w}
	return nil
}

// prepareWrites prepares writeSQL on the writer connection, once, outside
// any transaction (see stmtCache.get). A statement that fails to prepare
// is not cached, and its queries run unprepared.
func (b *liteBackend) prepareWrites() {
	if b.wstmts == nil {
		return // still opening: the migrations run unprepared
	}
	b.wprepared.Do(func() { _ = b.wstmts.prepare(context.Background(), writeSQL...) })
}

func (b *liteBackend) name() string { return "sqlite" }

func (b *liteBackend) lostConnection(error) bool { return false }

func (b *liteBackend) q() querier { return sqlQuerier{r: b.r, cache: b.stmts} }

// lockSQL is empty: an update transaction began IMMEDIATE and holds the
// database's write lock, which covers every row.
func (b *liteBackend) lockSQL() string { return "" }

// timeArg stores times as integer microseconds since the epoch: exact,
// compact, and ordered like the times.
func (b *liteBackend) timeArg(t time.Time) any { return t.UnixMicro() }

func (b *liteBackend) close() {
	b.closeBackground()
	b.stmts.close()
	if b.wstmts != nil {
		b.wstmts.close()
	}
	b.r.Close()
	b.w.Close()
}

// view runs fn in a read transaction on a reader connection: WAL gives it
// one snapshot from its first read.
func (b *liteBackend) view(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	tx, err := b.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a read transaction has nothing to undo
	return fn(ctx, sqlQuerier{r: tx, tx: tx, cache: b.stmts})
}

// appendItems is Append's fast path on SQLite: an upsert that creates the
// session row or advances its last_seq by the batch size, then the
// entries, numbered back from the new last_seq. A guard is checked first,
// against the row read in the same transaction: it holds the database's
// write lock, so the row cannot change before the upsert.
func (b *liteBackend) appendItems(ctx context.Context, key recall.Key, guard recall.Guard, ib itemBatch) (int64, error) {
	n := int64(len(ib.entries))
	var last int64
	err := b.update(ctx, func(ctx context.Context, q querier) error {
		tx := q.(sqlQuerier).tx
		if !guard.IsZero() {
			var sid, cur int64
			err := q.queryRow(ctx, lastSeqSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &cur)
			exists := err == nil
			if errors.Is(err, sql.ErrNoRows) {
				err = nil
			}
			if err != nil {
				return err
			}
			if err := guard.Check(exists, cur); err != nil {
				return err
			}
		}
		var sid int64
		err := tx.StmtContext(ctx, b.upsertItems).QueryRowContext(ctx,
			key.Project, key.Session, key.Subpath, ib.created.UnixMicro(), ib.updated.UnixMicro(), n,
			ib.usage.InputTokens, ib.usage.OutputTokens, ib.usage.TotalTokens, ib.prompt).Scan(&sid, &last)
		if err != nil {
			return err
		}
		es := make([]recall.Entry, n)
		for i, e := range ib.entries {
			e.Seq = last - n + int64(i) + 1
			es[i] = e
		}
		if err := b.insertEntries(ctx, q, sid, es); err != nil {
			return err
		}
		if !ib.index {
			return nil
		}
		if err := b.trailSearch(ctx, q, sid, es, b.lag()); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		return nil
	})
	return last, err
}

// insertSearch inserts search rows one by one with the prepared
// statement.
func (b *liteBackend) insertSearch(ctx context.Context, q querier, sid int64, rows []searchRow) error {
	if len(rows) == 0 {
		return nil
	}
	st := q.(sqlQuerier).tx.StmtContext(ctx, b.insertSearchRow)
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, sid, r.ref.Seq, r.ref.Index, r.role, r.time.UnixMicro(), r.live, r.body); err != nil {
			return err
		}
	}
	// The trigger of migration 11 puts each row into the trigram index
	// too: the rows written together share FTS5's segment of the commit.
	return nil
}

// insertEntries inserts entries one by one with the prepared statement.
func (b *liteBackend) insertEntries(ctx context.Context, q querier, sid int64, entries []recall.Entry) error {
	st := q.(sqlQuerier).tx.StmtContext(ctx, b.insertEntry)
	for _, e := range entries {
		in, out, total := usageArgs(e.Usage)
		if _, err := st.ExecContext(ctx, sid, e.Seq, string(e.Kind), payloadArg(e.Data), e.Time.UnixMicro(), in, out, total); err != nil {
			return err
		}
	}
	return nil
}

// migrate brings the database to the latest schema version. The writer's
// IMMEDIATE transaction serialises concurrent openers, other processes
// included.
func (b *liteBackend) migrate(ctx context.Context) error {
	ms, err := loadMigrations("sqlite")
	if err != nil {
		return err
	}
	return b.update(ctx, func(ctx context.Context, q querier) error { return applyMigrations(ctx, q, ms) })
}
