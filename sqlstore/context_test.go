package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// TestContextEnded calls every method of the store with a context that
// was canceled, and one whose deadline passed, before the call: each
// returns an error wrapping the context's, and nothing changes.
func TestContextEnded(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		bg := context.Background()
		k := recall.Key{Project: "p", Session: "ctx"}
		if _, err := s.Append(bg, k, recall.Guard{}, recall.ItemEntries(msg("a"), msg("b"))...); err != nil {
			t.Fatal(err)
		}
		canceled, cancel := context.WithCancel(bg)
		cancel()
		expired, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
		defer cancel2()
		title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "x", Source: recall.TitleUser})
		calls := map[string]func(ctx context.Context) error{
			"Append items": func(ctx context.Context) error {
				_, err := s.Append(ctx, k, recall.Guard{}, msg("c").Entry())
				return err
			},
			"Append guarded": func(ctx context.Context) error {
				_, err := s.Append(ctx, k, recall.IfExists(), msg("c").Entry())
				return err
			},
			"Append general": func(ctx context.Context) error { _, err := s.Append(ctx, k, recall.Guard{}, title); return err },
			"Append empty":   func(ctx context.Context) error { _, err := s.Append(ctx, k, recall.IfExists()); return err },
			"Append new": func(ctx context.Context) error {
				_, err := s.Append(ctx, recall.Key{Project: "p", Session: "new"}, recall.Guard{}, title)
				return err
			},
			"Items":     func(ctx context.Context) error { _, _, err := s.Items(ctx, k, 1); return err },
			"Items all": func(ctx context.Context) error { _, _, err := s.Items(ctx, k, 0); return err },
			"Pop":       func(ctx context.Context) error { _, err := s.Pop(ctx, k); return err },
			"Stat":      func(ctx context.Context) error { _, err := s.Stat(ctx, k); return err },
			"Load":      func(ctx context.Context) error { _, _, err := s.Load(ctx, k); return err },
			"Entries":   func(ctx context.Context) error { _, err := s.Entries(ctx, k, 0, 0); return err },
			"List":      func(ctx context.Context) error { _, err := s.List(ctx, "", recall.ListOptions{}); return err },
			"Remove":    func(ctx context.Context) error { return s.Remove(ctx, k) },
			"Import": func(ctx context.Context) error {
				_, err := s.Import(ctx, k, recall.Entry{Seq: 3, Kind: recall.KindItem, Time: storekit.Now(), Data: []byte(msg("c"))})
				return err
			},
			"Projects": func(ctx context.Context) error { _, err := s.Projects(ctx); return err },
			"Cleanup": func(ctx context.Context) error {
				_, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)})
				return err
			},
			"Purge": func(ctx context.Context) error { _, err := s.Purge(ctx, k); return err },
			"Fork": func(ctx context.Context) error {
				_, err := s.Fork(ctx, k, 0, recall.Key{Project: "p", Session: "fork"})
				return err
			},
		}
		m0, log0, err := s.Load(bg, k)
		if err != nil {
			t.Fatal(err)
		}
		for name, call := range calls {
			for _, ctx := range []context.Context{canceled, expired} {
				if err := call(ctx); !errors.Is(err, ctx.Err()) {
					t.Errorf("%s with an ended context (%v) = %v, want it wrapped", name, ctx.Err(), err)
				}
			}
		}
		m, log, err := s.Load(bg, k)
		if err != nil || storetest.MetaDiff(m, m0, true) != "" || len(log) != len(log0) {
			t.Errorf("calls under ended contexts changed the session: %+v (%d entries), %v; was %+v (%d)", m, len(log), err, m0, len(log0))
		}
		if p, _ := s.List(bg, "", recall.ListOptions{}); len(p.Sessions) != 1 {
			t.Errorf("calls under ended contexts changed the list: %d sessions", len(p.Sessions))
		}
	})
}

