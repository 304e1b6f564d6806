package recall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/recallkit/recall/internal/jsonvalid"
)

// Item is one model-visible conversation item, kept as JSON verbatim: the
// bytes that went in are the bytes that come out. The OpenAI Responses
// input-item shape is the lingua franca (message, function_call,
// function_call_output, reasoning, ...); unknown fields and types survive.
//
// An Item must be a single JSON object. Stores refuse anything else with
// [ErrInvalidItem] before writing any part of the batch.
type Item json.RawMessage

// MarshalJSON returns the item's bytes. Note that encoding/json compacts
// (and HTML-escapes) what a marshaler returns, so an Item embedded in a
// larger value is equivalent JSON, not the same bytes; stores that promise
// byte-exact items write them without re-encoding.
func (it Item) MarshalJSON() ([]byte, error) {
	if len(it) == 0 {
		return []byte("null"), nil
	}
	return it, nil
}

// UnmarshalJSON stores a copy of data.
func (it *Item) UnmarshalJSON(data []byte) error {
	*it = append((*it)[:0], data...)
	return nil
}

// Clone returns a copy of it that shares no memory with it.
func (it Item) Clone() Item {
	if it == nil {
		return nil
	}
	return append(Item(nil), it...)
}

// String returns the item's JSON text.
func (it Item) String() string { return string(it) }

// itemHead holds the fields recall itself looks at; everything else is opaque.
type itemHead struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	CallID string `json:"call_id"`
}

func (it Item) head() itemHead {
	var h itemHead
	_ = json.Unmarshal(it, &h) // a malformed item simply has no head
	if h.Type == "" && h.Role != "" {
		h.Type = "message" // the Responses API allows easy input messages without a type
	}
	return h
}

// Type returns the item's "type" field ("message" for a typeless item with
// a role), or "" when it has none.
func (it Item) Type() string { return it.head().Type }

// Role returns the item's "role" field, or "".
func (it Item) Role() string { return it.head().Role }

// CallID returns the item's "call_id" field, or "": it pairs a
// function_call with its function_call_output.
func (it Item) CallID() string { return it.head().CallID }

// CallPart classifies the item as a half of a call/output pair:
// "function_call" and "function_call_output", and likewise every "<x>_call"
// item that carries a call_id (computer_call, custom_tool_call,
// local_shell_call, ...) with its "<x>_call_output". Hosted tool calls
// (web_search_call, ...) carry no call_id and need no output, so they are
// not pairs; for them, as for any other item, callID is "".
func (it Item) CallPart() (callID string, isCall, isOutput bool) {
	h := it.head()
	if h.CallID == "" {
		return "", false, false
	}
	switch {
	case strings.HasSuffix(h.Type, "_call_output"):
		return h.CallID, false, true
	case strings.HasSuffix(h.Type, "_call"):
		return h.CallID, true, false
	}
	return "", false, false
}

// Validate checks that it is a single JSON object of at most max bytes
// (max <= 0 means [DefaultMaxItemSize]). The error wraps [ErrInvalidItem]
// or [ErrTooLarge].
func (it Item) Validate(max int) error {
	if max <= 0 {
		max = DefaultMaxItemSize
	}
	if len(it) > max {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(it), max)
	}
	t := bytes.TrimLeft(it, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrInvalidItem)
	}
	if !jsonvalid.Valid(it) {
		return fmt.Errorf("%w: malformed JSON: %s", ErrInvalidItem, syntaxError(it))
	}
	return nil
}

// syntaxError says why json.Valid refused b ("exceeded max depth", "invalid
// character ..."), and where. It decodes b again, so it runs only for an
// item already refused.
func syntaxError(b []byte) string {
	var raw json.RawMessage
	err := json.Unmarshal(b, &raw)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "not valid JSON"
}

// ValidateItems validates every item of a batch, naming the first bad one.
func ValidateItems(items []Item, max int) error {
	for i, it := range items {
		if err := it.Validate(max); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

// CloneItems returns a deep copy of items.
func CloneItems(items []Item) []Item {
	if items == nil {
		return nil
	}
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = it.Clone()
	}
	return out
}

// Message returns a Responses API message item with one text part, the
// shape an agent loop stores for user and assistant turns. role is "user",
// "assistant", "system" or "developer".
func Message(role, text string) Item {
	partType := "input_text"
	if role == "assistant" {
		partType = "output_text"
	}
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}{Type: "message", Role: role, Content: []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{{Type: partType, Text: text}}})
	return b
}

// Text returns the concatenated text of a message item's content (a plain
// string or the text parts of a content array), or "" for other items.
func (it Item) Text() string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(it, &m) != nil {
		return ""
	}
	t, _ := partsText(m.Content)
	return t
}

// OutputText returns the output of a "*_call_output" item as text: the
// string, the concatenated text parts when the output is a list of
// content parts, else the output's JSON as it is. It returns "" for other
// items.
func (it Item) OutputText() string {
	var m struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(it, &m) != nil || m.Output == nil {
		return ""
	}
	if t, ok := partsText(m.Output); ok {
		return t
	}
	return string(m.Output)
}

// partsText reads raw as a plain string or a list of content parts,
// concatenating the parts' text; false when it is neither.
func partsText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}
