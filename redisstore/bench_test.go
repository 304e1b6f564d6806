package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// Each benchmark pairs a store operation with the least a hand-written
// client would send for the same job ("raw"), and interleaves the two
// within one loop so that both see the same machine load. It reports the
// time of each per operation and their ratio, raw time / store time: the
// store's speed as a fraction of raw Redis (1 would be as fast). See
// docs/BENCHMARKS.md.

var benchItem = recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"` +
	"A typical user turn of about two hundred bytes, asking the agent to look at a file and explain what it does." + `"}]}`)

func benchElement() string {
	return "1\n" + encodeBody(benchItem.Entry(), storekit.Now().UnixMicro(), nil)
}

// pair runs raw and store alternately and reports both.
func pair(b *testing.B, raw, store func() error) {
	var tr, ts time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := store(); err != nil {
			b.Fatal(err)
		}
		tr += t1.Sub(t0)
		ts += time.Since(t1)
		n++
	}
	report(b, tr, ts, n)
}

func report(b *testing.B, raw, store time.Duration, n int) {
	b.ReportMetric(float64(store.Nanoseconds())/float64(n), "store-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(n), "raw-ns/op")
	b.ReportMetric(float64(raw)/float64(store), "x-raw")
}

// BenchmarkAppend appends one item to a session; raw: one RPUSH.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, Options{})
	rdb, rawKey := adminClient(b), s.k.prefix+"raw"
	k := recall.Key{Project: "bench", Session: "append"}
	e := benchItem.Entry()
	el := benchElement()
	pair(b,
		func() error { return rdb.RPush(ctx, rawKey, el).Err() },
		func() error { _, err := s.Append(ctx, k, recall.Guard{}, e); return err })
}

// BenchmarkGetItems20 reads the newest 20 items of a 1000-item session;
// raw: one LRANGE of the last 20 elements.
func BenchmarkGetItems20(b *testing.B) {
	ctx := context.Background()
	const n = 1000
	s := newStore(b, Options{})
	rdb, rawKey := adminClient(b), s.k.prefix+"raw"
	k := recall.Key{Project: "bench", Session: "items"}
	items := make([]recall.Item, n)
	els := make([]any, n)
	for i := range items {
		items[i], els[i] = benchItem, benchElement()
	}
	mustAppend(b, s, k, recall.ItemEntries(items...)...)
	rdb.RPush(ctx, rawKey, els...)
	sess := recall.NewSession(s, k)
	pair(b,
		func() error {
			got, err := rdb.LRange(ctx, rawKey, -20, -1).Result()
			if err == nil && len(got) != 20 {
				err = fmt.Errorf("raw read %d", len(got))
			}
			return err
		},
		func() error {
			got, err := sess.GetItems(ctx, 20)
			if err == nil && len(got) != 20 {
				err = fmt.Errorf("store read %d", len(got))
			}
			return err
		})
}

// BenchmarkListFirstPage reads the first page (50) of a project of 1000
// sessions; raw: ZRANGE REV of a time-scored sorted set, then a pipeline of
// 50 HGETALL.
func BenchmarkListFirstPage(b *testing.B) {
	ctx := context.Background()
	const sessions, page = 1000, 50
	s := newStore(b, Options{})
	rdb, prefix := adminClient(b), s.k.prefix+"raw:"
	for i := range sessions {
		id := fmt.Sprintf("s%04d", i)
		mustAppend(b, s, recall.Key{Project: "bench", Session: id}, benchItem.Entry())
		rdb.HSet(ctx, prefix+"h:"+id, "title", "", "created", i, "updated", i, "items", 1, "last", 1)
		rdb.ZAdd(ctx, prefix+"z", redis.Z{Score: float64(i), Member: id})
	}
	pair(b,
		func() error {
			ids, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: prefix + "z", Start: 0, Stop: page - 1, Rev: true}).Result()
			if err != nil {
				return err
			}
			_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, id := range ids {
					p.HGetAll(ctx, prefix+"h:"+id)
				}
				return nil
			})
			return err
		},
		func() error {
			p, err := s.List(ctx, "bench", recall.ListOptions{Limit: page})
			if err == nil && len(p.Sessions) != page {
				err = fmt.Errorf("listed %d", len(p.Sessions))
			}
			return err
		})
}

