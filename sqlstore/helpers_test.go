package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
)

// pgDSN is the shared PostgreSQL server the tests use (child processes
// read it too, so it takes no testing.TB; needPostgres checks it answers).
func pgDSN() string {
	if dsn := os.Getenv("RECALL_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return testsvc.DefaultPostgres
}

// needPostgres skips the test, loudly, when the shared PostgreSQL server
// is not reachable, or fails it when RECALL_REQUIRE_SERVICES=1.
func needPostgres(t testing.TB) {
	t.Helper()
	testsvc.PostgresDSN(t)
}

// testSchema returns a new schema name, unique to this test run.
func testSchema() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "recall_test_" + hex.EncodeToString(b)
}

// dropSchema removes a test schema and everything in it.
func dropSchema(t testing.TB, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pgDSN())
	if err != nil {
		t.Logf("drop schema %s: %v", schema, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Logf("drop schema %s: %v", schema, err)
	}
}

// newPostgres opens a store in a fresh schema, dropped when the test ends.
func newPostgres(t testing.TB) *Store {
	t.Helper()
	s, _ := newPostgresSchema(t)
	return s
}

// newPostgresSchema is newPostgres that also returns the schema.
func newPostgresSchema(t testing.TB) (*Store, string) {
	t.Helper()
	needPostgres(t)
	schema := testSchema()
	t.Cleanup(func() { dropSchema(t, schema) })
	s, err := OpenPostgres(context.Background(), pgDSN(), Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, schema
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
	if err := recall.Verify(context.Background(), s); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// msg returns a message item with text.
func msg(text string) recall.Item { return recall.Message("user", text) }
