package sqlstore

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// The conformance suite, on a new database file or a new schema per test.
// The suites run in parallel with each other (SQLite's is CPU-bound,
// PostgreSQL's waits on the server) but never with TestPostgresRestart,
// which is not parallel: Go runs parallel tests after the others.

func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) recall.Store { return newSQLite(t) })
}

func TestConformancePostgres(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	storetest.Run(t, func(t *testing.T) recall.Store { return newPostgres(t) })
}
