package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// behindOf returns session key's from_seq in search_behind, or 0 when it
// is not there, and how many search rows it has.
func behindOf(t *testing.T, s *Store, key recall.Key) (from, rows int64) {
	t.Helper()
	ctx := context.Background()
	err := s.db.q().queryRow(ctx, `SELECT coalesce((SELECT b.from_seq FROM search_behind b JOIN sessions e ON e.sid = b.sid
		WHERE e.project = $1 AND e.id = $2), 0), (SELECT count(*) FROM search s JOIN sessions e ON e.sid = s.sid
		WHERE e.project = $1 AND e.id = $2)`, key.Project, key.Session).Scan(&from, &rows)
	if err != nil {
		t.Fatal(err)
	}
	return from, rows
}

// writerChanges returns the rows the writer connection has inserted,
// updated or deleted since it opened (SQLite's total_changes).
func writerChanges(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.db.(*liteBackend).w.QueryRowContext(context.Background(), `SELECT total_changes()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSearchRowsTrail checks how SQLite's search rows trail the log (see
// trailSearch): an append to a session already behind changes no more rows
// than one with search turned off (the session row and the entry); the
// append that leaves a session searchLag entries behind leaves their rows
// to the background goroutine, which writes them, a pop among them
// included; a search writes the rest first; a
// removed session leaves no mark; an import and a fork write their rows at
// once.
func TestSearchRowsTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	a := recall.Key{Project: "p", Session: "a"}
	appendOne := func(k recall.Key, text string) {
		t.Helper()
		if _, err := s.Append(ctx, k, recall.Guard{}, msg(text).Entry()); err != nil {
			t.Fatal(err)
		}
	}

	appendOne(a, "first words")
	if from, rows := behindOf(t, s, a); from != 1 || rows != 0 {
		t.Fatalf("after one append: behind from %d, %d rows; want from 1, 0 rows", from, rows)
	}
	before := writerChanges(t, s)
	appendOne(a, "second words")
	indexed := writerChanges(t, s) - before
	s.noSearch = true
	before = writerChanges(t, s)
	appendOne(a, "third words")
	plain := writerChanges(t, s) - before
	s.noSearch = false
	if indexed != plain || plain != 2 {
		t.Errorf("an append to a session behind changed %d rows, one without search %d; want 2 each", indexed, plain)
	}
	if _, err := s.Pop(ctx, a); err != nil {
		t.Fatal(err)
	}
	if from, rows := behindOf(t, s, a); from != 1 || rows != 0 {
		t.Fatalf("after a pop: behind from %d, %d rows; want from 1, 0 rows", from, rows)
	}

	// The search writes the rows first: the popped item is not live.
	p, err := s.Search(ctx, recall.SearchOptions{Query: "words"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hits) != 2 {
		t.Errorf("search found %d hits, want 2 (the third item was popped)", len(p.Hits))
	}
	if from, rows := behindOf(t, s, a); from != 0 || rows != 3 {
		t.Errorf("after a search: behind from %d, %d rows; want not behind, 3 rows", from, rows)
	}
	if err := storetest.CompareSearch(ctx, s, recall.SearchOptions{Query: "words", WholeLog: true}); err != nil {
		t.Error(err)
	}

	// searchLag-2 appends and a pop leave it searchLag-1 entries behind;
	// the next append leaves every row to the background goroutine, which
	// writes them, the pop's change among them.
	lb := s.db.(*liteBackend)
	lb.bg.hold.Lock()
	for i := range searchLag - 2 {
		appendOne(a, fmt.Sprintf("more words %d", i))
	}
	if _, err := s.Pop(ctx, a); err != nil {
		t.Fatal(err)
	}
	if from, rows := behindOf(t, s, a); from != 5 || rows != 3 {
		t.Fatalf("after %d appends and a pop: behind from %d, %d rows; want from 5, 3 rows", searchLag-2, from, rows)
	}
	before = writerChanges(t, s)
	appendOne(a, "last words")
	if n := writerChanges(t, s) - before; n != 2 {
		t.Errorf("the append that left the session %d behind changed %d rows, want 2 (the session row and the entry)", searchLag, n)
	}
	lb.bg.hold.Unlock()
	testkit.Eventually(t, 10*time.Second, "the background catch-up", func() bool {
		from, rows := behindOf(t, s, a)
		return from == 0 && rows == 3+searchLag-1
	})
	var live int64
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM search WHERE live`).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if want := int64(2 + searchLag - 3 + 1); live != want {
		t.Errorf("%d live rows, want %d", live, want)
	}
	for _, whole := range []bool{false, true} {
		if err := storetest.CompareSearch(ctx, s, recall.SearchOptions{Query: "words", WholeLog: whole, Limit: 7}); err != nil {
			t.Error(err)
		}
	}

	// A removed session takes its mark with it.
	b := recall.Key{Project: "p", Session: "b"}
	appendOne(b, "gone soon")
	if from, _ := behindOf(t, s, b); from != 1 {
		t.Fatalf("b behind from %d, want 1", from)
	}
	if err := s.Remove(ctx, b); err != nil {
		t.Fatal(err)
	}
	var marks int64
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM search_behind`).Scan(&marks); err != nil || marks != 0 {
		t.Errorf("%d marks left after the remove (%v)", marks, err)
	}

	// A search writes the rows of more sessions than one transaction
	// takes (behindChunk).
	for i := range behindChunk + 44 {
		appendOne(recall.Key{Project: "many", Session: fmt.Sprintf("s%03d", i)}, fmt.Sprintf("many words %d", i))
	}
	if err := storetest.CompareSearch(ctx, s, recall.SearchOptions{Query: "many", Limit: 100}); err != nil {
		t.Error(err)
	}
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM search_behind`).Scan(&marks); err != nil || marks != 0 {
		t.Errorf("%d marks left after a search (%v)", marks, err)
	}

	// An import writes its rows at once, and those of the entries its
	// session was behind by; so does a fork.
	c := recall.Key{Project: "p", Session: "c"}
	appendOne(c, "appended before the import")
	es := make([]recall.Entry, 3)
	for i := range es {
		es[i] = msg(fmt.Sprintf("imported %d", i)).Entry()
		es[i].Seq, es[i].Time = int64(i+2), storekit.Now()
	}
	if _, err := s.Import(ctx, c, es...); err != nil {
		t.Fatal(err)
	}
	if from, rows := behindOf(t, s, c); from != 0 || rows != 4 {
		t.Errorf("after an import of 3 into a session 1 behind: behind from %d, %d rows; want not behind, 4 rows", from, rows)
	}
	f := recall.Key{Project: "p", Session: "f"}
	if _, err := recall.NewSession(s, c).Fork(ctx, 0, f); err != nil {
		t.Fatal(err)
	}
	if from, rows := behindOf(t, s, f); from != 0 || rows != 4 {
		t.Errorf("after a fork of 4 items: behind from %d, %d rows; want not behind, 4 rows", from, rows)
	}
}

