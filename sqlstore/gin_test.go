package sqlstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/recallkit/recall"
)

// TestGINPendingListMerged: the rows appends put into the search indexes'
// GIN pending lists are merged by the store itself, off the append's path
// (ginCleaner), so that an insert never finds a full list; without the
// merges the rows stay pending. Searches find every row either way.
func TestGINPendingListMerged(t *testing.T) {
	ctx := context.Background()
	for _, merge := range []bool{true, false} {
		t.Run(fmt.Sprintf("merge=%v", merge), func(t *testing.T) {
			s := newPostgres(t)
			b := s.db.(*pgBackend)
			b.gin.every = 1 << 40 // none
			if merge {
				b.gin.every = 200 // every other append
			}
			k := recall.Key{Project: "p", Session: "s"}
			for i := range 20 {
				// 20 rows of ~150 trigrams: ~60 kB of pending tuples,
				// under the 256 kB at which an insert merges them.
				text := fmt.Sprintf("turn %d 北京市的天气 xylophonist%03d played the quick brown fox over the lazy dog, then 张三 came in", i, i)
				if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntry(msg(text))); err != nil {
					t.Fatal(err)
				}
				b.gin.wg.Wait() // the merge this append may have begun
			}
			var merged int64
			if err := b.pool.QueryRow(ctx, `SELECT gin_clean_pending_list('search_body'::regclass)`).Scan(&merged); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d merges by the store; %d pages were still pending", b.gin.merges.Load(), merged)
			switch {
			case merge && (b.gin.merges.Load() != 10 || merged != 0):
				t.Errorf("%d merges by the store, %d pages still pending; want 10 and 0", b.gin.merges.Load(), merged)
			case !merge && (b.gin.merges.Load() != 0 || merged == 0):
				t.Errorf("%d merges by the store, %d pages pending; want 0 and some", b.gin.merges.Load(), merged)
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
