package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testURL is the Redis the tests use.
func testURL() string {
	if u := os.Getenv("RECALL_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

var (
	adminOnce sync.Once
	admin     *redis.Client
	adminErr  error
)

// adminClient returns a client for test set-up and clean-up, or skips the
// test loudly when Redis is not reachable (fails under
// RECALL_REQUIRE_SERVICES=1).
func adminClient(t testing.TB) *redis.Client {
	t.Helper()
	adminOnce.Do(func() {
		o, err := redis.ParseURL(testURL())
		if err != nil {
			adminErr = err
			return
		}
		admin = redis.NewClient(o)
		adminErr = admin.Ping(context.Background()).Err()
	})
	if adminErr != nil {
		msg := fmt.Sprintf("REDIS NOT AVAILABLE at %s: %v (set RECALL_TEST_REDIS, or run /work/shared/services-up)", Redact(testURL()), adminErr)
		if os.Getenv("RECALL_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING: " + msg)
	}
	return admin
}

// testPrefix returns a fresh key prefix and deletes its keys when the test
// ends. (SCAN is fine here: it is test clean-up, never the store's path.)
func testPrefix(t testing.TB) string {
	t.Helper()
	rdb := adminClient(t)
	prefix := fmt.Sprintf("recalltest:%016x:", rand.Uint64())
	t.Cleanup(func() { dropPrefix(t, rdb, prefix) })
	return prefix
}

func dropPrefix(t testing.TB, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 1000 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		rdb.Unlink(ctx, batch...)
	}
	if err := it.Err(); err != nil {
		t.Logf("cleaning prefix %s: %v", prefix, err)
	}
}

// prefixKeys lists the keys under prefix (test inspection only).
func prefixKeys(t testing.TB, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	it := adminClient(t).Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		out = append(out, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// newStore opens a store on a fresh prefix through Open, as users do.
func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix(t)
	}
	s, err := Open(context.Background(), testURL(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
