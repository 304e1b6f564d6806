package pagefilter

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/search"
)

// counting wraps a store and records the limit of every List it serves.
type counting struct {
	recall.Store
	lists []int
}

func (c *counting) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	c.lists = append(c.lists, opts.Limit)
	return c.Store.List(ctx, project, opts)
}

func (c *counting) Unwrap() recall.Store { return c.Store }

// seed writes n sessions to project p, each with two messages holding
// "needle"; the sessions whose number codex accepts came from Codex, the
// others are recall's own. It returns the keys of the Codex sessions in
// List order.
func seed(t *testing.T, st recall.Store, n int, codex func(int) bool) []recall.Key {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		key := recall.Key{Project: "p", Session: fmt.Sprintf("s%03d", i)}
		opts := recall.CreateOptions{Items: []recall.Item{recall.Message("user", fmt.Sprintf("needle %d", i)), recall.Message("assistant", "a needle")}}
		if codex(i) {
			opts.Metadata = map[string]string{importer.MetaSource: "codex"}
		}
		if _, err := recall.NewSession(st, key).Create(ctx, opts); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.List(ctx, "p", recall.ListOptions{Limit: -1})
	if err != nil || len(all.Sessions) != n {
		t.Fatalf("%d sessions, %v", len(all.Sessions), err)
	}
	var keys []recall.Key
	for _, m := range all.Sessions {
		if importer.Source(m) == "codex" {
			keys = append(keys, m.Key)
		}
	}
	return keys
}

// TestList pages through the sessions of one source with every page size,
// the sessions of that source sparse, in runs, or all of them, and checks
// that the pages hold each of them once, in order, each page full but the
// last, and that no read asks for more than a page.
func TestList(t *testing.T) {
	ctx := context.Background()
	for name, codex := range map[string]func(int) bool{
		"sparse": func(i int) bool { return i%7 == 3 },
		"runs":   func(i int) bool { return i/5%2 == 0 },
		"all":    func(int) bool { return true },
		"none":   func(int) bool { return false },
	} {
		t.Run(name, func(t *testing.T) {
			st := &counting{Store: memstore.New(memstore.Options{})}
			want := seed(t, st, 40, codex)
			for _, limit := range []int{1, 2, 3, 5, 8, 50} {
				st.lists = nil
				var got []recall.Key
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > 40 {
						t.Fatalf("limit %d: the pages never end", limit)
					}
					page, err := List(ctx, st, "p", recall.ListOptions{Limit: limit, Cursor: cursor}, OfSource("codex"))
					if err != nil {
						t.Fatal(err)
					}
					if len(page.Sessions) > limit {
						t.Errorf("limit %d: a page of %d sessions", limit, len(page.Sessions))
					}
					for _, m := range page.Sessions {
						got = append(got, m.Key)
					}
					if page.Next == "" {
						break
					}
					if len(page.Sessions) != limit {
						t.Errorf("limit %d: a page of %d sessions before the last", limit, len(page.Sessions))
					}
					cursor = page.Next
				}
				if !slices.Equal(got, want) {
					t.Errorf("limit %d: paged %v, want %v", limit, got, want)
				}
				if slices.Max(st.lists) > limit {
					t.Errorf("limit %d: reads of %v sessions", limit, st.lists)
				}
			}
			all, err := List(ctx, st, "p", recall.ListOptions{Limit: -1}, OfSource("codex"))
			if err != nil || all.Next != "" || len(all.Sessions) != len(want) {
				t.Errorf("no limit: %d sessions, next %q, %v; want %d", len(all.Sessions), all.Next, err, len(want))
			}
		})
	}
}

// TestListRecall: a session without an import source is recall's; a nil
// filter is the store's own List.
func TestListRecall(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	seed(t, st, 6, func(i int) bool { return i < 3 })
	page, err := List(ctx, st, "", recall.ListOptions{}, OfSource(importer.SourceRecall))
	if err != nil || len(page.Sessions) != 3 || importer.Source(page.Sessions[2]) != importer.SourceRecall || page.Next != "" {
		t.Errorf("recall's sessions: %+v, %v", page, err)
	}
	page, err = List(ctx, st, "p", recall.ListOptions{Limit: 4}, nil)
	if want, _ := st.List(ctx, "p", recall.ListOptions{Limit: 4}); err != nil || !slices.EqualFunc(page.Sessions, want.Sessions, func(a, b recall.Meta) bool { return a.Key == b.Key }) || page.Next != want.Next {
		t.Errorf("nil filter: %+v, %v; want %+v", page, err, want)
	}
}

// TestSearch pages through the hits in the sessions of one source and
// checks that every one comes once, in order, that each page carries the
// metadata of its sessions, and that a session removed after it was
// searched is left out.
func TestSearch(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	codex := func(i int) bool { return i%4 == 1 }
	seed(t, st, 30, codex)
	opts := recall.SearchOptions{Query: "needle", Project: "p", Limit: recall.MaxSearchLimit}
	everything, err := recall.Search(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	var want []recall.Hit
	for _, h := range everything.Hits {
		var i int
		fmt.Sscanf(h.Key.Session, "s%d", &i)
		if codex(i) {
			want = append(want, h)
		}
	}
	if len(want) != 2*8 {
		t.Fatalf("%d hits in codex sessions, want 16", len(want))
	}
	for _, limit := range []int{1, 2, 3, 7, 50} {
		var got []recall.Hit
		o := opts
		o.Limit = limit
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("limit %d: the pages never end", limit)
			}
			page, err := Search(ctx, st, o, OfSource("codex"))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page.Hits {
				if m, ok := page.Sessions[h.Key]; !ok || importer.Source(m) != "codex" {
					t.Fatalf("limit %d: hit %v without its codex session's metadata: %+v", limit, h.Key, m)
				}
			}
			if len(page.Hits) > limit {
				t.Errorf("limit %d: a page of %d hits", limit, len(page.Hits))
			}
			got = append(got, page.Hits...)
			if page.Next == "" {
				break
			}
			if len(page.Hits) != limit {
				t.Errorf("limit %d: a page of %d hits before the last", limit, len(page.Hits))
			}
			o.Cursor = page.Next
		}
		if !slices.EqualFunc(got, want, func(a, b recall.Hit) bool { return search.Compare(a, b) == 0 }) {
			t.Errorf("limit %d: %d hits, want %d in order", limit, len(got), len(want))
		}
	}

	// A session gone between the search and its Stat is left out.
	gone := &vanishing{Store: st, gone: want[0].Key}
	page, err := Search(ctx, gone, recall.SearchOptions{Query: "needle", Project: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range page.Hits {
		if h.Key == want[0].Key {
			t.Errorf("a hit of the removed session %v", h.Key)
		}
	}
	if len(page.Hits) != recall.DefaultSearchLimit || len(page.Sessions) != recall.DefaultSearchLimit/2 {
		t.Errorf("%d hits in %d sessions; want a full page", len(page.Hits), len(page.Sessions))
	}
}

// vanishing is a store whose Stat no longer finds one session its search
// still returns.
type vanishing struct {
	recall.Store
	gone recall.Key
}

func (v *vanishing) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if key == v.gone {
		return recall.Meta{}, recall.ErrNotFound
	}
	return v.Store.Stat(ctx, key)
}

func (v *vanishing) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return recall.Search(ctx, v.Store, opts)
}