// TestSearchTrailModel is a model test of the rows trailing the log: rapid
// draws appends, pops, item removals, clears and compactions on two
// sessions, with a lag of 1 to 6 entries and searches now and then, so
// that rows are written by appends and by searches from any state of a
// log; every search, and a last round over every term, must find what a
// scan of the logs finds.
func TestSearchTrailModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	words := []string{"alpha", "beta", "gamma", "北京市", "张三"}
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		s.db.(*liteBackend).searchLag = rapid.IntRange(1, 6).Draw(rt, "lag")
		keys := []recall.Key{{Project: fmt.Sprintf("r%d", run), Session: "x"}, {Project: fmt.Sprintf("r%d", run), Session: "y"}}
		search := func(query string, whole bool) {
			opts := recall.SearchOptions{Query: query, Project: keys[0].Project, WholeLog: whole, Limit: 3}
			if err := storetest.CompareSearch(ctx, s, opts); err != nil {
				rt.Fatal(err)
			}
		}
		text := func() string {
			return rapid.SampledFrom(words).Draw(rt, "w1") + " " + rapid.SampledFrom(words).Draw(rt, "w2")
		}
		for range rapid.IntRange(1, 40).Draw(rt, "ops") {
			key := rapid.SampledFrom(keys).Draw(rt, "key")
			switch rapid.SampledFrom([]string{"append", "append", "append", "pop", "removeItem", "clear", "compact", "search"}).Draw(rt, "op") {
			case "append":
				var es []recall.Entry
				for range rapid.IntRange(1, 3).Draw(rt, "n") {
					es = append(es, msg(text()).Entry())
				}
				if _, err := s.Append(ctx, key, recall.Guard{}, es...); err != nil {
					rt.Fatal(err)
				}
			case "pop":
				if _, err := s.Pop(ctx, key); err != nil {
					rt.Fatal(err)
				}
			case "removeItem":
				live, _, err := s.Items(ctx, key, 0)
				if err != nil && err != recall.ErrNotFound {
					rt.Fatal(err)
				}
				if len(live) == 0 {
					continue
				}
				l := rapid.SampledFrom(live).Draw(rt, "ref")
				if _, err := recall.NewSession(s, key).RemoveItem(ctx, l.Ref); err != nil {
					rt.Fatal(err)
				}
			case "clear":
				if err := recall.NewSession(s, key).Clear(ctx); err != nil {
					rt.Fatal(err)
				}
			case "compact":
				live, last, err := s.Items(ctx, key, 0)
				if err != nil || last == 0 {
					continue
				}
				items := []recall.Item{msg("summary " + text())}
				if len(live) > 0 {
					items = append(items, live[len(live)-1].Item)
				}
				e := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last, Replaced: len(live), Items: items, Strategy: "test"})
				if _, err := s.Append(ctx, key, recall.IfLastSeq(last), e); err != nil {
					rt.Fatal(err)
				}
			case "search":
				search(rapid.SampledFrom(words).Draw(rt, "q"), rapid.Bool().Draw(rt, "whole"))
			}
		}
		for _, w := range words {
			search(w, false)
			search(w, true)
		}
	})
}

