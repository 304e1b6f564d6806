package redisstore

import (
	"context"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// Search implements recall.Searcher with search.Scan: it lists the
// sessions newest first and reads each one's log, stopping once the
// sessions left are older than a full page. Redis keeps no search index.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return search.Scan(ctx, s, opts)
}
