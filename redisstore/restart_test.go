package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
)

// TestServerRestart restarts Redis while a store's client is idle: a
// private server, so that tests of other packages sharing the machine's
// Redis are not disturbed. Redis keeps nothing on disk here, so the data
// is gone: the store must say so (not found, empty), or fail clearly, and
// never answer from stale state.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testsvc.PrivateRedis(t)
	s, err := Open(ctx, srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := recall.Key{Project: "p", Session: "before"}
	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"), item("c"))...)
	if items, _, err := s.Items(ctx, k, 0); err != nil || len(items) != 3 {
		t.Fatalf("before the restart: %d items, %v", len(items), err)
	}

	srv.Stop()
	// While the server is down a call fails with one clear line.
	_, err = s.Stat(ctx, k)
	if err == nil || errors.Is(err, recall.ErrNotFound) || !strings.HasPrefix(err.Error(), "redisstore: stat ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Stat with Redis down: %v; want one line starting redisstore: stat", err)
	}
	if !errors.Is(err, recall.ErrUnavailable) {
		t.Errorf("Stat with Redis down: %v; want recall.ErrUnavailable", err)
	}
	if _, err := s.Append(ctx, k, recall.Guard{}, item("d").Entry()); !errors.Is(err, recall.ErrUnavailable) {
		t.Errorf("Append with Redis down: %v; want recall.ErrUnavailable", err)
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); !errors.Is(err, recall.ErrUnavailable) {
		t.Errorf("List with Redis down: %v; want recall.ErrUnavailable", err)
	}
	srv.Start()

	// The first call after the restart may fail clearly once (a dead pooled
	// connection); it must never return the old session.
	_, err = s.Stat(ctx, k)
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		if !strings.HasPrefix(err.Error(), "redisstore: ") {
			t.Errorf("first call after the restart: %v; want an error naming the store", err)
		}
		_, err = s.Stat(ctx, k)
	}
	if !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("Stat after a restart that lost the data: %v; want ErrNotFound", err)
	}
	if items, _, err := s.Items(ctx, k, 0); err != nil || items != nil {
		t.Fatalf("Items after the restart = %v, %v; want nothing", items, err)
	}
	if p, err := s.List(ctx, "", recall.ListOptions{}); err != nil || len(p.Sessions) != 0 {
		t.Fatalf("List after the restart = %+v, %v; want empty", p, err)
	}
	if it, err := s.Pop(ctx, k); err != nil || it != nil {
		t.Fatalf("Pop after the restart = %s, %v; want nothing", it, err)
	}
	// Writes work again (the script cache is empty: EVALSHA falls back to
	// EVAL) and start a new log.
	if last, err := s.Append(ctx, k, recall.Guard{}, item("after").Entry()); err != nil || last != 1 {
		t.Fatalf("Append after the restart = %d, %v; want seq 1", last, err)
	}
	verify(t, s)
}