// TestSearchRowsHardLag checks the bound on how far the rows trail when
// the background goroutine does not keep up (see trailSearch): appends
// leave the rows to it up to hardLagFactor*searchLag entries behind, and
// the append that reaches that writes them itself.
func TestSearchRowsHardLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	lb := s.db.(*liteBackend)
	lb.bg.hold.Lock()
	defer lb.bg.hold.Unlock()
	k := recall.Key{Project: "p", Session: "hard"}
	bound := hardLagFactor * searchLag
	for i := range bound - 1 {
		if _, err := s.Append(ctx, k, recall.Guard{}, msg(fmt.Sprintf("words %d", i)).Entry()); err != nil {
			t.Fatal(err)
		}
	}
	if from, rows := behindOf(t, s, k); from != 1 || rows != 0 {
		t.Fatalf("after %d appends held back: behind from %d, %d rows; want from 1, 0 rows", bound-1, from, rows)
	}
	if _, err := s.Append(ctx, k, recall.Guard{}, msg("the last words").Entry()); err != nil {
		t.Fatal(err)
	}
	if from, rows := behindOf(t, s, k); from != 0 || rows != int64(bound) {
		t.Fatalf("after %d appends: behind from %d, %d rows; want not behind, %d rows", bound, from, rows, bound)
	}
	if err := storetest.CompareSearch(ctx, s, recall.SearchOptions{Query: "words", WholeLog: true}); err != nil {
		t.Error(err)
	}
}
