package compact

import "github.com/recallkit/recall"

// Cut returns where a compaction splits items (a session's view, oldest
// first): items[:cut] are summarized, items[cut:] are kept verbatim. It
// starts from keeping the newest keepLast items (none when keepLast <= 0)
// and moves the cut towards the start, keeping more, until it separates
// nothing that must stay together:
//
//   - a call and its output: a "function_call" (or any "<x>_call" item
//     with a call_id) and the "<x>_call_output" with the same call_id. A
//     model rejects an output whose call it cannot see, and a summary of
//     a call whose output follows verbatim makes no sense;
//   - a "reasoning" item and the item that follows it, which reasoning
//     models require together.
//
// A cut of 0 means there is nothing to summarize.
func Cut(items []recall.Item, keepLast int) int {
	cut := max(len(items)-max(keepLast, 0), 0)
	callAt := map[string]int{} // call_id -> index of its first call
	for i, it := range items {
		if id, isCall, _ := it.CallPart(); isCall {
			if _, seen := callAt[id]; !seen {
				callAt[id] = i
			}
		}
	}
	for cut > 0 {
		moved := false
		// an output kept whose call would be summarized: keep the call
		for _, it := range items[cut:] {
			id, _, isOutput := it.CallPart()
			if at, ok := callAt[id]; isOutput && ok && at < cut {
				cut, moved = at, true
			}
		}
		// a reasoning item just before the cut: keep it with its item
		if cut > 0 && cut < len(items) && items[cut-1].Type() == "reasoning" {
			cut, moved = cut-1, true
		}
		if !moved {
			break
		}
	}
	return cut
}
