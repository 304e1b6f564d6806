package sqlstore

import (
	"context"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
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
	})
}

func TestConformancePostgres(t *testing.T) {
	t.Parallel()
	testsvc.PostgresDSN(t)
	storetest.RunConfig(t, storetest.Config{
		New:   func(t *testing.T) recall.Store { return newPostgres(t) },
		Plant: plant,
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
			sid, last+1, data, st.db.timeArg(recall.Now())); err != nil {
			return err
		}
		_, err := q.exec(ctx, `UPDATE sessions SET last_seq = $2 WHERE sid = $1`, sid, last+1)
		return err
	})
	if err != nil {
		t.Fatalf("plant in %s: %v", key, err)
	}
}
