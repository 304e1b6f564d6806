package sqlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storetest"
)

// The edge-case items of docs/ITEMS.md, on both dialects.

func TestEdgesSQLite(t *testing.T) {
	t.Parallel()
	storetest.RunEdges(t, func(t *testing.T, max int) recall.Store {
		s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"), Options{MaxItemSize: max})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestEdgesPostgres(t *testing.T) {
	t.Parallel()
	testsvc.PostgresDSN(t)
	storetest.RunEdges(t, func(t *testing.T, max int) recall.Store {
		dsn, schema := testsvc.PostgresSchema(t)
		s, err := OpenPostgres(context.Background(), dsn, Options{Schema: schema, MaxItemSize: max})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
