package memstore

import (
	"context"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// Search implements recall.Searcher by reading each session, newest first,
// with search.Scan: a store in memory needs no index.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return search.Scan(ctx, s, opts)
}
