package sqlstore

import (
	"context"
	"database/sql"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// The conformance suite, on a new database file or a new schema per test.
// The suites run in parallel with each other (SQLite's is CPU-bound,
// PostgreSQL's waits on the server) but never with TestPostgresRestart,
// which is not parallel: Go runs parallel tests after the others.

func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	storetest.RunConfig(t, storetest.Config{
		New:   func(t *testing.T) recall.Store { return newSQLite(t) },
		Plant: plant,
		Hold:  holdSQLite,
	})
}

func TestConformancePostgres(t *testing.T) {
	t.Parallel()
	testsvc.PostgresDSN(t)
	storetest.RunConfig(t, storetest.Config{
		New:   func(t *testing.T) recall.Store { return newPostgres(t) },
		Plant: plant,
		Hold:  holdPostgres,
	})
}

// plant is storetest.Config.Plant for both dialects: it does what another
// program writing to the tables with plain SQL would, inserting an item
// row whose payload is data, verbatim, at last_seq+1 and moving last_seq
// on, as a writer that keeps seqs dense must; nothing else of the
// session row changes.
func plant(t *testing.T, s recall.Store, key recall.Key, data []byte) {
	t.Helper()
	st := s.(*Store)
	err := st.db.update(context.Background(), func(ctx context.Context, q querier) error {
		var sid, last int64
		if err := q.queryRow(ctx, lastSeqSQL+st.db.lockSQL(), key.Project, key.Session, key.Subpath).Scan(&sid, &last); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, 'item', $3, $4)`,
			sid, last+1, data, st.db.timeArg(storekit.Now())); err != nil {
			return err
		}
		_, err := q.exec(ctx, `UPDATE sessions SET last_seq = $2 WHERE sid = $1`, sid, last+1)
		return err
	})
	if err != nil {
		t.Fatalf("plant in %s: %v", key, err)
	}
}

// holdSQLite is storetest.Config.Hold on SQLite: another connection to the
// database file, as another process would open it, holds the write lock
// (BEGIN IMMEDIATE). A write of s is waiting for it once its group
// transaction has begun (the transactions counter moved): its BEGIN
// IMMEDIATE waits on busy_timeout.
func holdSQLite(t *testing.T, s recall.Store, _ recall.Key) (waiting func() bool, release func()) {
	t.Helper()
	ctx := context.Background()
	lb := s.(*Store).db.(*liteBackend)
	var path string
	if err := lb.r.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := other.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	}
	if err != nil {
		other.Close()
		t.Fatal(err)
	}
	groups := lb.transactions.Load()
	return func() bool { return lb.transactions.Load() > groups }, func() {
		if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
			t.Errorf("release the write lock: %v", err)
		}
		conn.Close()
		other.Close()
	}
}

// holdPostgres is storetest.Config.Hold on PostgreSQL: another connection
// locks the session's row (SELECT ... FOR UPDATE), as another process's
// write would. A write of s is waiting for it once the server says that
// lock blocks a backend (pg_blocking_pids).
func holdPostgres(t *testing.T, s recall.Store, key recall.Key) (waiting func() bool, release func()) {
	t.Helper()
	ctx := context.Background()
	pool := s.(*Store).db.(*pgBackend).pool
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid, sid int64
	err = tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)
	if err == nil {
		err = tx.QueryRow(ctx, `SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3 FOR UPDATE`,
			key.Project, key.Session, key.Subpath).Scan(&sid)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	return func() bool {
			var n int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n)
			return err == nil && n > 0
		}, func() {
			if err := tx.Rollback(ctx); err != nil {
				t.Errorf("release the row lock: %v", err)
			}
		}
}
