package main

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// openHome opens the file store in home (the default home when empty).
func openHome(home string) (recall.Store, error) {
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		return nil, withHint(fmt.Errorf("open store: %w", err), "choose a writable directory with --home or RECALL_HOME")
	}
	return st, nil
}

// openURL opens the store a URL names.
func openURL(ctx context.Context, url string) (recall.Store, error) {
	return nil, usageError("", "store URL %s: not supported yet", url)
}
