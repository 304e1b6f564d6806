package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testViewsSequential checks that Items returns the LastSeq its view was
// read at: Stat's, after every kind of write, for every limit.
func testViewsSequential(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	check := func(what string) {
		t.Helper()
		m := e.mustStat(key)
		for _, limit := range []int{0, 1, 2} {
			live, last, err := e.s.Items(e.ctx, key, limit)
			if err != nil {
				t.Errorf("after %s: Items(%d): %v", what, limit, err)
				continue
			}
			if last != m.LastSeq {
				t.Errorf("after %s: Items(%d) returned LastSeq %d, Stat %d", what, limit, last, m.LastSeq)
			}
			if limit == 0 && len(live) != m.ItemCount {
				t.Errorf("after %s: Items(0) returned %d items, Stat counts %d", what, len(live), m.ItemCount)
			}
		}
		_, log := e.mustLoad(key)
		if n := len(log); n == 0 || log[n-1].Seq != m.LastSeq {
			t.Errorf("after %s: Load's last entry is not at Stat's LastSeq %d", what, m.LastSeq)
		}
	}
	writes := []struct {
		what string
		fn   func() error
	}{
		{"Create", func() error { _, err := recall.NewSession(e.s, key).Create(e.ctx, recall.CreateOptions{}); return err }},
		{"an append", func() error {
			_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.ItemEntries(msgs("a", 4)...)...)
			return err
		}},
		{"a title", func() error { _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "t", recall.TitleUser); return err }},
		{"a pop", func() error { _, err := e.s.Pop(e.ctx, key); return err }},
		{"a pin", e.changeMeta(key, recall.MetaChange{Pinned: new(true)})},
		{"metadata", e.changeMeta(key, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})},
		{"a removed item", func() error {
			_, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, recall.ItemRef{Seq: 3})
			return err
		}},
		{"a compaction", func() error {
			m, err := e.s.Stat(e.ctx, key)
			if err != nil {
				return err
			}
			_, err = e.s.Append(e.ctx, key, recall.IfLastSeq(m.LastSeq), compaction(m.LastSeq, 2, msg("summary")))
			return err
		}},
		{"an unknown kind", func() error {
			_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.Entry{Kind: "x-future"})
			return err
		}},
		{"a clear", func() error { return recall.NewSession(e.s, key).Clear(e.ctx) }},
		{"an empty append", func() error { _, err := e.s.Append(e.ctx, key, recall.IfExists()); return err }},
	}
	for _, w := range writes {
		if err := w.fn(); err != nil {
			t.Fatalf("%s: %v", w.what, err)
		}
		check(w.what)
	}
}

// viewOp is one write of the concurrent view tests, numbered: an item
// batch of 1 to 3 items, or a title (which moves LastSeq and not the
// view).
func viewOp(i int) (entries []recall.Entry, items []recall.Item) {
	if i%4 == 3 {
		return []recall.Entry{recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: fmt.Sprintf("t%d", i), Source: recall.TitleUser})}, nil
	}
	for j := range 1 + i%3 {
		it, _ := json.Marshal(map[string]int{"op": i, "i": j})
		items = append(items, it)
	}
	return recall.ItemEntries(items...), items
}

// viewAfter is the state after each viewOp: the LastSeq and the view.
type viewAfter struct {
	last  int64
	items []recall.Item
}

// viewStates returns the state after each of n viewOps, the first at 0.
func viewStates(n int) map[int64]viewAfter {
	out := map[int64]viewAfter{0: {}}
	var last int64
	var items []recall.Item
	for i := range n {
		entries, its := viewOp(i)
		last += int64(len(entries))
		items = append(items[:len(items):len(items)], its...)
		out[last] = viewAfter{last: last, items: items}
	}
	return out
}

// viewOps is how many writes the appender of the concurrent view tests
// makes.
const viewOps = 150

