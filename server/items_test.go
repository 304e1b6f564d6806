package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// TestShow checks what the API sends for a stored item: its bytes, with
// only an id (and an easy message's type) added, or a bad id replaced,
// and always one "id" member holding the id the item is known by.
func TestShow(t *testing.T) {
	ref := recall.ItemRef{Seq: 9}
	for _, tc := range []struct{ stored, want string }{
		{`{"type":"message","id":"msg_1","role":"user"}`, `{"type":"message","id":"msg_1","role":"user"}`},
		{`{"type":"function_call","name":"f"}`, `{"id":"recall-9","type":"function_call","name":"f"}`},
		{`{"role":"user","content":"hi"}`, `{"id":"recall-9","type":"message","role":"user","content":"hi"}`},
		{`{}`, `{"id":"recall-9"}`},
		{` { } `, ` {"id":"recall-9" } `},
		{"{\n  \"type\": \"x\"\n}", "{\"id\":\"recall-9\",\n  \"type\": \"x\"\n}"},
		{`{"id":null,"type":"x"}`, `{"id":"recall-9","type":"x"}`},
		{`{"type":"x","id":7}`, `{"id":"recall-9","type":"x"}`},
		{`{"type":"x", "id" : "" , "z":[1,{"id":2}]}`, `{"id":"recall-9","type":"x" , "z":[1,{"id":2}]}`},
		{`{ "id": {"nested":"x"} }`, `{"id":"recall-9" }`},
		{`{"id":null}`, `{"id":"recall-9"}`},
	} {
		got := show(recall.LiveItem{Ref: ref, Item: recall.Item(tc.stored)})
		if string(got.json) != tc.want {
			t.Errorf("show(%s) = %s, want %s", tc.stored, got.json, tc.want)
		}
		if !json.Valid(got.json) || strings.Count(string(got.json), `"id"`) != 1+strings.Count(tc.stored, `{"id":2}`) {
			t.Errorf("show(%s) = %s: not JSON with one id", tc.stored, got.json)
		}
		var h struct{ ID string }
		if json.Unmarshal(got.json, &h) != nil || h.ID != got.id || got.id != itemID(recall.LiveItem{Ref: ref, Item: recall.Item(tc.stored)}) {
			t.Errorf("show(%s): id %q, JSON id %q", tc.stored, got.id, h.ID)
		}
	}
}

// TestQuote: quote writes what encoding/json writes, on its fast path
// (plain ASCII) and off it.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "recall-12", "recall-7.3", "msg_abc", `a"b`, `a\b`, "a<b>&c", "tab\there", "nul\x00", "é", "\u2028", "\xff", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := quote(s); got != string(want) {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}
