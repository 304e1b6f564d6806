package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// busy appends and pops on key until stop is closed or it has written
// limit times, pausing pause between two writes.
func busy(t *testing.T, s *Store, key recall.Key, pause time.Duration, limit int, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx := context.Background()
		for n := range limit {
			select {
			case <-stop:
				return
			case <-time.After(pause):
			}
			var err error
			if n%5 == 4 {
				_, err = s.Pop(ctx, key)
			} else {
				_, err = s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(item(fmt.Sprint("b", n)), item(fmt.Sprint("c", n)))...)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	return &wg
}

// TestItemsSnapshot reads Items beside a writer, views of many chunks
// included: each view is the one recall.Replay derives from the log up to
// the LastSeq Items returned with it.
func TestItemsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "live"}
	first := make([]recall.Item, 700) // several chunks of a whole-view read
	for i := range first {
		first[i] = item(fmt.Sprint("a", i))
	}
	mustAppend(t, s, k, recall.ItemEntries(first...)...)
	stop := make(chan struct{})
	wg := busy(t, s, k, 0, 500, stop)
	var moved atomic.Int64
	for round := range 60 {
		limit := []int{0, 1, 5, 300}[round%4]
		live, last, err := s.Items(ctx, k, limit)
		if err != nil {
			t.Fatal(err)
		}
		_, entries, err := s.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if entries[len(entries)-1].Seq != last {
			moved.Add(1)
		}
		cut := slices.IndexFunc(entries, func(e recall.Entry) bool { return e.Seq > last })
		if cut >= 0 {
			entries = entries[:cut]
		}
		_, want := recall.Replay(k, entries)
		if limit > 0 && len(want) > limit {
			want = want[len(want)-limit:]
		}
		if !slices.EqualFunc(live, want, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
			t.Fatalf("Items(%d) at seq %d: %d items, the log up to that seq has %d (or they differ)", limit, last, len(live), len(want))
		}
	}
	close(stop)
	wg.Wait()
	if moved.Load() == 0 {
		t.Log("the writer never got between two reads; the check still held")
	}
	verify(t, s)
}

// TestLoadSnapshot loads a session beside a writer: Load's metadata always
// equals what Replay derives from the entries it returned with it.
// (storekit.VerifySession beside a writer is storetest's
// Views/VerifyBesideWriter.)
func TestLoadSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "live"}
	mustAppend(t, s, k, item("start").Entry())
	stop := make(chan struct{})
	wg := busy(t, s, k, 0, 500, stop)
	for range 100 {
		m, entries, err := s.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := recall.Replay(k, entries)
		if d := storetest.MetaDiff(m, want, true); d != "" {
			t.Fatalf("Load's metadata is not its log's: %s", d)
		}
	}
	close(stop)
	wg.Wait()
	verify(t, s)
}