// testViewsConcurrent runs one appender, writing numbered batches, beside
// readers of Items(0), Items(2) and Load: every read is one snapshot. The
// LastSeq Items returns is one that a whole batch ended at, and the view
// holds exactly the items of the batches up to it; Load's metadata is what
// its entries replay to.
func testViewsConcurrent(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	states := viewStates(viewOps)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	// Each write waits for a read since the one before, so reads and
	// writes interleave on a fast store as on a slow one.
	read := make(chan struct{}, 1)
	wg.Go(func() {
		defer cancel()
		for i := range viewOps {
			select {
			case <-read:
			case <-ctx.Done():
				return
			}
			entries, _ := viewOp(i)
			if _, err := e.s.Append(e.ctx, key, recall.Guard{}, entries...); err != nil {
				errc <- fmt.Errorf("appender: op %d: %w", i, err)
				return
			}
		}
	})
	reads := 0
	for r := range 2 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				if err := checkViewSnapshot(e.ctx, e.s, key, states, r == 1 && n%2 == 1); err != nil {
					errc <- fmt.Errorf("reader %d, read %d: %w", r, n, err)
					cancel()
					return
				}
				select {
				case read <- struct{}{}:
				default:
				}
				if r == 0 {
					reads++
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if err := checkViewSnapshot(e.ctx, e.s, key, states, false); err != nil {
		t.Errorf("after the appender: %v", err)
	}
	var final viewAfter
	for _, st := range states {
		if st.last > final.last {
			final = st
		}
	}
	if m := e.mustStat(key); m.LastSeq != final.last || m.ItemCount != len(final.items) {
		t.Errorf("final LastSeq %d, ItemCount %d; want %d, %d after %d writes", m.LastSeq, m.ItemCount, final.last, len(final.items), viewOps)
	}
	t.Logf("%d reads beside %d writes", reads, viewOps)
}

// checkViewSnapshot reads key once with Items (windowed when window) and
// once with Load, and checks each against the states of viewOps.
func checkViewSnapshot(ctx context.Context, s recall.Store, key recall.Key, states map[int64]viewAfter, window bool) error {
	limit := 0
	if window {
		limit = 2
	}
	live, last, err := s.Items(ctx, key, limit)
	if err != nil {
		return fmt.Errorf("reading Items: %w", err)
	}
	st, ok := states[last]
	if !ok {
		return fmt.Errorf("a read of Items(%d) returned LastSeq %d, which no write ended at", limit, last)
	}
	want := st.items
	if limit > 0 && len(want) > limit {
		want = want[len(want)-limit:]
	}
	if d := itemsDiff(recall.PlainItems(live), want); d != "" {
		return fmt.Errorf("a read of Items(%d) at LastSeq %d: %s", limit, last, d)
	}
	m, log, err := s.Load(ctx, key)
	if errors.Is(err, recall.ErrNotFound) {
		return nil // not created yet
	}
	if err != nil {
		return fmt.Errorf("reading Load: %w", err)
	}
	if n := len(log); n == 0 || log[n-1].Seq != m.LastSeq {
		return fmt.Errorf("a Load returned metadata at LastSeq %d and a log of %d entries ending at %s", m.LastSeq, n, kinds(log[max(0, n-1):]))
	}
	replayed, _ := recall.Replay(key, log)
	if d := MetaDiff(m, replayed, true); d != "" {
		return fmt.Errorf("a Load at LastSeq %d returned metadata that is not what its entries replay to: %s", m.LastSeq, d)
	}
	if _, ok := states[m.LastSeq]; !ok {
		return fmt.Errorf("a Load returned LastSeq %d, which no write ended at", m.LastSeq)
	}
	return nil
}

// verifyRuns is how many times testVerifyBesideWriter runs
// storekit.VerifySession beside the writer.
const verifyRuns = 200

// testVerifyBesideWriter runs storekit.VerifySession verifyRuns times on a
// session while another goroutine writes to it (appends, pops, titles): a
// healthy live session is never reported. Before every other run the
// verifier hands the writer one write and does not wait for it, so half
// the runs start while a write is in flight, on a fast store as on a slow
// one, and the log stays under two hundred entries long.
func testVerifyBesideWriter(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("start"))
	stop := make(chan struct{})
	write := make(chan struct{}) // unbuffered: a send starts a write
	writerDone := make(chan struct{})
	var wg sync.WaitGroup
	var appendErr error
	appends := 0
	wg.Go(func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-write:
			}
			var err error
			switch i % 5 {
			case 3:
				_, err = e.s.Pop(e.ctx, key)
			case 4:
				_, err = recall.NewSession(e.s, key).SetTitle(e.ctx, fmt.Sprintf("t%d", i), recall.TitleUser)
			default:
				_, err = e.s.Append(e.ctx, key, recall.Guard{}, recall.ItemEntries(msg("a%d", i), msg("b%d", i))...)
			}
			if err != nil {
				appendErr = err
				return
			}
			appends++
		}
	})
	var failures []error
	for i := range verifyRuns {
		if i%2 == 0 {
			select {
			case write <- struct{}{}:
			case <-writerDone:
			}
		}
		if err := storekit.VerifySession(e.ctx, e.s, key); err != nil {
			failures = append(failures, err)
		}
	}
	close(stop)
	wg.Wait()
	if appendErr != nil {
		t.Errorf("the writer: %v", appendErr)
	}
	if len(failures) > 0 {
		t.Errorf("storekit.VerifySession reported a healthy session %d times in %d runs beside a writer; first: %v", len(failures), verifyRuns, failures[0])
	}
	t.Logf("%d verifications beside %d writes", verifyRuns, appends)
	if err := storekit.Verify(e.ctx, e.s); err != nil {
		t.Errorf("storekit.Verify after the writer: %v", err)
	}
}
