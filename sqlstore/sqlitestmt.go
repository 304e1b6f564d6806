package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// modernc.org/sqlite prepares every statement it runs, and for the short
// reads of this store, parsing costs as much as running. The reader
// therefore keeps its statements prepared: database/sql prepares a *Stmt
// once per connection and reuses it.

// readSQL are the statements the reader prepares when the store opens,
// because they also run inside read transactions, which never prepare
// (see stmtCache.get).
var readSQL = []string{
	newestSQL,
	windowSQL,
	statSQL,
	sessionIDSQL,
	lastSeqSQL,
	uncheckedSQL,
	entriesSQL,
	entriesLimitSQL,
	itemTextSQL,
	maxBehindSQL,
}

// writeSQL are the statements of the general write path (lockSession,
// writeEntries) and of a guarded append that the writer connection
// prepares before its first write (liteBackend.prepareWrites): its
// transactions never prepare either (see stmtCache.get).
var writeSQL = []string{
	statSQL,
	insertRowSQL,
	updateRowSQL,
	lastSeqSQL,
	unliveAllSQL,
	unliveSQL,
	behindSQL,
	markBehindSQL,
	unmarkBehindSQL,
	chunkEndSQL,
	behindEntriesSQL,
	unmarkChunkSQL,
	entriesSQL,
	entriesLimitSQL,
}

// stmtCache holds prepared statements of one *sql.DB, by text.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepare prepares queries now.
func (c *stmtCache) prepare(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := c.get(ctx, q, true); err != nil {
			return err
		}
	}
	return nil
}

// get returns the prepared statement of query, preparing it if mayPrepare;
// otherwise a statement not prepared yet is nil. Inside a transaction,
// which holds a connection, get must not prepare: preparing takes another
// connection of the pool, and transactions that each hold one and wait for
// another could wait forever.
func (c *stmtCache) get(ctx context.Context, query string, mayPrepare bool) (*sql.Stmt, error) {
	c.mu.Lock()
	st := c.m[query]
	c.mu.Unlock()
	if st != nil || !mayPrepare {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[query]; old != nil {
		st.Close()
		return old, nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// sqlRunner is what *sql.DB and *sql.Tx have in common.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlQuerier adapts a *sql.DB or *sql.Tx to querier. tx is set inside a
// transaction; cache, on the reader, supplies prepared statements.
type sqlQuerier struct {
	r     sqlRunner
	tx    *sql.Tx
	cache *stmtCache
}

// stmt returns query's prepared statement for this querier, or nil to run
// query unprepared.
func (s sqlQuerier) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s.cache == nil {
		return nil, nil
	}
	st, err := s.cache.get(ctx, query, s.tx == nil)
	if err != nil || st == nil {
		return nil, err
	}
	if s.tx != nil {
		st = s.tx.StmtContext(ctx, st)
	}
	return st, nil
}

func (s sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.r.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	var rs *sql.Rows
	if st != nil {
		rs, err = st.QueryContext(ctx, args...)
	} else {
		rs, err = s.r.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

func (s sqlQuerier) queryRow(ctx context.Context, query string, args ...any) row {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	if st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// errRow is a row whose query failed before it ran.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// sqlRows adapts *sql.Rows to rows; a Close error also shows in Err.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
