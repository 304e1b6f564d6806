package sqlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storekit"
)

// newPostgres opens a store in a fresh schema, dropped when the test ends.
func newPostgres(t testing.TB) *Store {
	t.Helper()
	s, _, _ := newPostgresSchema(t)
	return s
}

// newPostgresSchema is newPostgres that also returns the server's DSN and
// the schema.
func newPostgresSchema(t testing.TB) (s *Store, dsn, schema string) {
	t.Helper()
	dsn, schema = testsvc.PostgresSchema(t)
	s, err := OpenPostgres(context.Background(), dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn, schema
}

// newSQLite opens a store in a new database file of a temp directory,
// with synchronous=NORMAL: an fsync per commit would make the suites slow
// and tests nothing a test here can see (a power loss). The default, FULL,
// is checked by TestSQLiteSynchronous, and the tests that open stores
// themselves (crash and open tests) run with it.
func newSQLite(t testing.TB) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"), Options{SQLiteSync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dialects runs f once per dialect, as subtests.
func dialects(t *testing.T, f func(t *testing.T, newStore func(t testing.TB) *Store)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newSQLite) })
	t.Run("postgres", func(t *testing.T) { f(t, newPostgres) })
}

// verify runs the core's consistency checker over s.
func verify(t testing.TB, s recall.Store) {
	t.Helper()
	if err := storekit.Verify(context.Background(), s); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// msg returns a message item with text.
func msg(text string) recall.Item { return recall.Message("user", text) }