// BenchmarkConcurrentAppend has 16 goroutines append to 16 sessions, one
// each; raw: the same goroutines RPUSH to 16 lists. Rounds of raw and store
// alternate; the times are wall time per append across all goroutines.
func BenchmarkConcurrentAppend(b *testing.B) {
	ctx := context.Background()
	const writers, round = 16, 32 // appends per goroutine per round
	s := newStore(b, Options{})
	rdb := adminClient(b)
	e := benchItem.Entry()
	el := benchElement()
	phase := func(op func(w int) error) time.Duration {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		start := time.Now()
		for w := range writers {
			wg.Go(func() {
				for range round {
					if err := op(w); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var tr, ts time.Duration
	n := 0
	for b.Loop() {
		tr += phase(func(w int) error { return rdb.RPush(ctx, fmt.Sprintf("%sraw:w%d", s.k.prefix, w), el).Err() })
		ts += phase(func(w int) error {
			_, err := s.Append(ctx, recall.Key{Project: "bench", Session: fmt.Sprint("w", w)}, recall.Guard{}, e)
			return err
		})
		n += writers * round
	}
	report(b, tr, ts, n)
}

// forkBenchItem returns item i of BenchmarkFork10k's session: a message
// of 300 to 2,000 bytes, the sizes of the side-by-side benchmark's items.
func forkBenchItem(i int) recall.Item {
	return recall.Message("assistant", fmt.Sprint(i, " ", strings.Repeat("x", 240+i*7919%1700)))
}

// BenchmarkFork10k forks a session of 10,000 items of 300 to 2,000 bytes,
// the side-by-side benchmark's W4: the native fork (storekit.Forker)
// against recall.StoreSession.Fork's fallback (Load, Append with IfNew, Stat) on the
// same store, alternately and each first every other time. It reports
// native-ns/op, fallback-ns/op and x-fallback, the native fork's speed as
// a multiple of the fallback's (fallback time / native time; above 1 is
// faster; see storetest.BenchmarkFork).
func BenchmarkFork10k(b *testing.B) {
	s := newStore(b, Options{})
	src := recall.Key{Project: "bench", Session: "big"}
	for i := 0; i < 10000; i += 1000 {
		batch := make([]recall.Item, 1000)
		for j := range batch {
			batch[j] = forkBenchItem(i + j)
		}
		mustAppend(b, s, src, recall.ItemEntries(batch...)...)
	}
	storetest.BenchmarkFork(b, s, src)
}

// pageSession writes a session of n items for the ReadItems benchmark and
// test, with a few pops and removals spread over it, and returns its key
// and view, oldest first.
func pageSession(tb testing.TB, s *Store, n int) (recall.Key, []recall.LiveItem) {
	tb.Helper()
	ctx := context.Background()
	k := recall.Key{Project: "bench", Session: fmt.Sprint("page", n)}
	for i := 0; i < n; i += 1000 {
		batch := make([]recall.Item, min(1000, n-i))
		for j := range batch {
			batch[j] = benchItem
		}
		mustAppend(tb, s, k, recall.ItemEntries(batch...)...)
	}
	for _, at := range []int{n / 10, n / 2, n * 9 / 10} {
		if _, err := recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: int64(at)}); err != nil {
			tb.Fatal(err)
		}
	}
	for range 3 {
		if _, err := s.Pop(ctx, k); err != nil {
			tb.Fatal(err)
		}
	}
	view, _, err := s.Items(ctx, k, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return k, view
}

// pagePlace is one page ReadItems is measured on: the first, a middle or
// the last page of a view, in one order.
type pagePlace struct {
	name string
	opts recall.ItemPageOptions
	at   int // the index in the view of the page's oldest item
}

// pagePlaces are the first, a middle and the last page of view, limit
// items each, newest first and oldest first.
func pagePlaces(view []recall.LiveItem, limit int) []pagePlace {
	n := len(view)
	return []pagePlace{
		{"newest/first", recall.ItemPageOptions{Limit: limit}, n - limit},
		{"newest/middle", recall.ItemPageOptions{Limit: limit, After: view[n/2].Ref}, n/2 - limit},
		{"newest/last", recall.ItemPageOptions{Limit: limit, After: view[limit].Ref}, 0},
		{"oldest/first", recall.ItemPageOptions{Limit: limit, Oldest: true}, 0},
		{"oldest/middle", recall.ItemPageOptions{Limit: limit, Oldest: true, After: view[n/2].Ref}, n/2 + 1},
		{"oldest/last", recall.ItemPageOptions{Limit: limit, Oldest: true, After: view[n-limit-1].Ref}, n - limit},
	}
}

// BenchmarkReadItems reads a page of 20 items (storekit.ItemPager) of a
// session of 200 items and of one of 20,000, both with a few pops and
// removals, alternately within one loop so that both see the same machine
// load: the first, a middle and the last page, newest first and oldest
// first. It reports the time of each per page and their ratio, x-200: the
// long session's time / the short one's (1 would be the same cost;
// TestReadItemsReadsThePage counts the values read).
func BenchmarkReadItems(b *testing.B) {
	ctx := context.Background()
	const limit = 20
	s := newStore(b, Options{})
	shortKey, shortView := pageSession(b, s, 200)
	longKey, longView := pageSession(b, s, 20000)
	long := pagePlaces(longView, limit)
	for i, p := range pagePlaces(shortView, limit) {
		b.Run(p.name, func(b *testing.B) {
			read := func(k recall.Key, opts recall.ItemPageOptions) error {
				page, err := s.ReadItems(ctx, k, opts)
				if err == nil && len(page.Items) != limit {
					err = fmt.Errorf("read %d items of %s", len(page.Items), k)
				}
				return err
			}
			var ts, tl time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				if err := read(shortKey, p.opts); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := read(longKey, long[i].opts); err != nil {
					b.Fatal(err)
				}
				ts += t1.Sub(t0)
				tl += time.Since(t1)
				n++
			}
			b.ReportMetric(float64(ts.Nanoseconds())/float64(n), "200-ns/op")
			b.ReportMetric(float64(tl.Nanoseconds())/float64(n), "20000-ns/op")
			b.ReportMetric(float64(tl)/float64(ts), "x-200")
		})
	}
}

// BenchmarkListPinned lists the pinned sessions (5) of a project of 200
// sessions and of one of 20,000, alternately within one loop, and, as the
// baseline a caller without ListOptions.Pinned had, the 20,000-session
// project listed whole and filtered. It reports each per listing and the
// ratios x-200 (the large project's pinned listing / the small one's; 1
// would be the same cost) and x-scan (the whole listing / the large
// project's pinned listing).
func BenchmarkListPinned(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, Options{})
	for _, n := range []int{200, 20000} {
		project := fmt.Sprint("p", n)
		for i := range n {
			k := recall.Key{Project: project, Session: fmt.Sprintf("s%05d", i)}
			mustAppend(b, s, k, benchItem.Entry())
			if i%(n/5) == 0 {
				if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	storetest.BenchPinnedListing(b, s, "p200", "p20000")
}
