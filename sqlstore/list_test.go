package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestListLikePaginate fills a store and memstore with the same sessions,
// many of them updated at the same microsecond, in several projects, some
// archived, some with subagent records, and demands the same pages and
// cursors from both, for every page size and filter.
func TestListLikePaginate(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		ref := memstore.New(memstore.Options{})
		base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		for i := range 60 {
			k := recall.Key{Project: fmt.Sprintf("proj-%d", i%3), Session: fmt.Sprintf("s.%02d", (i*37)%60)}
			if i%6 == 5 {
				k.Project = "proj_" + k.Project // '_' sorts after '-' bytewise, before it in some locales
			}
			at := base.Add(time.Duration(i%4) * time.Microsecond) // 4 distinct times, many ties
			log := []recall.Entry{{Seq: 1, Kind: recall.KindItem, Time: at, Data: []byte(msg(k.String()))}}
			if i%5 == 0 {
				yes := true
				log = append(log, recall.Entry{Seq: 2, Kind: recall.KindMeta, Time: at, Data: mustJSON(recall.MetaChange{Archived: &yes})})
			}
			for _, st := range []recall.Store{s, ref} {
				if _, err := st.Import(ctx, k, log...); err != nil {
					t.Fatal(err)
				}
				if i%4 == 1 {
					for _, sub := range []string{"subagents/b", "subagents/a", "x"} {
						sk := k
						sk.Subpath = sub
						if _, err := st.Import(ctx, sk, recall.Entry{Seq: 1, Kind: recall.KindItem, Time: at.Add(-time.Duration(len(sub)) * time.Microsecond), Data: []byte(msg("sub"))}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		type query struct {
			project string
			opts    recall.ListOptions
		}
		var queries []query
		for _, limit := range []int{1, 2, 7, 50, -1} {
			for _, project := range []string{"", "proj-1", "proj_proj-2", "nothing"} {
				for _, arch := range []bool{false, true} {
					queries = append(queries, query{project, recall.ListOptions{Limit: limit, IncludeArchived: arch}})
				}
			}
			queries = append(queries, query{"proj-1", recall.ListOptions{Limit: limit, Parent: "s.01", IncludeArchived: true}})
		}
		for _, q := range queries {
			var got, want recall.Page
			pages := 0
			for {
				var err1, err2 error
				got, err1 = s.List(ctx, q.project, withCursor(q.opts, got.Next))
				want, err2 = ref.List(ctx, q.project, withCursor(q.opts, want.Next))
				if err1 != nil || err2 != nil {
					t.Fatalf("%+v: %v / memstore %v", q, err1, err2)
				}
				if a, b := keys(got), keys(want); a != b || got.Next != want.Next {
					t.Fatalf("%+v page %d:\n %s next %q\nmemstore\n %s next %q", q, pages, a, got.Next, b, want.Next)
				}
				pages++
				if got.Next == "" {
					break
				}
			}
		}
		a, err1 := recall.Projects(ctx, s)
		b, err2 := recall.Projects(ctx, ref)
		if fmt.Sprint(a) != fmt.Sprint(b) || err1 != nil || err2 != nil {
			t.Fatalf("projects %v %v\nmemstore %v %v", a, err1, b, err2)
		}
		if _, err := s.List(ctx, "", recall.ListOptions{Cursor: "not a cursor"}); err == nil {
			t.Error("a bad cursor was accepted")
		}
		verify(t, s)
	})
}

func withCursor(o recall.ListOptions, c string) recall.ListOptions { o.Cursor = c; return o }

func keys(p recall.Page) string {
	var s string
	for _, m := range p.Sessions {
		s += fmt.Sprintf("%s@%d ", m.Key, m.Updated.UnixMicro())
	}
	return s
}

func mustJSON(v any) []byte { return recall.NewEntry(recall.KindMeta, v).Data }
