package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// pgCount runs a query of one integer on s's PostgreSQL database.
func pgCount(t *testing.T, s *Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.db.(*pgBackend).pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestSearchTail: appends leave their search rows out of the GIN indexes
// (the tail), and the store indexes them in batches of its own, off the
// append's path (ginCleaner), then merges the indexes' pending lists;
// without the batches the rows stay in the tail and nothing is pending.
// Searches find every row either way.
func TestSearchTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, batches := range []bool{true, false} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			s := newPostgres(t)
			b := s.db.(*pgBackend)
			b.gin.every = 1 << 40 // none
			if batches {
				b.gin.every = 200 // every other append
			}
			k := recall.Key{Project: "p", Session: "s"}
			for i := range 20 {
				text := fmt.Sprintf("turn %d 北京市的天气 xylophonist%03d played the quick brown fox over the lazy dog, then 张三 came in", i, i)
				if _, err := s.Append(ctx, k, recall.Guard{}, msg(text).Entry()); err != nil {
					t.Fatal(err)
				}
				b.gin.wg.Wait() // the batch this append may have begun
			}
			tail := pgCount(t, s, `SELECT count(*) FROM search WHERE NOT indexed`)
			pending := pgCount(t, s, `SELECT gin_clean_pending_list('search_body'::regclass) + gin_clean_pending_list('search_grams'::regclass)`)
			t.Logf("%d batches by the store; %d rows in the tail, %d pages pending", b.gin.merges.Load(), tail, pending)
			switch {
			case batches && (b.gin.merges.Load() != 10 || tail != 0 || pending != 0):
				t.Errorf("%d batches, %d rows in the tail, %d pages pending; want 10, 0 and 0", b.gin.merges.Load(), tail, pending)
			case !batches && (b.gin.merges.Load() != 0 || tail != 20 || pending != 0):
				t.Errorf("%d batches, %d rows in the tail, %d pages pending; want 0, 20 and 0", b.gin.merges.Load(), tail, pending)
			}
			for _, q := range []string{"xylophonist007", "北京市", "张三", `"quick brown fox"`} {
				page, err := s.Search(ctx, recall.SearchOptions{Query: q, Limit: 50})
				if err != nil {
					t.Fatal(err)
				}
				want := 20
				if q == "xylophonist007" {
					want = 1
				}
				if len(page.Hits) != want {
					t.Errorf("%s: %d hits, want %d", q, len(page.Hits), want)
				}
			}
		})
	}
}

// TestSearchIndexesLongTail: a write of pgIndexInline rows or more
// indexes them at once, fewer go to the tail; a search that finds
// pgTailBatch rows or more in the tail (stores that exited before their
// batch) indexes them before it reads; a shorter tail it reads as it is.
func TestSearchIndexesLongTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPostgres(t)
	s.window = 8
	s.db.(*pgBackend).gin.every = 1 << 40 // no batches of the store's own
	k := recall.Key{Project: "p", Session: "s"}
	tail := func() int64 { return pgCount(t, s, `SELECT count(*) FROM search WHERE NOT indexed`) }
	row := 0
	add := func(n int) {
		es := make([]recall.Entry, n)
		for i := range es {
			es[i] = msg(fmt.Sprintf("row %d of the long tail, xylophonist%d", row, row%10)).Entry()
			row++
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
			t.Fatal(err)
		}
	}
	add(pgIndexInline)
	if n := tail(); n != 0 {
		t.Fatalf("%d rows in the tail after a write of %d, want them indexed at once", n, pgIndexInline)
	}
	for left := pgTailBatch - 1; left > 0; left -= pgIndexInline - 1 { // the tail one short of a batch
		add(min(left, pgIndexInline-1))
	}
	sameAsScan(t, s, recall.SearchOptions{Query: "xylophonist3"}, 0, 7)
	if n := tail(); n != pgTailBatch-1 {
		t.Fatalf("%d rows in the tail after a search, want the %d appended", n, pgTailBatch-1)
	}
	add(1)
	sameAsScan(t, s, recall.SearchOptions{Query: "xylophonist3"}, 0, 7)
	if n := tail(); n != 0 {
		t.Fatalf("%d rows in the tail after a search found %d, want 0", n, pgTailBatch)
	}
}

