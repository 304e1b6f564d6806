package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
)

// The sizes of the concurrency tests: enough goroutines to interleave on
// any scheduler, few enough appends that a store that syncs every batch to
// disk finishes in seconds.
const (
	writers          = 8
	batchesPerWriter = 12
)

// tagged is an item that says which writer and batch wrote it.
type tagged struct {
	W int `json:"w"` // writer
	B int `json:"b"` // batch
	I int `json:"i"` // index in the batch
	N int `json:"n"` // batch size
}

func tagItem(w, b, i, n int) recall.Item {
	data, _ := json.Marshal(tagged{W: w, B: b, I: i, N: n})
	return data
}

// checkTagged checks a view of tagged items: every batch whole and
// contiguous, every writer's batches in the order it wrote them. With
// complete it also demands every batch of every writer.
func checkTagged(items []recall.Item, complete bool) error {
	var errs []error
	next := map[int]int{} // writer -> next batch expected
	for i := 0; i < len(items); {
		var first tagged
		if err := json.Unmarshal(items[i], &first); err != nil {
			return fmt.Errorf("item %d: %s: %v", i, clip(items[i]), err)
		}
		if first.I != 0 || i+first.N > len(items) {
			return fmt.Errorf("item %d: %s does not start a whole batch", i, clip(items[i]))
		}
		for j := 1; j < first.N; j++ {
			var x tagged
			if json.Unmarshal(items[i+j], &x) != nil || x != (tagged{W: first.W, B: first.B, I: j, N: first.N}) {
				return fmt.Errorf("batch %d of writer %d is interleaved at item %d: %s", first.B, first.W, i+j, clip(items[i+j]))
			}
		}
		if first.B < next[first.W] || complete && first.B != next[first.W] {
			errs = append(errs, fmt.Errorf("writer %d: batch %d follows batch %d", first.W, first.B, next[first.W]-1))
		}
		next[first.W] = first.B + 1
		i += first.N
	}
	if complete {
		for w := range writers {
			if next[w] != batchesPerWriter {
				errs = append(errs, fmt.Errorf("writer %d: %d batches, want %d", w, next[w], batchesPerWriter))
			}
		}
	}
	return errors.Join(errs...)
}

