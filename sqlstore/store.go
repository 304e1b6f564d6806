package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Options configure a Store. The zero value works.
type Options struct {
	// MaxItemSize is the largest item accepted, in bytes; a larger one is
	// refused with recall.ErrTooLarge before anything is written.
	// Default (0): recall.DefaultMaxItemSize (32 MiB).
	MaxItemSize int

	// Schema is the PostgreSQL schema the tables live in, created if
	// missing. It lets several applications (or tests) share a database.
	// Ignored by SQLite. Default (""): "public".
	Schema string

	// SQLiteSync is SQLite's synchronous setting. Default (SyncFull): a
	// commit waits for the write-ahead log to reach the disk, so an
	// acknowledged append survives a power loss, as it does on the file
	// store and PostgreSQL. SyncNormal skips that fsync: an append still
	// survives a crash of the process, but a power loss may lose the last
	// appends acknowledged (never corrupt the database). In a store URL:
	// sqlite:///path.db?synchronous=normal. Ignored by PostgreSQL.
	SQLiteSync SQLiteSync
}

// SQLiteSync is SQLite's synchronous setting (see Options.SQLiteSync).
type SQLiteSync int

const (
	// SyncFull (the default) syncs the write-ahead log at every commit.
	SyncFull SQLiteSync = iota
	// SyncNormal syncs it only at checkpoints: not durable on power loss.
	SyncNormal
)

// String returns the setting as SQLite's PRAGMA synchronous names it.
func (s SQLiteSync) String() string {
	if s == SyncNormal {
		return "NORMAL"
	}
	return "FULL"
}

// ErrSchemaTooNew reports a database whose schema was written by a newer
// version of this package. The store refuses to open it rather than
// misread it; upgrade the program instead.
var ErrSchemaTooNew = errors.New("sqlstore: database schema is newer than this program")

// ErrDamaged reports that the database found its own file or pages
// damaged: SQLite's "database disk image is malformed" or "file is not a
// database", PostgreSQL's data_corrupted or index_corrupted. It wraps
// recall.ErrCorrupt, so errors.Is finds either. The store cannot mend
// it: restore the database from a backup (for SQLite, the sqlite3 shell's
// .recover salvages what it can).
var ErrDamaged = fmt.Errorf("%w: the database is damaged", recall.ErrCorrupt)

// Store is a recall.Store on SQLite or PostgreSQL. It is safe for
// concurrent use, and several processes may share one database.
type Store struct {
	opts   Options
	db     backend
	closed atomic.Bool
	// window, when not 0, replaces search.Window (for tests).
	window int
	// noSearch leaves the search rows alone: the baseline of
	// BenchmarkAppendSearch, which measures what they cost.
	noSearch bool
}

// What the store implements: the Store and every optional ability.
var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.Forker        = (*Store)(nil)
	_ storekit.ItemPager     = (*Store)(nil)
	_ storekit.Purger        = (*Store)(nil)
	_ storekit.Rewriter      = (*Store)(nil)
)

