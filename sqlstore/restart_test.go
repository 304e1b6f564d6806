package sqlstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
)

// TestPostgresRestart restarts PostgreSQL (a private server of this test,
// so other packages' tests keep theirs; stopped in immediate mode, as a
// crash would) while a store is idle. The first call afterwards must
// either succeed, with the right data, or fail with a clear error; the
// calls after it must succeed once the server is back, and nothing is lost
// or duplicated. It restarts the server twice: once before a read, once
// before a write.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	srv := testsvc.PrivatePostgres(t)
	ctx := context.Background()
	s, err := OpenPostgres(ctx, srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := recall.Key{Project: "p", Session: "restart"}
	if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("one"), msg("two"))...); err != nil {
		t.Fatal(err)
	}
	want := []string{"one", "two"}

	srv.Stop()
	srv.Start()
	items, _, err := s.Items(ctx, k, 0)
	if err != nil {
		checkClearError(t, err)
	} else if got := texts(items); !slices.Equal(got, want) {
		t.Fatalf("first read after the restart: %q, want %q", got, want)
	}
	eventually(t, func() error {
		_, err := s.Append(ctx, k, recall.Guard{}, msg("three").Entry())
		return err
	})
	want = append(want, "three")
	checkItems(t, s, k, want, nil)

	srv.Stop()
	srv.Start()
	_, err = s.Append(ctx, k, recall.Guard{}, msg("four").Entry())
	var maybe []string
	if err != nil {
		// The outcome of a write whose connection died is unknown: the
		// item may or may not be there, but only once.
		checkClearError(t, err)
		maybe = []string{"four"}
	} else {
		want = append(want, "four")
	}
	eventually(t, func() error { _, err := s.Stat(ctx, k); return err })
	checkItems(t, s, k, want, maybe)
	verify(t, s)

	// While the server is down, calls fail clearly rather than hang or
	// answer wrongly; once it is back they succeed.
	srv.Stop()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := s.Stat(cctx, k); err == nil {
		t.Fatal("Stat succeeded with the server down")
	} else {
		checkClearError(t, err)
		if !errors.Is(err, recall.ErrUnavailable) {
			t.Errorf("Stat with the server down: %v; want recall.ErrUnavailable", err)
		}
	}
	if _, err := s.Append(cctx, k, recall.Guard{}, msg("down").Entry()); !errors.Is(err, recall.ErrUnavailable) {
		t.Errorf("Append with the server down: %v; want recall.ErrUnavailable", err)
	}
	if _, err := s.List(cctx, "p", recall.ListOptions{}); !errors.Is(err, recall.ErrUnavailable) {
		t.Errorf("List with the server down: %v; want recall.ErrUnavailable", err)
	}
	srv.Start()
	eventually(t, func() error { _, err := s.Stat(ctx, k); return err })
}

// checkClearError accepts an error from a call that met a restarted or
// stopped server: one line, naming the store's operation, not disguised as
// a missing session or a conflict.
func checkClearError(t *testing.T, err error) {
	t.Helper()
	t.Logf("call failed: %v", err)
	if text := err.Error(); !strings.HasPrefix(text, "sqlstore: ") || strings.Contains(text, "\n") {
		t.Errorf("unclear error: %q", text)
	}
	if errors.Is(err, recall.ErrNotFound) || errors.Is(err, recall.ErrConflict) {
		t.Errorf("a lost connection reported as %v", err)
	}
}

// eventually retries f for up to 20 seconds.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after the restart: %v", err)
		}
		t.Logf("retrying: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// checkItems checks that key's items are want, plus possibly the texts of
// maybe, in order, at the end.
func checkItems(t *testing.T, s *Store, key recall.Key, want, maybe []string) {
	t.Helper()
	items, _, err := s.Items(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(items)
	if !slices.Equal(got, want) && !slices.Equal(got, append(slices.Clone(want), maybe...)) {
		t.Fatalf("items %q, want %q (+ maybe %q)", got, want, maybe)
	}
	m, err := s.Stat(context.Background(), key)
	if err != nil || m.ItemCount != len(got) || m.LastSeq != int64(len(got)) {
		t.Fatalf("meta %+v, %v for %d items", m, err, len(got))
	}
}

func texts(live []recall.LiveItem) []string {
	out := make([]string, len(live))
	for i, l := range live {
		out[i] = l.Item.Text()
	}
	return out
}
