package memstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Rewrite implements storekit.Rewriter: it replaces key's log by the one
// storekit.RewriteLog returns, under the store's mutex, so no reader ever
// sees a mix.
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	if err := s.lock(ctx, key); err != nil {
		return recall.Meta{}, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return recall.Meta{}, fmt.Errorf("memstore: rewrite %s: %w", key, recall.ErrNotFound)
	}
	out, err := storekit.RewriteLog(sess.entries, sess.meta.LastSeq, rw, s.opts.MaxItemSize)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("memstore: rewrite %s: %w", key, err)
	}
	meta, _ := recall.Replay(key, out)
	sess.entries, sess.meta = out, meta
	return meta, nil
}
