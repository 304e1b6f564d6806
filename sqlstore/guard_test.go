package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storetest"
)

// guardPaths are the two write paths of Append a guard must hold on: the
// items-only fast path (appendItems: an upsert) and the general one (a
// locked row read, then Meta.Apply), each given by the batch it writes.
var guardPaths = []struct {
	name  string
	batch func(n int) []recall.Entry
}{
	{"items", func(n int) []recall.Entry { return []recall.Entry{msg(fmt.Sprint("item ", n)).Entry()} }},
	{"general", func(n int) []recall.Entry {
		return []recall.Entry{msg(fmt.Sprint("item ", n)).Entry(), recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: fmt.Sprint("t", n), Source: recall.TitleUser})}
	}},
}

// TestGuardedAppend checks each guard on both write paths and on an empty
// batch: a guard that holds writes the batch; one that fails is
// ErrNotFound or ErrConflict, and writes nothing, not even the row of a
// missing session.
func TestGuardedAppend(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		for _, p := range guardPaths {
			t.Run(p.name, func(t *testing.T) {
				missing := recall.Key{Project: "guard", Session: "missing-" + p.name}
				existing := recall.Key{Project: "guard", Session: "existing-" + p.name}
				last, err := s.Append(ctx, existing, recall.Guard{}, p.batch(0)...)
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range []struct {
					key   recall.Key
					guard recall.Guard
					want  error // nil: written
				}{
					{missing, recall.IfExists(), recall.ErrNotFound},
					{missing, recall.IfLastSeq(3), recall.ErrNotFound},
					{existing, recall.IfNew(), recall.ErrConflict},
					{existing, recall.IfLastSeq(last - 1), recall.ErrConflict},
					{existing, recall.IfLastSeq(last + 1), recall.ErrConflict},
					{existing, recall.IfLastSeq(0), recall.ErrConflict},
					{existing, recall.IfExists(), nil},
					{existing, recall.IfLastSeq(-1), nil}, // -1: the seq read just before
					{missing, recall.IfLastSeq(0), nil},
				} {
					before, statErr := s.Stat(ctx, c.key)
					g := c.guard
					if g.CheckSeq && g.LastSeq == -1 {
						g.LastSeq = before.LastSeq
					}
					batch := p.batch(i + 1)
					got, err := s.Append(ctx, c.key, g, batch...)
					after, afterErr := s.Stat(ctx, c.key)
					if c.want != nil {
						if !errors.Is(err, c.want) || got != 0 {
							t.Errorf("%d: Append(%s, %+v) = %d, %v; want %v", i, c.key, g, got, err, c.want)
						}
						if storetest.ErrorClass(afterErr) != storetest.ErrorClass(statErr) || after.LastSeq != before.LastSeq {
							t.Errorf("%d: a failed guard wrote: LastSeq %d (%v), was %d (%v)", i, after.LastSeq, afterErr, before.LastSeq, statErr)
						}
						continue
					}
					if err != nil || got != before.LastSeq+int64(len(batch)) || after.LastSeq != got {
						t.Errorf("%d: Append(%s, %+v) = %d, %v; want %d", i, c.key, g, got, err, before.LastSeq+int64(len(batch)))
					}
				}
				// An empty batch checks the guard and returns the last seq.
				m, _ := s.Stat(ctx, existing)
				for _, c := range []struct {
					key   recall.Key
					guard recall.Guard
					want  error
					last  int64
				}{
					{existing, recall.IfExists(), nil, m.LastSeq},
					{existing, recall.IfLastSeq(m.LastSeq), nil, m.LastSeq},
					{existing, recall.IfNew(), recall.ErrConflict, 0},
					{existing, recall.IfLastSeq(1), recall.ErrConflict, 0},
					{recall.Key{Project: "guard", Session: "never"}, recall.IfExists(), recall.ErrNotFound, 0},
					{recall.Key{Project: "guard", Session: "never"}, recall.IfNew(), nil, 0},
				} {
					got, err := s.Append(ctx, c.key, c.guard)
					if got != c.last || (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
						t.Errorf("empty Append(%s, %+v) = %d, %v; want %d, %v", c.key, c.guard, got, err, c.last, c.want)
					}
				}
				if _, err := s.Stat(ctx, recall.Key{Project: "guard", Session: "never"}); !errors.Is(err, recall.ErrNotFound) {
					t.Errorf("an empty Append created a session: %v", err)
				}
			})
		}
		// No failed guard left an entry behind, even one without a row.
		var orphans int
		if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM entries WHERE session NOT IN (SELECT sid FROM sessions)`).Scan(&orphans); err != nil || orphans != 0 {
			t.Errorf("%d entries without a session (%v)", orphans, err)
		}
		verify(t, s)
	})
}

// TestGuardRaces races guarded appends, on both write paths, against each
// other and against Remove, many rounds:
//   - of several IfNew appends to one new key, exactly one creates it;
//   - of several IfLastSeq(n) appends, exactly one wins each round;
//   - an IfExists append racing a Remove never brings the session back:
//     it lands before the remove (and goes with it) or fails ErrNotFound.
func TestGuardRaces(t *testing.T) {
	t.Parallel()
	const writers = 4
	rounds := testkit.Size(8, 30)
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		race := func(n int, f func(w int) error) []error {
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range n {
				wg.Go(func() {
					<-start
					errs[w] = f(w)
				})
			}
			close(start)
			wg.Wait()
			return errs
		}
		wins := func(errs []error, lose error) int {
			n := 0
			for _, err := range errs {
				switch {
				case err == nil:
					n++
				case !errors.Is(err, lose):
					t.Errorf("a loser failed with %v, want %v", err, lose)
				}
			}
			return n
		}
		for _, p := range guardPaths {
			for r := range rounds {
				k := recall.Key{Project: "race", Session: fmt.Sprintf("%s-%d", p.name, r)}
				errs := race(writers, func(w int) error {
					_, err := s.Append(ctx, k, recall.IfNew(), p.batch(w)...)
					return err
				})
				if n := wins(errs, recall.ErrConflict); n != 1 {
					t.Fatalf("%s round %d: %d IfNew appends created the session, want 1", p.name, r, n)
				}
				m, err := s.Stat(ctx, k)
				if err != nil || m.LastSeq != int64(len(p.batch(0))) {
					t.Fatalf("%s round %d: after the IfNew race: %+v, %v", p.name, r, m, err)
				}
				errs = race(writers, func(w int) error {
					_, err := s.Append(ctx, k, recall.IfLastSeq(m.LastSeq), p.batch(w)...)
					return err
				})
				if n := wins(errs, recall.ErrConflict); n != 1 {
					t.Fatalf("%s round %d: %d IfLastSeq appends won, want 1", p.name, r, n)
				}
				var appendErr, removeErr error
				race(2, func(w int) error {
					if w == 0 {
						_, appendErr = s.Append(ctx, k, recall.IfExists(), p.batch(w)...)
					} else {
						removeErr = s.Remove(ctx, k)
					}
					return nil
				})
				if removeErr != nil || appendErr != nil && !errors.Is(appendErr, recall.ErrNotFound) {
					t.Fatalf("%s round %d: remove = %v, append(IfExists) = %v", p.name, r, removeErr, appendErr)
				}
				if m, err := s.Stat(ctx, k); !errors.Is(err, recall.ErrNotFound) {
					t.Fatalf("%s round %d: a ghost: the removed session is back: %+v, %v", p.name, r, m, err)
				}
			}
		}
		verify(t, s)
	})
}

// TestGuardRacesAcrossStores is TestGuardRaces' IfLastSeq case with the
// writers in separate stores, each with its own connections: on SQLite
// the guard then rests on the database's write lock, not on this
// process's group commit.
func TestGuardRacesAcrossStores(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			p := newProcessTarget(t, dialect)
			stores := []*Store{p.open(), p.open(), p.open()}
			ctx := context.Background()
			k := recall.Key{Project: "race", Session: "stores"}
			if _, err := stores[0].Append(ctx, k, recall.Guard{}, msg("first").Entry()); err != nil {
				t.Fatal(err)
			}
			var won atomic.Int64
			for r := range 20 {
				var wg sync.WaitGroup
				won.Store(0)
				last := int64(r + 1)
				for i, st := range stores {
					wg.Go(func() {
						var batch []recall.Entry
						if i%2 == 0 {
							batch = []recall.Entry{msg(fmt.Sprint(r, i)).Entry()}
						} else {
							batch = []recall.Entry{recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last, Items: []recall.Item{msg(fmt.Sprint(r, i))}})}
						}
						_, err := st.Append(ctx, k, recall.IfLastSeq(last), batch...)
						switch {
						case err == nil:
							won.Add(1)
						case !errors.Is(err, recall.ErrConflict):
							t.Errorf("round %d: %v", r, err)
						}
					})
				}
				wg.Wait()
				if won.Load() != 1 {
					t.Fatalf("round %d: %d writers won the IfLastSeq(%d) race, want 1", r, won.Load(), last)
				}
			}
			verify(t, stores[0])
		})
	}
}
