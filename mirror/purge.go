package mirror

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Purge implements storekit.Purger when the primary does, and returns
// ErrUnsupported when it does not. It purges the primary only: the replica
// keeps the entries the purge drops, like any history the local store no
// longer holds, and receives the entries the purge appends to restore the
// session's metadata. A replica that never received the session gets the
// purged log as it is, starting at its compaction entry. A replica that
// holds some of the dropped entries but not all of them cannot be
// continued from that entry; that session then stops with ErrDiverged.
func (s *Store) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	if err := s.begin(ctx); err != nil {
		return storekit.PurgeResult{}, err
	}
	p, ok := recall.As[storekit.Purger](s.primary)
	if !ok {
		return storekit.PurgeResult{}, fmt.Errorf("mirror: purge %s: the primary store cannot purge: %w", key, recall.ErrUnsupported)
	}
	res, err := p.Purge(ctx, key)
	if err == nil && res.Dropped > 0 {
		s.mark(key, 0)
	}
	return res, err
}
