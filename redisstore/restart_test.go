package redisstore

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
)

// redisUp reports whether the local test Redis answers.
func redisUp() bool {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// startRedis starts the local test Redis the way services-up does, and
// waits until it answers.
func startRedis(t *testing.T) {
	t.Helper()
	out, err := exec.Command("redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379",
		"--save", "", "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log").CombinedOutput()
	if err != nil {
		t.Errorf("starting redis-server: %v: %s", err, out)
	}
	for range 100 {
		if redisUp() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("redis-server did not come back")
}

// TestServerRestart restarts Redis while a store's client is idle. This
// Redis keeps nothing on disk, so the data is gone: the store must say so
// (not found, empty), or fail clearly, and never answer from stale state.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	adminClient(t)
	if u := testURL(); !strings.HasPrefix(u, "redis://127.0.0.1:6379") {
		t.Skipf("the restart test only restarts the local Redis; RECALL_TEST_REDIS is %s", Redact(u))
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed here")
	}
	t.Cleanup(func() {
		// whatever happened, leave Redis running
		if !redisUp() {
			if out, err := exec.Command("bash", "/work/shared/services-up").CombinedOutput(); err != nil {
				t.Errorf("services-up: %v: %s", err, out)
			}
		}
	})
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "before"}
	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"), item("c"))...)
	if items, err := s.Items(ctx, k, 0); err != nil || len(items) != 3 {
		t.Fatalf("before the restart: %d items, %v", len(items), err)
	}

	if out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave").CombinedOutput(); err != nil && redisUp() {
		t.Fatalf("redis-cli shutdown: %v: %s", err, out)
	}
	for i := 0; redisUp(); i++ {
		if i == 100 {
			t.Fatal("Redis did not shut down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// While the server is down a call fails with one clear line.
	_, err := s.Stat(ctx, k)
	t.Logf("with Redis down: %v", err)
	if err == nil || errors.Is(err, recall.ErrNotFound) || !strings.HasPrefix(err.Error(), "redisstore: stat ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Stat with Redis down: %v; want one line starting redisstore: stat", err)
	}
	startRedis(t)

	// The first call after the restart may fail clearly once (a dead pooled
	// connection); it must never return the old session.
	_, err = s.Stat(ctx, k)
	t.Logf("first call after the restart: %v", err)
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		if !strings.HasPrefix(err.Error(), "redisstore: ") {
			t.Errorf("first call after the restart: %v; want an error naming the store", err)
		}
		_, err = s.Stat(ctx, k)
	}
	if !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("Stat after a restart that lost the data: %v; want ErrNotFound", err)
	}
	if items, err := s.Items(ctx, k, 0); err != nil || items != nil {
		t.Fatalf("Items after the restart = %v, %v; want nothing", items, err)
	}
	if p, err := s.List(ctx, "", recall.ListOptions{}); err != nil || len(p.Sessions) != 0 {
		t.Fatalf("List after the restart = %+v, %v; want empty", p, err)
	}
	if it, err := s.Pop(ctx, k); err != nil || it != nil {
		t.Fatalf("Pop after the restart = %s, %v; want nothing", it, err)
	}
	// Writes work again (the script cache is empty: EVALSHA falls back to EVAL)
	// and start a new log.
	if last, err := s.Append(ctx, k, recall.ItemEntry(item("after"))); err != nil || last != 1 {
		t.Fatalf("Append after the restart = %d, %v; want seq 1", last, err)
	}
	verify(t, s)
}
