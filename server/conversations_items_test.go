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

// TestQuote: appendQuoted writes what encoding/json writes, on its fast
// path (plain ASCII) and off it.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "recall-12", "recall-7.3", "msg_abc", `a"b`, `a\b`, "a<b>&c", "tab\there", "nul\x00", "é", "\u2028", "\xff", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := appendQuoted([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendQuoted(x, %q) = %s, want x%s", s, got, want)
		}
	}
}

// headCases are items whose heads are easy to get wrong: members twice,
// ids in nested values and strings, escapes, whitespace, every kind of
// value.
var headCases = []string{
	`{}`, ` { } `, `{"id":"msg_1"}`, `{"id":""}`, `{"id":null}`, `{"id":7}`, `{"id":-1.5e3}`,
	`{"id":true}`, `{"id":false}`, `{"id":{"id":"x"}}`, `{"id":["a",{"id":"b"}]}`,
	`{"id":"a","id":"b"}`, `{"id":null,"id":"b"}`, `{"role":"","role":"user"}`, `{"role":"user","role":""}`,
	`{"type":null}`, `{"type":"x","role":"user"}`, `{"role":"user"}`, `{"role":7}`, `{"role":"\u0075"}`,
	`{"content":"say \"id\":\"x\"","id":"y"}`, `{"z":"\\","id":"q"}`, `{"z":"a\\\"b","role":"r"}`,
	`{"i\u0064":"x"}`, `{"id":"a\"b"}`, `{"id":"\u00e9"}`, `{"id":"é"}`,
	"{\n  \"type\": \"x\",\n  \"id\" :\t\"m\"\r\n}", `{"a":[[[{"b":"}"}]]],"id":"n"}`, `{"a":{"id":"in"},"type":"t"}`,
	`{"a":"]","b":"}","c":"{","role":"user"}`, `{"n":0,"m":-0.1,"t":true,"f":false,"x":null,"id":"last"}`,
	`[1,2]`, `"s"`, `7`, `null`,
}

// TestHeadOf checks the one-pass scan against gjson (gjsonHead, what
// headOf falls back to): on every item, headOf must say what gjson says.
func TestHeadOf(t *testing.T) {
	for _, it := range headCases {
		if !json.Valid([]byte(it)) {
			t.Fatalf("case %s is not JSON", it)
		}
		want := gjsonHead([]byte(it))
		if got := headOf(recall.Item(it)); got != want {
			t.Errorf("headOf(%s) = %+v, want %+v", it, got, want)
		}
	}
	// The scan must read the plain cases itself, not leave them to gjson.
	for _, it := range []string{`{}`, `{"id":"a","id":"b"}`, `{"z":"a\\\"b","role":"r"}`, `{"a":[[[{"b":"}"}]]],"id":"n"}`} {
		if _, ok := scanHead([]byte(it)); !ok {
			t.Errorf("scanHead(%s) left it to gjson", it)
		}
	}
}

// FuzzHeadOf: on any JSON object, the scan either reads what gjson reads
// or leaves the item to it.
func FuzzHeadOf(f *testing.F) {
	for _, it := range headCases {
		f.Add(it)
	}
	f.Fuzz(func(t *testing.T, it string) {
		if !json.Valid([]byte(it)) {
			return
		}
		if h, ok := scanHead([]byte(it)); ok {
			if want := gjsonHead([]byte(it)); h != want {
				t.Errorf("scanHead(%s) = %+v, gjson reads %+v", it, h, want)
			}
		}
	})
}

// TestAppendItemID: a derived id appended is derivedID's text, quoted.
func TestAppendItemID(t *testing.T) {
	for _, ref := range []recall.ItemRef{{Seq: 1}, {Seq: 9}, {Seq: 1234567890123}, {Seq: 7, Index: 1}, {Seq: 42, Index: 12}} {
		want, _ := json.Marshal(derivedID(ref))
		if got := appendItemID(nil, itemHead{}, ref); string(got) != string(want) {
			t.Errorf("appendItemID(%+v) = %s, want %s", ref, got, want)
		}
	}
	if got := appendItemID(nil, itemHead{id: `m"1`, hasID: true}, recall.ItemRef{Seq: 3}); string(got) != `"m\"1"` {
		t.Errorf("own id appended as %s", got)
	}
}
