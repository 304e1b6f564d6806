package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// forkBothWays forks src at atSeq natively onto native and through the
// fallback onto fallback, and checks that the two agree: the same error,
// or the same log but for the times, the same metadata but for the key
// and the times; the native fork's Meta is what Stat and Load read, and
// its rows are all checked (checked_seq = last_seq).
func forkBothWays(t *testing.T, s *Store, src recall.Key, atSeq int64, native, fallback recall.Key) error {
	t.Helper()
	made, err := storetest.CompareFork(t, s, src, atSeq, native, fallback)
	if !made {
		return err
	}
	ctx := context.Background()
	m, err := s.Stat(ctx, native)
	if err != nil {
		t.Fatal(err)
	}
	if checked := checkedSeq(t, s, native); checked != m.LastSeq {
		t.Errorf("fork of %s at %d: checked_seq %d, LastSeq %d", src, atSeq, checked, m.LastSeq)
	}
	return nil
}

// TestNativeFork: the store forks natively (storekit.Forker, one
// transaction), and its fork is the fallback's, at every seq of a session
// with pops, a removal, a clear, a compaction, a title and metadata; a
// refused fork is refused alike and writes nothing.
func TestNativeFork(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		if _, ok := any(s).(storekit.Forker); !ok {
			t.Fatal("sqlstore.Store does not implement storekit.Forker")
		}
		ctx := context.Background()
		src := recall.Key{Project: "p", Session: "src"}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		_, err := recall.NewSession(s, src).Create(ctx, recall.CreateOptions{Title: "t", Metadata: map[string]string{"k": "v"}, Items: []recall.Item{msg("a"), msg("b")}})
		must(err)
		d := msg("d").Entry()
		d.Usage = &recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
		_, err = s.Append(ctx, src, recall.Guard{}, msg("c").Entry(), d)
		must(err)
		_, err = s.Pop(ctx, src)
		must(err)
		_, err = recall.NewSession(s, src).RemoveItem(ctx, recall.ItemRef{Seq: 4}) // a
		must(err)
		_, err = recall.NewSession(s, src).SetTitle(ctx, "u", recall.TitleUser)
		must(err)
		must(recall.NewSession(s, src).Clear(ctx))
		last, err := s.Append(ctx, src, recall.Guard{}, recall.ItemEntries(msg("e"), msg("f"), msg("g"))...)
		must(err)
		_, err = s.Append(ctx, src, recall.IfLastSeq(last), recall.NewEntry(recall.KindCompaction,
			recall.Compaction{Through: last, Items: []recall.Item{msg("summary"), msg("g")}}))
		must(err)
		_, err = s.Append(ctx, src, recall.Guard{}, recall.ItemEntries(msg("h"), msg("i"))...)
		must(err)
		_, err = s.Pop(ctx, src)
		must(err)
		m, err := s.Stat(ctx, src)
		must(err)
		for at := int64(-1); at <= m.LastSeq; at++ {
			must(forkBothWays(t, s, src, at, recall.Key{Project: "p", Session: fmt.Sprint("native", at)},
				recall.Key{Project: "q", Session: fmt.Sprint("fallback", at)}))
		}
		// A fork of a fork, and of a subagent record.
		must(forkBothWays(t, s, recall.Key{Project: "p", Session: "native0"}, 0,
			recall.Key{Project: "p", Session: "native-2"}, recall.Key{Project: "q", Session: "fallback-2"}))
		sub := recall.Key{Project: "p", Session: "src", Subpath: "subagents/x"}
		_, err = s.Append(ctx, sub, recall.Guard{}, msg("sub").Entry())
		must(err)
		must(forkBothWays(t, s, sub, 0, recall.Key{Project: "p", Session: "src", Subpath: "subagents/native"},
			recall.Key{Project: "p", Session: "src", Subpath: "subagents/fallback"}))

		// Refusals, in the fallback's order.
		taken := recall.Key{Project: "p", Session: "native0"}
		takenMeta, _, err := s.Load(ctx, taken)
		must(err)
		missing := recall.Key{Project: "p", Session: "missing"}
		for _, c := range []struct {
			name            string
			src             recall.Key
			at              int64
			native, fallbck recall.Key
			want            error
		}{
			{"a missing session", missing, 0, recall.Key{Project: "p", Session: "n1"}, recall.Key{Project: "p", Session: "f1"}, recall.ErrNotFound},
			{"a missing session onto a taken key", missing, 0, taken, taken, recall.ErrNotFound},
			{"onto a taken key", src, 0, taken, taken, recall.ErrConflict},
			{"onto itself", src, 2, src, src, recall.ErrConflict},
			{"past the end", src, m.LastSeq + 1, recall.Key{Project: "p", Session: "n2"}, recall.Key{Project: "p", Session: "f2"}, recall.ErrNotFound},
			{"past the end onto a taken key", src, m.LastSeq + 1, taken, taken, recall.ErrNotFound},
			{"onto an invalid key", src, 0, recall.Key{Project: "p"}, recall.Key{Project: "p"}, recall.ErrInvalidKey},
			{"of an invalid key", recall.Key{Project: "p"}, 0, recall.Key{Project: "p", Session: "n3"}, recall.Key{Project: "p", Session: "f3"}, recall.ErrInvalidKey},
		} {
			if err := forkBothWays(t, s, c.src, c.at, c.native, c.fallbck); !errors.Is(err, c.want) {
				t.Errorf("fork %s = %v, want %v", c.name, err, c.want)
			}
		}
		for _, k := range []recall.Key{{Project: "p", Session: "n1"}, {Project: "p", Session: "n2"}, {Project: "p", Session: "f2"}} {
			if _, err := s.Stat(ctx, k); !errors.Is(err, recall.ErrNotFound) {
				t.Errorf("a refused fork created %s: %v", k, err)
			}
		}
		if after, _, err := s.Load(ctx, taken); err != nil || storetest.MetaDiff(after, takenMeta, true) != "" {
			t.Errorf("a refused fork changed its target: %s, %v", storetest.MetaDiff(after, takenMeta, true), err)
		}

		// Concurrent forks onto one key: one wins.
		var wg sync.WaitGroup
		var won atomic.Int32
		race := recall.Key{Project: "p", Session: "race"}
		for range 4 {
			wg.Go(func() {
				_, err := recall.NewSession(s, src).Fork(ctx, 0, race)
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, recall.ErrConflict):
					t.Errorf("racing fork: %v", err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Errorf("%d racing forks onto one key won, want 1", won.Load())
		}
		verify(t, s)
	})
}

