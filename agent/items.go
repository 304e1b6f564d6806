package agent

import (
	"encoding/json"

	"github.com/recallkit/recall"
)

// FunctionCall is the part of a "function_call" item the loop acts on.
type FunctionCall struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ParseFunctionCall decodes it when it is a "function_call" item with a
// call_id; ok is false for any other item.
func ParseFunctionCall(it recall.Item) (FunctionCall, bool) {
	var c struct {
		Type string `json:"type"`
		FunctionCall
	}
	if json.Unmarshal(it, &c) != nil || c.Type != "function_call" || c.CallID == "" {
		return FunctionCall{}, false
	}
	return c.FunctionCall, true
}

// FunctionCallItem returns a "function_call" item, as a model emits it.
func FunctionCallItem(callID, name, arguments string) recall.Item {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		FunctionCall
	}{"function_call", FunctionCall{CallID: callID, Name: name, Arguments: arguments}})
	return b
}

// FunctionCallOutput returns the "function_call_output" item that answers
// the call callID with output.
func FunctionCallOutput(callID, output string) recall.Item {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}{"function_call_output", callID, output})
	return b
}

// LastAssistantText returns the text of the last assistant message in
// items, or "".
func LastAssistantText(items []recall.Item) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type() == "message" && items[i].Role() == "assistant" {
			return items[i].Text()
		}
	}
	return ""
}

// TrimOrphans returns items without the halves of call/output pairs whose
// other half is missing: an output whose call lies outside the window (a
// history limit cut it off), and a call that was never answered. Models
// reject both, so a window must not contain them. The result is a new
// slice; the items themselves are shared.
func TrimOrphans(items []recall.Item) []recall.Item {
	callAt := map[string]int{}    // call_id -> index of its call
	answered := map[string]bool{} // call_id -> an output follows the call
	for i, it := range items {
		id, isCall, isOutput := it.CallPart()
		if _, dup := callAt[id]; isCall && !dup {
			callAt[id] = i
		}
		if at, ok := callAt[id]; isOutput && ok && at < i {
			answered[id] = true
		}
	}
	out := make([]recall.Item, 0, len(items))
	for i, it := range items {
		id, isCall, isOutput := it.CallPart()
		if isCall && !answered[id] {
			continue
		}
		if isOutput {
			if at, ok := callAt[id]; !ok || at > i {
				continue
			}
		}
		out = append(out, it)
	}
	return out
}
