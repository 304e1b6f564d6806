package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestGroupCommit drives the SQLite writer's group commit directly: many
// goroutines each write a row and then fail or succeed. A failed call's
// row is gone (rolled back to its savepoint), every other call's row is
// there, each caller gets its own outcome, and calls did share
// transactions.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	b := s.db.(*liteBackend)
	boom := errors.New("boom")
	const goroutines, rounds = 16, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				id := fmt.Sprintf("g%d-%d", g, r)
				fail := (g+r)%3 == 0
				err := b.update(ctx, func(ctx context.Context, q querier) error {
					if _, err := q.exec(ctx, `INSERT INTO sessions (project, id, created_at, updated_at) VALUES ('p', $1, 0, 0)`, id); err != nil {
						return err
					}
					if fail {
						return fmt.Errorf("%s: %w", id, boom)
					}
					return nil
				})
				if fail != errors.Is(err, boom) || !fail && err != nil {
					t.Errorf("%s: update = %v, want failure %t", id, err, fail)
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		for r := range rounds {
			id := fmt.Sprintf("g%d-%d", g, r)
			var n int
			if err := b.r.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = $1`, id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1}[(g+r)%3 == 0]; n != want {
				t.Errorf("%s: %d rows, want %d", id, n, want)
			}
		}
	}
	tx, calls := b.transactions.Load(), b.calls.Load()
	t.Logf("%d calls in %d transactions", calls, tx)
	if calls < goroutines*rounds || tx >= calls {
		t.Errorf("%d calls in %d transactions: no call shared a transaction", calls, tx)
	}
}

// TestGroupCommitCanceled: a call whose context ends before it runs
// writes nothing and reports the context's error.
func TestGroupCommitCanceled(t *testing.T) {
	s := newSQLite(t)
	b := s.db.(*liteBackend)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := b.update(ctx, func(ctx context.Context, q querier) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("update with a canceled context: %v, ran %t", err, ran)
	}
}

// TestGroupCommitCanceledWhileRunning: a call whose context ends while it
// runs is rolled back and reports the context's error: it changes nothing,
// since it had not committed. (Its statements are not interrupted: in
// SQLite that would roll back the whole group's transaction.)
func TestGroupCommitCanceledWhileRunning(t *testing.T) {
	s := newSQLite(t)
	b := s.db.(*liteBackend)
	ctx, cancel := context.WithCancel(context.Background())
	err := b.update(ctx, func(ctx context.Context, q querier) error {
		cancel()
		_, err := q.exec(ctx, `INSERT INTO sessions (project, id, created_at, updated_at) VALUES ('p', 'late', 0, 0)`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("update canceled while running: %v, want context.Canceled", err)
	}
	var n int
	if err := b.r.QueryRow(`SELECT count(*) FROM sessions WHERE id = 'late'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows (%v), want none", n, err)
	}
}