// TestSQLiteCanceledWhileWaitingForLock: another connection to the
// database file (as another process would) holds the write lock; an
// Append waits for it (busy_timeout), and its caller gives up meanwhile.
// The Append reports the context's error at once, while the lock is still
// held, and nothing of it is written, then or after the lock's release; a
// second Append queued behind it, whose context lives, is written once
// the lock is released. Run for the items-only path, the general path,
// Fork and Remove.
func TestSQLiteCanceledWhileWaitingForLock(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	s, err := OpenSQLite(bg, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	kept := recall.Key{Project: "p", Session: "kept"}
	if _, err := s.Append(bg, kept, recall.Guard{}, msg("kept").Entry()); err != nil {
		t.Fatal(err)
	}
	title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "late", Source: recall.TitleUser})
	for i, c := range []struct {
		name  string
		write func(ctx context.Context) error
		check func() error // nil when nothing of the write is there
	}{
		{"items", func(ctx context.Context) error {
			_, err := s.Append(ctx, recall.Key{Project: "p", Session: "late0"}, recall.Guard{}, msg("late").Entry())
			return err
		}, func() error { return absent(s, recall.Key{Project: "p", Session: "late0"}) }},
		{"general", func(ctx context.Context) error {
			_, err := s.Append(ctx, kept, recall.IfExists(), title)
			return err
		}, func() error {
			if m, err := s.Stat(bg, kept); err != nil || m.Title != "" || m.LastSeq != 1 {
				return fmt.Errorf("kept is now %+v, %v", m, err)
			}
			return nil
		}},
		{"fork", func(ctx context.Context) error {
			_, err := s.Fork(ctx, kept, 0, recall.Key{Project: "p", Session: "latefork"})
			return err
		}, func() error { return absent(s, recall.Key{Project: "p", Session: "latefork"}) }},
		{"remove", func(ctx context.Context) error { return s.Remove(ctx, kept) }, func() error {
			_, err := s.Stat(bg, kept)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := other.Conn(bg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			lb := s.db.(*liteBackend)
			groups := lb.transactions.Load()
			ctx, cancel := context.WithCancel(bg)
			done := make(chan error, 1)
			go func() { done <- c.write(ctx) }()
			// The write's group transaction has begun: it waits for the
			// lock conn holds, in BEGIN IMMEDIATE's busy handler.
			testkit.Eventually(t, 30*time.Second, "the write's transaction begins", func() bool { return lb.transactions.Load() > groups })
			// and a write behind it, whose caller waits: it queues while
			// the group above holds the writer
			behind := recall.Key{Project: "p", Session: fmt.Sprint("patient", i)}
			patient := make(chan error, 1)
			go func() {
				_, err := s.Append(bg, behind, recall.Guard{}, msg("patient").Entry())
				patient <- err
			}()
			testkit.Eventually(t, 30*time.Second, "the second write queues", func() bool {
				lb.mu.Lock()
				defer lb.mu.Unlock()
				return len(lb.queue) > 0
			})
			select {
			case err := <-done:
				t.Fatalf("the write did not wait for the lock: %v", err)
			default:
			}
			// The caller gives up while the write waits for the lock: it
			// returns while the lock is still held.
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the canceled write returned %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("the canceled write still waits for the lock 5s after its caller gave up")
				<-done
			}
			if err := c.check(); err != nil {
				t.Errorf("the canceled write was written: %v", err)
			}
			if _, err := conn.ExecContext(bg, `COMMIT`); err != nil {
				t.Fatal(err)
			}
			if err := <-patient; err != nil {
				t.Errorf("the write queued behind it: %v", err)
			}
			if err := c.check(); err != nil {
				t.Errorf("the canceled write was written after its caller gave up: %v", err)
			}
			if m, err := s.Stat(bg, behind); err != nil || m.ItemCount != 1 {
				t.Errorf("the write queued behind it is missing: %+v, %v", m, err)
			}
		})
	}
	verify(t, s)
}

// absent returns nil when key does not exist, and its entries' count in
// the table too is 0.
func absent(s *Store, key recall.Key) error {
	ctx := context.Background()
	if m, err := s.Stat(ctx, key); !errors.Is(err, recall.ErrNotFound) {
		return fmt.Errorf("%s exists: %+v, %v", key, m, err)
	}
	var n int
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM entries WHERE session NOT IN (SELECT sid FROM sessions)`).Scan(&n); err != nil || n != 0 {
		return fmt.Errorf("%d entries without a session (%v)", n, err)
	}
	return nil
}
