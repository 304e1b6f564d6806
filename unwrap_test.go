package recall_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/storekit"
)

// observer wraps a store without changing what its calls do, and says so
// with Unwrap.
type observer struct{ recall.Store }

func (o observer) Unwrap() recall.Store { return o.Store }

// native is a store with every optional ability the helpers look for,
// counting the calls each one gets.
type native struct {
	*memstore.Store
	searches, forks int
}

func (n *native) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	n.searches++
	return search.Scan(ctx, n.Store, opts)
}

func (n *native) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	n.forks++
	return recall.NewSession(n.Store, key).Fork(ctx, atSeq, newKey)
}

// TestHelpersFindAbilitiesThroughWrappers checks that As and the helpers
// that use a store's own method (Search, Fork, Cleanup, Projects) find it
// under two wrappers that unwrap, and that As stops at one that does not.
func TestHelpersFindAbilitiesThroughWrappers(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	n := &native{Store: mem}
	var s recall.Store = observer{observer{n}}
	key := recall.Key{Project: "p", Session: "s"}
	if _, err := recall.NewSession(s, key).Create(ctx, recall.CreateOptions{Items: []recall.Item{recall.Message("user", "hello there")}}); err != nil {
		t.Fatal(err)
	}
	if p, err := recall.Search(ctx, s, recall.SearchOptions{Query: "hello"}); err != nil || len(p.Hits) != 1 || n.searches != 1 {
		t.Errorf("Search through wrappers: %d hits, %v; the store's own Search ran %d times", len(p.Hits), err, n.searches)
	}
	if _, err := recall.NewSession(s, key).Fork(ctx, 0, recall.Key{Project: "p", Session: "f"}); err != nil || n.forks != 1 {
		t.Errorf("Fork through wrappers: %v; the store's own Fork ran %d times", err, n.forks)
	}
	for name, found := range map[string]bool{
		"Searcher":      has[recall.Searcher](s),
		"Forker":        has[storekit.Forker](s),
		"Cleaner":       has[storekit.Cleaner](s),
		"ProjectLister": has[storekit.ProjectLister](s),
		"Purger":        has[storekit.Purger](s),
		"ItemPager":     has[storekit.ItemPager](s),
	} {
		if !found {
			t.Errorf("As does not find the wrapped store's %s", name)
		}
	}
	// Cleanup and Projects are the memory store's own: they see both.
	if ps, err := recall.Projects(ctx, s); err != nil || len(ps) != 1 || ps[0].Sessions != 2 {
		t.Errorf("Projects through wrappers: %+v, %v", ps, err)
	}
	if rep, err := recall.Cleanup(ctx, s, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour), DryRun: true}); err != nil || len(rep.Removed) != 2 {
		t.Errorf("Cleanup through wrappers: %+v, %v", rep, err)
	}
	// A wrapper without Unwrap hides what it does not implement.
	if has[recall.Searcher](struct{ recall.Store }{n}) {
		t.Error("As looked inside a wrapper that has no Unwrap")
	}
}

func has[T any](s recall.Store) bool {
	_, ok := recall.As[T](s)
	return ok
}
