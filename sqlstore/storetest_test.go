package sqlstore

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// The conformance suite, on a new database file or a new schema per test.

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store { return newSQLite(t) })
}

func TestConformancePostgres(t *testing.T) {
	needPostgres(t)
	storetest.Run(t, func(t *testing.T) recall.Store { return newPostgres(t) })
}
