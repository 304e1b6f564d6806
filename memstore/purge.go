package memstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
)

var _ recall.Purger = (*Store)(nil)

// Purge implements recall.Purger: it replaces key's log by the one
// recall.PurgeLog returns, under the store's mutex, so no reader ever
// sees a mix.
func (s *Store) Purge(ctx context.Context, key recall.Key) (recall.PurgeResult, error) {
	if err := s.lock(ctx, key); err != nil {
		return recall.PurgeResult{}, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return recall.PurgeResult{}, fmt.Errorf("memstore: purge %s: %w", key, recall.ErrNotFound)
	}
	out, dropped, err := recall.PurgeLog(key, sess.entries)
	if err != nil || dropped == 0 {
		return recall.PurgeResult{}, err
	}
	restored := len(out) - (len(sess.entries) - dropped)
	meta, _ := recall.Replay(key, out)
	sess.entries, sess.meta = out, meta
	return recall.PurgeResult{Dropped: dropped, From: out[0].Seq, Restored: restored}, nil
}
