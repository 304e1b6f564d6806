// Package undo removes the last user turn of a session: the newest user
// message and every item after it (the model's reply, tool calls and their
// outputs), as one atomic batch of pop entries.
package undo

import (
	"context"
	"errors"
	"fmt"

	"github.com/recallkit/recall"
)

// LastTurn pops the newest user message of key's view and every item
// after it, and returns the removed items, oldest first. It returns nil
// and no error when the view holds no user message. The pops are appended
// in one batch, so a crash leaves the turn either whole or gone, and the
// batch is guarded by the LastSeq the view was read at: a turn appended
// meanwhile (by another process) is read again rather than half undone.
func LastTurn(ctx context.Context, s recall.Store, key recall.Key) ([]recall.Item, error) {
	for attempt := 0; ; attempt++ {
		removed, err := lastTurn(ctx, s, key)
		if errors.Is(err, recall.ErrConflict) && attempt < maxRetries {
			continue
		}
		return removed, err
	}
}

// maxRetries bounds how often LastTurn reads again after a concurrent
// write.
const maxRetries = 8

func lastTurn(ctx context.Context, s recall.Store, key recall.Key) ([]recall.Item, error) {
	// Read backwards in growing windows: a turn is usually a handful of
	// items, and Items(limit) costs O(limit) on stores that read from the end.
	for limit := 16; ; limit *= 4 {
		live, last, err := s.Items(ctx, key, limit)
		if err != nil {
			return nil, fmt.Errorf("undo %s: %w", key, err)
		}
		at := -1
		for i := len(live) - 1; i >= 0; i-- {
			if isUserMessage(live[i].Item) {
				at = i
				break
			}
		}
		if at < 0 {
			if len(live) < limit {
				return nil, nil // the whole view holds no user message
			}
			continue
		}
		turn := live[at:]
		pops := make([]recall.Entry, 0, len(turn))
		removed := make([]recall.Item, 0, len(turn))
		for i := len(turn) - 1; i >= 0; i-- { // newest first, as PopItem would
			pops = append(pops, recall.NewEntry(recall.KindPop, turn[i].Ref))
		}
		for _, l := range turn {
			removed = append(removed, l.Item)
		}
		if _, err := s.Append(ctx, key, recall.IfLastSeq(last), pops...); err != nil {
			return nil, fmt.Errorf("undo %s: %w", key, err)
		}
		return removed, nil
	}
}

func isUserMessage(it recall.Item) bool {
	return it.Type() == "message" && it.Role() == "user"
}
