package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// The hot paths of an agent, each against a raw baseline in the same run
// (see bench_test.go): appending a turn of three items, reading the tail
// of 50 items a model call sends, and popping an item.

// BenchmarkAppendTurn appends a turn of three items (a user message, a
// function call's pair) to one session, serially: Session.AddItems
// against a raw single-row INSERT.
func BenchmarkAppendTurn(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *Store
		raw  func(testing.TB) func(g, seq int) error
	}{{"sqlite", newSQLite, rawSQLite}, {"postgres", newPostgres, rawPostgres}} {
		b.Run(d.name, func(b *testing.B) {
			s, raw := d.open(b), d.raw(b)
			ctx := context.Background()
			sess := recall.NewSession(s, recall.Key{Project: "bench", Session: "turns"})
			turn := []recall.Item{benchItem, benchItem, benchItem}
			seq := 0
			interleave(b, func() error { return sess.AddItems(ctx, turn...) }, func() error {
				seq++
				return raw(0, seq)
			})
		})
	}
}

// BenchmarkGetItems50 is BenchmarkGetItems20 for the newest 50 items.
func BenchmarkGetItems50(b *testing.B) {
	benchGetItems(b, 50)
}

// benchGetItems reads the newest n items of a session of 2000:
// Session.GetItems against a SELECT of the newest n payloads by the
// session's sid and seqs, both known in advance.
func benchGetItems(b *testing.B, n int) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		k := recall.Key{Project: "bench", Session: "items"}
		for range 100 {
			es := make([]recall.Entry, 20)
			for i := range es {
				es[i] = benchItem.Entry()
			}
			if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
				b.Fatal(err)
			}
		}
		analyze(b, s)
		sid, err := sessionID(ctx, s.db.q(), k)
		if err != nil {
			b.Fatal(err)
		}
		raw := rawQuery(b, s, `SELECT payload FROM entries WHERE session = $1 AND seq > $2 ORDER BY seq DESC`,
			func(r rows) error {
				var payload []byte
				return r.Scan(&payload)
			})
		sess := recall.NewSession(s, k)
		interleave(b, func() error {
			items, err := sess.GetItems(ctx, n)
			if err == nil && len(items) != n {
				err = fmt.Errorf("%d items", len(items))
			}
			return err
		}, func() error {
			got, err := raw(sid, 2000-n)
			if err == nil && got != n {
				err = fmt.Errorf("%d rows", got)
			}
			return err
		})
	})
}

// BenchmarkPop pops the newest item of a session, against a raw
// single-row INSERT (a pop is a write). Every 8 pops, untimed, the
// session gets a clear and 8 new items, so what a pop reads stays the
// same size.
func BenchmarkPop(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *Store
		raw  func(testing.TB) func(g, seq int) error
	}{{"sqlite", newSQLite, rawSQLite}, {"postgres", newPostgres, rawPostgres}} {
		b.Run(d.name, func(b *testing.B) {
			s, raw := d.open(b), d.raw(b)
			ctx := context.Background()
			k := recall.Key{Project: "bench", Session: "pops"}
			refill := append([]recall.Entry{{Kind: recall.KindClear}}, recall.ItemEntries(benchItem, benchItem, benchItem, benchItem, benchItem, benchItem, benchItem, benchItem)...)
			var st, rt time.Duration
			seq := 0
			for i := 0; b.Loop(); i++ {
				if i%8 == 0 {
					if _, err := s.Append(ctx, k, recall.Guard{}, refill...); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				it, err := s.Pop(ctx, k)
				if err != nil || it == nil {
					b.Fatalf("pop = %s, %v", it, err)
				}
				t1 := time.Now()
				seq++
				if err := raw(0, seq); err != nil {
					b.Fatal(err)
				}
				rt += time.Since(t1)
				st += t1.Sub(t0)
			}
			b.ReportMetric(float64(st.Nanoseconds())/float64(b.N), "store-ns/op")
			b.ReportMetric(float64(rt.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(rt.Seconds()/st.Seconds(), "x-raw")
		})
	}
}
