package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// Undo removes the session's last user turn: its newest user message and
// every item after it (the replies, tool calls and tool outputs). It
// returns the removed items, oldest first, or nil when the session holds
// no user message.
//
// Items are popped one at a time from the newest. A crash part way leaves
// a prefix of the turn, possibly ending in a function_call without its
// output; Run drops such a call from the history it sends (TrimOrphans).
func Undo(ctx context.Context, sess recall.Session) ([]recall.Item, error) {
	items, err := sess.GetItems(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("agent: undo: %w", err)
	}
	last := -1
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type() == "message" && items[i].Role() == "user" {
			last = i
			break
		}
	}
	if last < 0 {
		return nil, nil
	}
	var popped []recall.Item
	for range len(items) - last {
		it, err := sess.PopItem(ctx)
		if err != nil {
			return popped, fmt.Errorf("agent: undo: %w", err)
		}
		if it == nil {
			break // someone else emptied the session meanwhile
		}
		popped = append(popped, it)
	}
	slices.Reverse(popped)
	return popped, nil
}
