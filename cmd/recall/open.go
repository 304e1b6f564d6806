package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storeurl"
)

// openHome opens the file store in home (the default home when empty).
func openHome(home string) (recall.Store, error) {
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		return nil, withHint(fmt.Errorf("open store: %w", err), "choose a writable directory with --home or RECALL_HOME")
	}
	return st, nil
}

// openURL opens the store a URL names (file://, sqlite://, postgres://,
// redis://, mem://, or a plain path). The errors storeurl returns never
// show a password.
func openURL(ctx context.Context, url string) (recall.Store, error) {
	st, err := storeurl.Open(ctx, url)
	switch {
	case errors.Is(err, storeurl.ErrUnknownScheme):
		return nil, usageError("see 'recall --help' for the store URLs", "open store: %v", err)
	case err != nil:
		return nil, withHint(fmt.Errorf("open store: %w", err), "check the URL in --store or RECALL_STORE, and that the server is running")
	}
	return st, nil
}
