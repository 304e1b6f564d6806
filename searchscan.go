package recall

import (
	"context"
	"errors"
)

// ScanSearch is Search without an index: it reads every matching session.
// PLACEHOLDER: the search helper replaces this file with the real scan.
func ScanSearch(ctx context.Context, s Store, opts SearchOptions) (SearchPage, error) {
	return SearchPage{}, errors.New("recall: scan search not written yet")
}
