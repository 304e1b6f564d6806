package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// forkBothWays forks src at atSeq natively onto native and through the
// fallback onto fallback, and checks that the two agree: the same error,
// or the same log but for the times, the same metadata but for the key and
// the times, the same hash fields but for those the append script draws
// at random or stamps, a place in the same indexes, the same TTL; the
// native fork's Meta is what Stat and Load read.
func forkBothWays(t *testing.T, s *Store, src recall.Key, atSeq int64, native, fallback recall.Key) error {
	t.Helper()
	made, err := storetest.CompareFork(t, s, src, atSeq, native, fallback)
	if !made {
		return err
	}
	ctx := context.Background()
	rdb := adminClient(t)
	fields := func(k recall.Key) map[string]string {
		h, err := rdb.HGetAll(ctx, s.k.meta(k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"gen", "tok", "created", "updated"} {
			if h[f] == "" && f != "tok" {
				t.Errorf("fork %s has no %q field", k, f)
			}
			delete(h, f)
		}
		return h
	}
	if nh, fh := fields(native), fields(fallback); !maps.Equal(nh, fh) {
		t.Errorf("fork of %s at %d: native fork's hash %v, fallback's %v", src, atSeq, nh, fh)
	}
	for i, ix := range s.k.indexes(native) {
		fix := s.k.indexes(fallback)[i]
		_, nerr := rdb.ZScore(ctx, ix, member(native)).Result()
		_, ferr := rdb.ZScore(ctx, fix, member(fallback)).Result()
		if (nerr == nil) != (ferr == nil) {
			t.Errorf("fork of %s at %d: native fork in index %s: %v; fallback's in %s: %v", src, atSeq, ix, nerr, fix, ferr)
		}
	}
	if s.ttlMS > 0 {
		for _, k := range []recall.Key{native, fallback} {
			for _, key := range []string{s.k.meta(k), s.k.log(k)} {
				if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl <= 0 {
					t.Errorf("fork %s: %s has TTL %v, %v; want the store's", k, key, ttl, err)
				}
			}
		}
	}
	return nil
}

// TestNativeFork: the store forks natively (storekit.Forker), and its fork
// is the fallback's, at every seq of a session with pops, a removal, a
// clear, a compaction, a title and metadata, with and without a TTL; a
// refused fork is refused alike and writes nothing.
func TestNativeFork(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("ttl=", ttl), func(t *testing.T) { testNativeFork(t, ttl) })
	}
}

func testNativeFork(t *testing.T, ttl time.Duration) {
	s := newStore(t, Options{TTL: ttl})
	if _, ok := any(s).(storekit.Forker); !ok {
		t.Fatal("redisstore.Store does not implement storekit.Forker")
	}
	ctx := context.Background()
	src := recall.Key{Project: "p", Session: "src"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := recall.NewSession(s, src).Create(ctx, recall.CreateOptions{Title: "t", Metadata: map[string]string{"k": "v"}, Items: []recall.Item{item("a"), item("b")}})
	must(err)
	d := item("d").Entry()
	d.Usage = &recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
	mustAppend(t, s, src, item("c").Entry(), d)
	_, err = s.Pop(ctx, src)
	must(err)
	_, err = recall.NewSession(s, src).RemoveItem(ctx, recall.ItemRef{Seq: 4}) // a
	must(err)
	_, err = recall.NewSession(s, src).SetTitle(ctx, "u", recall.TitleUser)
	must(err)
	must(recall.NewSession(s, src).Clear(ctx))
	last := mustAppend(t, s, src, recall.ItemEntries(item("e"), item("f"), item("g"))...)
	_, err = s.Append(ctx, src, recall.IfLastSeq(last), recall.NewEntry(recall.KindCompaction,
		recall.Compaction{Through: last, Items: []recall.Item{item("summary"), item("g")}}))
	must(err)
	mustAppend(t, s, src, recall.ItemEntries(item("h"), item("i"))...)
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
	mustAppend(t, s, sub, item("sub").Entry())
	must(forkBothWays(t, s, sub, 0, recall.Key{Project: "p", Session: "src", Subpath: "subagents/native"},
		recall.Key{Project: "p", Session: "src", Subpath: "subagents/fallback"}))

	// Refusals, in the fallback's order.
	taken := recall.Key{Project: "p", Session: "native0"}
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
		before := dumpPrefix(t, s.k.prefix)
		if err := forkBothWays(t, s, c.src, c.at, c.native, c.fallbck); !errors.Is(err, c.want) {
			t.Errorf("fork %s = %v, want %v", c.name, err, c.want)
		}
		if after := dumpPrefix(t, s.k.prefix); after != before {
			t.Errorf("fork %s wrote:\nbefore\n%s\nafter\n%s", c.name, before, after)
		}
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
}

// TestNativeForkOfDamagedElements: elements another program wrote are
// treated by the native fork as by the fallback: one that is no entry, an
// item recall.Entry.Item refuses, or one that only looks like a JSON object by
// its ends ("{x}", no readable entry either), is out of the view and of
// both forks; one cleared away does not matter. The forks are healthy.
func TestNativeForkOfDamagedElements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "damaged"}
	mustAppend(t, s, k, item("a").Entry())
	plantElement(t, s, k, `[1,2]`, "item")
	plantElement(t, s, k, "garbage without a header", "")
	mustAppend(t, s, k, item("b").Entry())
	if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n1"}, recall.Key{Project: "p", Session: "f1"}); err != nil {
		t.Fatalf("fork of a session with damaged elements: %v", err)
	}
	if m, _, err := s.Load(ctx, recall.Key{Project: "p", Session: "n1"}); err != nil || m.ItemCount != 2 || m.Corrupt != 0 {
		t.Errorf("fork = ItemCount %d, Corrupt %d, %v; want 2 healthy items", m.ItemCount, m.Corrupt, err)
	}

	plantElement(t, s, k, `{x}`, "item")
	if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n2"}, recall.Key{Project: "p", Session: "f2"}); err != nil {
		t.Fatalf("fork of a session ending with {x}: %v", err)
	}
	if m, _, err := s.Load(ctx, recall.Key{Project: "p", Session: "n2"}); err != nil || m.ItemCount != 2 || m.Corrupt != 0 {
		t.Errorf("fork of a session ending with {x} = ItemCount %d, Corrupt %d, %v; want 2 healthy items", m.ItemCount, m.Corrupt, err)
	}
	if err := forkBothWays(t, s, k, 4, recall.Key{Project: "p", Session: "n3"}, recall.Key{Project: "p", Session: "f3"}); err != nil {
		t.Errorf("fork at the seq before {x}: %v", err)
	}
	if err := recall.NewSession(s, k).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, k, item("c").Entry())
	if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n4"}, recall.Key{Project: "p", Session: "f4"}); err != nil {
		t.Errorf("fork after {x} was cleared away: %v", err)
	}
	for _, nk := range []string{"n1", "n2", "n3", "n4"} {
		if err := storekit.VerifySession(ctx, s, recall.Key{Project: "p", Session: nk}); err != nil {
			t.Errorf("VerifySession of the fork %s: %v", nk, err)
		}
	}
}