// TestNativeForkOfDamagedRows: rows another program wrote (above the
// source's checked_seq) are treated by the native fork as by the
// fallback: one recall.Entry.Item refuses, or one that only looks like a JSON
// object ("{x}", unreadable: out of Load's log), is out of the view and of
// both forks; an item of the view over MaxItemSize refuses both with
// ErrTooLarge, writing nothing, as the fallback's Append refuses it; one
// cleared away does not matter. The forks are healthy.
func TestNativeForkOfDamagedRows(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "damaged"}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("a"))...); err != nil {
			t.Fatal(err)
		}
		plant(t, s, k, []byte(`[1,2]`))
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("b"))...); err != nil {
			t.Fatal(err)
		}
		if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n1"}, recall.Key{Project: "p", Session: "f1"}); err != nil {
			t.Fatalf("fork of a session with a record Entry.Item refuses: %v", err)
		}
		if m, err := s.Stat(ctx, recall.Key{Project: "p", Session: "n1"}); err != nil || m.ItemCount != 2 || m.Corrupt != 0 {
			t.Errorf("fork = ItemCount %d, Corrupt %d, %v; want 2 healthy items", m.ItemCount, m.Corrupt, err)
		}

		plant(t, s, k, []byte(`{x}`))
		if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n2"}, recall.Key{Project: "p", Session: "f2"}); err != nil {
			t.Fatalf("fork of a session ending with {x}: %v", err)
		}
		if m, err := s.Stat(ctx, recall.Key{Project: "p", Session: "n2"}); err != nil || m.ItemCount != 2 || m.Corrupt != 0 {
			t.Errorf("fork = ItemCount %d, Corrupt %d, %v; want 2 healthy items", m.ItemCount, m.Corrupt, err)
		}
		big := []byte(`{"type":"message","text":"` + strings.Repeat("x", 100) + `"}`)
		plant(t, s, k, big)
		s.opts.MaxItemSize = 100 // as if the store had been opened so: big is over it, the others are not
		err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n6"}, recall.Key{Project: "p", Session: "f6"})
		s.opts.MaxItemSize = 0
		if !errors.Is(err, recall.ErrTooLarge) {
			t.Errorf("fork of a view holding an item over MaxItemSize = %v, want ErrTooLarge", err)
		}
		for _, nk := range []string{"n6", "f6"} {
			if _, err := s.Stat(ctx, recall.Key{Project: "p", Session: nk}); !errors.Is(err, recall.ErrNotFound) {
				t.Errorf("a refused fork created %s: %v", nk, err)
			}
		}
		// Forked before the row, the view is healthy.
		if err := forkBothWays(t, s, k, 3, recall.Key{Project: "p", Session: "n3"}, recall.Key{Project: "p", Session: "f3"}); err != nil {
			t.Errorf("fork at the seq before {x}: %v", err)
		}
		if err := recall.NewSession(s, k).Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("c"))...); err != nil {
			t.Fatal(err)
		}
		if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n4"}, recall.Key{Project: "p", Session: "f4"}); err != nil {
			t.Errorf("fork after {x} was cleared away: %v", err)
		}
		// A row above last_seq, which another program inserted into a
		// healthy session without moving last_seq (so checked_seq is
		// last_seq still): it is in the log Load reads, so in the
		// fallback's view, and the native fork validates it too.
		beyond := recall.Key{Project: "p", Session: "beyond"}
		if _, err := s.Append(ctx, beyond, recall.Guard{}, recall.ItemEntries(msg("a"), msg("b"))...); err != nil {
			t.Fatal(err)
		}
		sid, err := sessionID(ctx, s.db.q(), beyond)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.update(ctx, func(ctx context.Context, q querier) error {
			_, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, 3, 'item', $2, $3)`,
				sid, big, s.db.timeArg(storekit.Now()))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if checked := checkedSeq(t, s, beyond); checked != 2 {
			t.Fatalf("checked_seq %d, want 2", checked)
		}
		s.opts.MaxItemSize = 100
		err = forkBothWays(t, s, beyond, 0, recall.Key{Project: "p", Session: "n5"}, recall.Key{Project: "p", Session: "f5"})
		s.opts.MaxItemSize = 0
		if !errors.Is(err, recall.ErrTooLarge) {
			t.Errorf("fork of a log holding an item over MaxItemSize above last_seq = %v, want ErrTooLarge", err)
		}
		for _, nk := range []string{"n1", "n2", "n3", "n4"} {
			if err := storekit.VerifySession(ctx, s, recall.Key{Project: "p", Session: nk}); err != nil {
				t.Errorf("VerifySession of the fork %s: %v", nk, err)
			}
		}
	})
}
