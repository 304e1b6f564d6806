package redisstore

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall/internal/testsvc"
)

// testURL is the shared Redis the tests use; it skips the test loudly when
// that Redis does not answer (fails it under RECALL_REQUIRE_SERVICES=1).
func testURL(t testing.TB) string {
	t.Helper()
	return testsvc.RedisURL(t)
}

var (
	adminMu sync.Mutex
	admin   *redis.Client
)

// adminClient returns a client of the shared Redis for test set-up and
// clean-up.
func adminClient(t testing.TB) *redis.Client {
	t.Helper()
	u := testURL(t)
	adminMu.Lock()
	defer adminMu.Unlock()
	if admin == nil {
		o, err := redis.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		admin = redis.NewClient(o)
	}
	return admin
}

// testPrefix returns a fresh key prefix of the shared Redis, whose keys
// are deleted when the test ends.
func testPrefix(t testing.TB) string {
	t.Helper()
	_, prefix := testsvc.RedisPrefix(t)
	return prefix
}

// prefixKeys lists the keys under prefix (test inspection only), but for
// the schema version a store writes on its first use: it belongs to the
// prefix, not to any session.
func prefixKeys(t testing.TB, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	it := adminClient(t).Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		if it.Val() != (keys{prefix: prefix}).schema() {
			out = append(out, it.Val())
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// newStore opens a store on the shared Redis and a fresh prefix through
// Open, as users do.
func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix(t)
	}
	s, err := Open(context.Background(), testURL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
