package mirror

import (
	"context"

	"github.com/recallkit/recall"
)

// Search implements recall.Searcher: like every read it is the primary's.
// The replica is never searched.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := s.begin(ctx); err != nil {
		return recall.SearchPage{}, err
	}
	return recall.Search(ctx, s.primary, opts)
}

// ReadItems implements storekit.ItemPager: a page is read from the primary,
// the truth, by its own ReadItems when it has one.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	if err := s.begin(ctx); err != nil {
		return recall.ItemPage{}, err
	}
	return recall.NewSession(s.primary, key).ReadItems(ctx, opts)
}
