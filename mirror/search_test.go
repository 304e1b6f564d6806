package mirror_test

import (
	"context"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/storetest"
)

// searchingStore is a primary with an index of its own: it counts the
// searches it answers.
type searchingStore struct {
	*memstore.Store
	searches int
}

func (s *searchingStore) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	s.searches++
	return search.Scan(ctx, s, opts)
}

// The mirror's Search is the primary's: its own index when it has one,
// never the replica.
func TestSearchUsesThePrimary(t *testing.T) {
	ctx := context.Background()
	primary := &searchingStore{Store: memstore.New(memstore.Options{})}
	replica := memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := m.Append(ctx, k, recall.Guard{}, item("a walrus").Entry()); err != nil {
		t.Fatal(err)
	}
	// A session only the replica holds is not found.
	if _, err := replica.Append(ctx, recall.Key{Project: "p", Session: "r"}, recall.Guard{}, item("walrus replica").Entry()); err != nil {
		t.Fatal(err)
	}
	page, err := recall.Search(ctx, m, recall.SearchOptions{Query: "walrus"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Hits) != 1 || page.Hits[0].Key != k || primary.searches != 1 {
		t.Fatalf("hits %+v after %d searches of the primary; want the primary's one hit, from its index", page.Hits, primary.searches)
	}
	if err := storetest.CompareSearch(ctx, m, recall.SearchOptions{Query: "walrus", Limit: 1}); err != nil {
		t.Error(err)
	}
}
