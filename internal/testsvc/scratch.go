package testsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// UniqueName returns a new name that starts with base and is unique to
// this run ("recall_test_3f9a0c71b2e4"), for a schema, a key prefix or a
// database of a test's own.
func UniqueName(base string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return base + "_" + hex.EncodeToString(b)
}

// PostgresSchema returns the shared PostgreSQL server's DSN and the name
// of a new schema, private to the test and dropped (with everything in
// it) when the test ends. The schema does not exist yet: the stores create
// it. It skips, or fails under RECALL_REQUIRE_SERVICES=1, when the server
// does not answer.
func PostgresSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = PostgresDSN(t)
	schema = UniqueName("recall_test")
	t.Cleanup(func() { DropSchema(t, dsn, schema) })
	return dsn, schema
}

// DropSchema drops a schema and everything in it, logging (not failing)
// when it cannot.
func DropSchema(t testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("testsvc: drop schema %s: %v", schema, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Logf("testsvc: drop schema %s: %v", schema, err)
	}
}

// RedisPrefix returns the shared Redis server's URL and a new key prefix
// ending in ":", private to the test; every key under it is deleted when
// the test ends. It skips, or fails under RECALL_REQUIRE_SERVICES=1, when
// the server does not answer.
func RedisPrefix(t testing.TB) (url, prefix string) {
	t.Helper()
	url = RedisURL(t)
	prefix = UniqueName("recalltest") + ":"
	t.Cleanup(func() { DropPrefix(t, url, prefix) })
	return url, prefix
}

// DropPrefix deletes every key under prefix, logging (not failing) when
// it cannot.
func DropPrefix(t testing.TB, url, prefix string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Logf("testsvc: drop prefix %s: %v", prefix, err)
		return
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	for it.Next(ctx) {
		if batch = append(batch, it.Val()); len(batch) == 1000 {
			flush()
		}
	}
	flush()
	if err := it.Err(); err != nil {
		t.Logf("testsvc: drop prefix %s: %v", prefix, err)
	}
}

// AppDSN returns dsn with the connection parameter application_name set
// to name, so that the connections of a process given it can be told
// apart in pg_stat_activity (see WaitDisconnected).
func AppDSN(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn + " application_name=" + name // a keyword/value DSN
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// WaitDisconnected waits until the PostgreSQL server has no connection of
// the application name left. A client killed with SIGKILL leaves its
// server process running for a moment: one that had received a COMMIT
// still makes it, and only then finds its client gone. A test that checks
// what a killed process left must wait for that first.
func WaitDisconnected(t testing.TB, dsn, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("testsvc: wait for %s to disconnect: %v", name, err)
	}
	defer c.Close(context.Background())
	for {
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); err != nil {
			t.Fatalf("testsvc: wait for %s to disconnect: %v", name, err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testsvc: %d connections of %s still open after a minute", n, name)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
