// Package testsvc gives recall's tests the PostgreSQL and Redis servers they
// run against: the shared servers of the machine (127.0.0.1:5432 and
// 127.0.0.1:6379, overridable with RECALL_TEST_POSTGRES and
// RECALL_TEST_REDIS), and private, throw-away servers that a test may stop
// and restart without disturbing tests of other packages running at the
// same time.
//
// Without a reachable shared server a test skips with a loud message,
// unless RECALL_REQUIRE_SERVICES=1 (CI sets it), when it fails instead.
package testsvc

import (
	"context"
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// Default DSNs of the shared servers.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedis    = "redis://127.0.0.1:6379/0"
)

// Required reports whether missing services fail tests instead of skipping them.
func Required() bool { return os.Getenv("RECALL_REQUIRE_SERVICES") == "1" }

// PostgresDSN returns the shared PostgreSQL server's DSN, or skips (fails
// under RECALL_REQUIRE_SERVICES=1) when it does not answer.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return shared(t, "RECALL_TEST_POSTGRES", DefaultPostgres, "PostgreSQL")
}

// RedisURL returns the shared Redis server's URL, or skips (fails under
// RECALL_REQUIRE_SERVICES=1) when it does not answer.
func RedisURL(t testing.TB) string {
	t.Helper()
	return shared(t, "RECALL_TEST_REDIS", DefaultRedis, "Redis")
}

func shared(t testing.TB, env, def, name string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		dsn = def
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("testsvc: %s=%q is not a URL: %v", env, dsn, err)
	}
	if err := dial(u.Host); err != nil {
		Unavailable(t, name+" at "+u.Host, err)
	}
	return dsn
}

// Unavailable skips the test loudly, or fails it when services are required.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	msg := "!!! SKIPPED: " + what + " is not available (" + err.Error() + "); run ../shared/services-up, or set RECALL_REQUIRE_SERVICES=1 to make this a failure"
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func dial(host string) error {
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// waitPort waits until host accepts TCP connections or ctx ends.
func waitPort(ctx context.Context, host string) error {
	for {
		err := dial(host)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testsvc: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