// testConcurrentOneSession runs writers appending batches to one session
// while readers read it: nothing is lost, no batch is split or interleaved,
// seqs stay dense, and readers only ever see whole batches.
func testConcurrentOneSession(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "shared"}
	var wg sync.WaitGroup
	errc := make(chan error, writers*batchesPerWriter+64)
	done := make(chan struct{})
	total := 0
	for w := range writers {
		for b := range batchesPerWriter {
			total += 1 + (w+b)%3
		}
		wg.Go(func() {
			for b := range batchesPerWriter {
				n := 1 + (w+b)%3
				batch := make([]recall.Item, n)
				for i := range batch {
					batch[i] = tagItem(w, b, i, n)
				}
				if err := recall.NewSession(e.s, key).AddItems(e.ctx, batch...); err != nil {
					errc <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				live, last, err := e.s.Items(e.ctx, key, 0)
				if err != nil {
					errc <- fmt.Errorf("reader %d: Items: %w", r, err)
					return
				}
				// Every entry is an item, so the view read at LastSeq
				// holds exactly LastSeq items, the newest at LastSeq.
				if int64(len(live)) != last || len(live) > 0 && live[len(live)-1].Ref != (recall.ItemRef{Seq: last}) {
					errc <- fmt.Errorf("reader %d: Items returned %d items at LastSeq %d: not one snapshot", r, len(live), last)
					return
				}
				if err := checkTagged(recall.PlainItems(live), false); err != nil {
					errc <- fmt.Errorf("reader %d saw a partial state: %w", r, err)
					return
				}
				if _, err := e.s.List(e.ctx, "p", recall.ListOptions{}); err != nil {
					errc <- fmt.Errorf("reader %d: List: %w", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	m, log := e.mustLoad(key)
	if m.ItemCount != total || m.LastSeq != int64(total) || len(log) != total {
		t.Errorf("after %d concurrent items: ItemCount %d, LastSeq %d, %d entries", total, m.ItemCount, m.LastSeq, len(log))
	}
	for i, ent := range log {
		if ent.Seq != int64(i+1) {
			t.Errorf("entry %d has seq %d: seqs are not dense", i, ent.Seq)
			break
		}
	}
	live := e.mustItems(key, 0)
	if err := checkTagged(recall.PlainItems(live), true); err != nil {
		t.Errorf("final view: %v", err)
	}
}

// testConcurrentManySessions runs writers on sessions of their own, plus a
// shared project listing, at once.
func testConcurrentManySessions(e *env) {
	t := e.t
	var wg sync.WaitGroup
	errc := make(chan error, writers*4)
	for w := range writers {
		wg.Go(func() {
			key := recall.Key{Project: fmt.Sprintf("p%d", w%3), Session: fmt.Sprintf("s%d", w)}
			for b := range batchesPerWriter {
				if _, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.ItemEntries(tagItem(w, b, 0, 2), tagItem(w, b, 1, 2))...); err != nil {
					errc <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				if b == batchesPerWriter/2 {
					if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, fmt.Sprintf("title %d", w), recall.TitleAuto); err != nil {
						errc <- fmt.Errorf("writer %d: SetTitle: %w", w, err)
						return
					}
					if _, err := e.s.Pop(e.ctx, key); err != nil {
						errc <- fmt.Errorf("writer %d: Pop: %w", w, err)
						return
					}
					if _, err := e.s.Append(e.ctx, key, recall.Guard{}, tagItem(w, b, 1, 2).Entry()); err != nil {
						errc <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
				if _, err := e.s.List(e.ctx, "", recall.ListOptions{Limit: 3}); err != nil {
					errc <- fmt.Errorf("writer %d: List: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	metas := listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: 2})
	if len(metas) != writers {
		t.Errorf("List after concurrent writers: %d sessions, want %d", len(metas), writers)
	}
	for w := range writers {
		key := recall.Key{Project: fmt.Sprintf("p%d", w%3), Session: fmt.Sprintf("s%d", w)}
		m := e.mustStat(key)
		// each batch is 2 entries; the middle one adds a title, a pop and a re-append
		if want := int64(2*batchesPerWriter + 3); m.LastSeq != want || m.ItemCount != 2*batchesPerWriter || m.Title != fmt.Sprintf("title %d", w) {
			t.Errorf("%s: LastSeq %d ItemCount %d Title %q; want %d, %d, %q", key, m.LastSeq, m.ItemCount, m.Title, want, 2*batchesPerWriter, fmt.Sprintf("title %d", w))
		}
		live := e.mustItems(key, 0)
		items := recall.PlainItems(live)
		if err := checkTaggedWriter(items, w); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// checkTaggedWriter checks that items are writer w's batches, whole and in
// order.
func checkTaggedWriter(items []recall.Item, w int) error {
	if len(items) != 2*batchesPerWriter {
		return fmt.Errorf("%d items, want %d", len(items), 2*batchesPerWriter)
	}
	for i, it := range items {
		if want := tagItem(w, i/2, i%2, 2); !bytes.Equal(it, want) {
			return fmt.Errorf("item %d is %s, want %s", i, clip(it), clip(want))
		}
	}
	return nil
}

// testConcurrentPop pops one session from many goroutines: every item is
// handed out exactly once.
func testConcurrentPop(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	const items = 3 * writers
	all := make([]recall.Item, items)
	for i := range all {
		all[i] = tagItem(0, i, 0, 1)
	}
	e.mustAdd(key, all...)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range 2 {
				it, err := e.s.Pop(e.ctx, key)
				mu.Lock()
				if err != nil || it == nil {
					t.Errorf("concurrent Pop = %s, %v", clip(it), err)
				} else {
					got[string(it)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for it, n := range got {
		if n > 1 {
			t.Errorf("Pop handed out %s %d times", it, n)
		}
	}
	if len(got) != 2*writers {
		t.Errorf("%d distinct items popped, want %d", len(got), 2*writers)
	}
	// The newest 2*writers went; the oldest writers remain, in order.
	for _, it := range all[items-2*writers:] {
		if got[string(it)] != 1 {
			t.Errorf("%s was not popped; pops must take the newest items", it)
		}
	}
	e.wantView(key, all[:items-2*writers])
}
