package filestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
	"pgregory.net/rapid"
)

// TestPaginateAgrees checks the index's pagination (a window selection
// over undecoded records) against storekit.Paginate, page after page, with
// many ties in Updated.
func TestPaginateAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		var recs []*record
		var metas []recall.Meta
		for i := range n {
			k := recall.Key{
				Project: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "project"),
				Session: fmt.Sprintf("s%02d", i),
			}
			m := recall.Meta{Key: k, Updated: time.Unix(int64(rapid.IntRange(0, 5).Draw(t, "updated")), 0).UTC(), LastSeq: int64(i + 1)}
			recs = append(recs, newRecord(k, k.Session, logEnd{}, m, controlLines{}))
			metas = append(metas, m)
		}
		opts := recall.ListOptions{Limit: rapid.IntRange(-1, 7).Draw(t, "limit")}
		for page := 0; page < 100; page++ {
			got, err1 := paginate(append([]*record(nil), recs...), opts)
			want, err2 := storekit.Paginate(append([]recall.Meta(nil), metas...), opts)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if got.Next != want.Next || len(got.Sessions) != len(want.Sessions) {
				t.Fatalf("page %d: %d sessions next %q; want %d next %q", page, len(got.Sessions), got.Next, len(want.Sessions), want.Next)
			}
			for i := range got.Sessions {
				if got.Sessions[i].Key != want.Sessions[i].Key {
					t.Fatalf("page %d [%d]: %s, want %s", page, i, got.Sessions[i].Key, want.Sessions[i].Key)
				}
			}
			if got.Next == "" {
				break
			}
			opts.Cursor = got.Next
		}
	})
}

// paginate is List's choice of a page over records, without its stat of
// the page's logs.
func paginate(recs []*record, opts recall.ListOptions) (recall.Page, error) {
	sel, next, err := selectPage(recs, opts)
	if err != nil {
		return recall.Page{}, err
	}
	return pageOf(sel, next)
}
