package memstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Purge implements storekit.Purger: it replaces key's log by the one
// storekit.PurgeLog returns, under the store's mutex, so no reader ever
// sees a mix.
func (s *Store) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	if err := s.lock(ctx, key); err != nil {
		return storekit.PurgeResult{}, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return storekit.PurgeResult{}, fmt.Errorf("memstore: purge %s: %w", key, recall.ErrNotFound)
	}
	out, dropped, err := storekit.PurgeLog(key, sess.entries)
	if err != nil || dropped == 0 {
		return storekit.PurgeResult{}, err
	}
	restored := len(out) - (len(sess.entries) - dropped)
	meta, _ := recall.Replay(key, out)
	sess.entries, sess.meta = out, meta
	return storekit.PurgeResult{Dropped: dropped, From: out[0].Seq, Restored: restored}, nil
}