// TestSearchTailRaces: batches that index the tail run while other
// writers pop, remove, clear and append to the same sessions; a row
// made not live stays not live, whichever of the two updates its row
// first, and the hits are the scan's.
func TestSearchTailRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPostgres(t)
	b := s.db.(*pgBackend)
	b.gin.every = 1 // a batch after every append, when none is running
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", w%2)}
			for i := range 60 {
				text := fmt.Sprintf("writer %d turn %d xylophone 张三", w, i)
				last, err := s.Append(ctx, k, recall.Guard{}, msg(text).Entry(), msg(text+" again").Entry())
				if err != nil {
					t.Error(err)
					return
				}
				switch i % 6 {
				case 1:
					_, err = s.Pop(ctx, k)
				case 3:
					_, err = s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: last - 1}))
				case 5:
					if w == 0 && i == 35 {
						_, err = s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindClear, nil))
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.gin.wg.Wait()
	t.Logf("%d batches; %d rows left in the tail", b.gin.merges.Load(), pgCount(t, s, `SELECT count(*) FROM search WHERE NOT indexed`))
	if b.gin.merges.Load() < 2 {
		t.Fatalf("%d batches ran: the test raced nothing", b.gin.merges.Load())
	}
	for _, q := range []string{"xylophone", "张三", "again", `"turn 3"`} {
		sameAsScan(t, s, recall.SearchOptions{Query: q}, 0, 50)
		sameAsScan(t, s, recall.SearchOptions{Query: q, WholeLog: true}, 0)
	}
}

// TestSearchPlansPostgres: the statements of an indexed search read the
// indexed rows through the partial GIN indexes (search_body for a term of
// three characters, search_grams for two CJK characters) and the tail
// through search_tail, with the arguments' values known or not (pgx
// prepares statements; a generic plan knows no values). The bigram index
// holds only rows that have bigrams.
func TestSearchPlansPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, schema := newPostgresSchema(t)
	b := s.db.(*pgBackend)
	k := recall.Key{Project: "p", Session: "s"}
	for i := range 200 {
		text := fmt.Sprintf("turn %d, plain English with no CJK text at all", i)
		if i%20 == 0 {
			text += " 我叫张三"
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, msg(text).Entry()); err != nil {
			t.Fatal(err)
		}
	}
	b.gin.wg.Wait()
	var def string
	if err := b.pool.QueryRow(ctx, `SELECT pg_get_indexdef(to_regclass($1))`, schema+".search_grams").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "WHERE (indexed AND (grams IS NOT NULL))") {
		t.Fatalf("search_grams is %q, want a partial index of the indexed rows with grams", def)
	}
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	// The scans of the table are made too dear to choose: the question
	// is whether the indexes serve the conditions, not whether they pay
	// on 200 rows.
	if _, err := c.Exec(ctx, `ANALYZE search; SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer c.Exec(ctx, `RESET enable_seqscan; RESET plan_cache_mode`) //nolint:errcheck
	for _, tc := range []struct{ query, index string }{{"English", "search_body"}, {"张三", "search_grams"}} {
		q, _ := search.Parse(tc.query)
		sq := searchQuery{s: s, pg: true, q: q, terms: q.Terms, keep: 21}
		plan, err := sq.plan(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		stmt, a := sq.itemSQL(false, time.Time{}, plan)
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := c.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			rs, err := c.Query(ctx, "EXPLAIN "+stmt, a...)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rs, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			for _, index := range []string{tc.index, "search_tail"} {
				if !strings.Contains(plan, index) {
					t.Errorf("%s (%s): the plan does not use %s:\n%s", tc.query, mode, index, plan)
				}
			}
		}
	}
}