// backend is what differs between the two dialects: how statements run,
// how transactions are taken, and the few statements whose SQL differs.
type backend interface {
	// name is "sqlite" or "postgres", for messages.
	name() string
	// q runs single statements, each in its own snapshot.
	q() querier
	// view runs fn in a read-only transaction: every statement sees one
	// snapshot of the database.
	view(ctx context.Context, fn func(ctx context.Context, q querier) error) error
	// update runs fn in a write transaction and commits it when fn returns
	// nil. A session row read with lockSQL stays locked against other
	// writers until the end. update retries fn, from the start, on a
	// transient conflict (errRetry, a deadlock, a connection lost before
	// anything was sent). fn runs its statements with the ctx it is given,
	// which on SQLite is not canceled once fn has started (see
	// sqlitecommit.go). When ctx ends before the commit, nothing fn wrote
	// is committed and update returns ctx's error (PostgreSQL: the
	// statements or the commit fail with it; SQLite: a call not started
	// yet is given up at once, even while its transaction waits for the
	// write lock, and one started is checked after fn returns).
	update(ctx context.Context, fn func(ctx context.Context, q querier) error) error
	// lockSQL is appended to a SELECT of a session row inside update to
	// lock it (" FOR UPDATE"), or "" where the transaction already holds
	// the database's write lock.
	lockSQL() string
	// timeArg converts a time into the value its column stores.
	timeArg(t time.Time) any
	// appendItems is the fast path of Append for a batch of item entries
	// only, whose Time is set: it checks guard, creates or updates the
	// session row and inserts the entries in one transaction (on
	// PostgreSQL, with the zero guard, in one statement) and returns the
	// seq of the last one. A failed guard writes nothing.
	appendItems(ctx context.Context, key recall.Key, guard recall.Guard, b itemBatch) (int64, error)
	// insertEntries inserts entries, which carry their Seq and Time, into
	// session sid's log.
	insertEntries(ctx context.Context, q querier, sid int64, entries []recall.Entry) error
	// insertSearch inserts rows into session sid's search rows (see
	// searchindex.go).
	insertSearch(ctx context.Context, q querier, sid int64, rows []searchRow) error
	// lostConnection reports whether a read failed because the server
	// dropped the connection (it restarted): the read is worth one more
	// attempt, on a new connection. Always false on SQLite.
	lostConnection(err error) bool
	// close releases the connections.
	close()
}

// querier runs statements: on a pool, a connection or in a transaction.
type querier interface {
	exec(ctx context.Context, sql string, args ...any) (int64, error)
	query(ctx context.Context, sql string, args ...any) (rows, error)
	queryRow(ctx context.Context, sql string, args ...any) row
}

// rows is the result of a query; pgx.Rows satisfies it.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// row is the result of a single-row query; *sql.Row and pgx.Row satisfy it.
type row interface {
	Scan(dest ...any) error
}

// errRetry makes update run its function again: the transaction lost a
// race that a fresh attempt resolves (two writers creating one session).
var errRetry = errors.New("sqlstore: retry transaction")

// maxAttempts bounds the retries of update.
const maxAttempts = 5

// check validates key, that the store is open and that ctx has not
// ended: every method starts with it (or checkOpen), so a call under an
// ended context touches nothing.
func (s *Store) check(ctx context.Context, key recall.Key) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return s.checkOpen(ctx)
}

// checkOpen checks that the store is open and that ctx has not ended.
func (s *Store) checkOpen(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlstore: %w", recall.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return nil
}

// opError returns err as a Store method reports it: when ctx has ended,
// an error that also wraps ctx.Err() (a statement the context interrupted
// fails with the driver's own error, "interrupted", and the caller should
// see why); when the database found its own file or pages damaged, one
// that also wraps ErrDamaged (see damaged).
func opError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	if damaged(err) && !errors.Is(err, ErrDamaged) {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return err
}

// damaged reports an error by which the database says its data is
// damaged: SQLite's SQLITE_CORRUPT (with any extended code: a page, an
// index, FTS5's structure) and SQLITE_NOTADB (the file is not a
// database), and PostgreSQL's data_corrupted and index_corrupted (XX001,
// XX002).
func damaged(err error) bool {
	var le *sqlite.Error
	if errors.As(err, &le) {
		c := le.Code() & 0xff
		return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "XX001" || pe.Code == "XX002")
}

// read runs f, a read, and runs it once more when it failed on a
// connection the server dropped: repeating a read is always safe, and the
// pool replaces the dead connection, so a restart of the server between
// two calls costs the caller nothing. (Writes are not repeated: one whose
// connection died may have committed.)
func (s *Store) read(f func() error) error {
	err := f()
	if err != nil && s.db.lostConnection(err) {
		err = f()
	}
	return err
}

// Close implements recall.Store. It waits for calls in flight to finish.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.db.close()
	return nil
}

// String names the store for messages: "sqlite" or "postgres".
func (s *Store) String() string { return "sqlstore(" + s.db.name() + ")" }
