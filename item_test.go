package recall_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

func TestItemValidate(t *testing.T) {
	valid := []string{
		`{}`,
		`{"type":"message","role":"user","content":"hi"}`,
		"  {\n\t\"a\": [1, 2]\n}\r\n",
		`{"a":1,"a":2}`,
		`{"s":"\ud800"}`,
		`{"big":123456789012345678901234567890}`,
	}
	for _, it := range valid {
		if err := recall.Item(it).Validate(0); err != nil {
			t.Errorf("Validate(%q): %v", it, err)
		}
	}
	invalid := []string{
		"", " ", "\n\t", "null", "true", "0", `"str"`, "[]", `[{}]`, "{", "}", `{"a"}`,
		`{"a":1,}`, `{"a":1}}`, `{}{}`, `{} {}`, "{}\x00", "\x00{}", "garbage", `{'a':1}`,
		"\ufeff{}", // a byte-order mark is not JSON whitespace
	}
	for _, it := range invalid {
		if err := recall.Item(it).Validate(0); !errors.Is(err, recall.ErrInvalidItem) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidItem", it, err)
		}
	}
	if err := recall.Item(nil).Validate(0); !errors.Is(err, recall.ErrInvalidItem) {
		t.Errorf("Validate(nil) = %v, want ErrInvalidItem", err)
	}

	// Size limits: max counts bytes; max <= 0 is the default.
	it := recall.Item(`{"a":"` + strings.Repeat("x", 100) + `"}`)
	if err := it.Validate(len(it)); err != nil {
		t.Errorf("an item of exactly max bytes: %v", err)
	}
	if err := it.Validate(len(it) - 1); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("an item over max = %v, want ErrTooLarge", err)
	}
	big := recall.Item(`{"a":"` + strings.Repeat("x", 1<<20) + `"}`)
	if err := big.Validate(0); err != nil {
		t.Errorf("a 1 MiB item under the default limit: %v", err)
	}
	huge := make(recall.Item, recall.DefaultMaxItemSize+1)
	if err := huge.Validate(-1); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("an item over the default limit = %v, want ErrTooLarge", err)
	}

	err := recall.ValidateItems([]recall.Item{recall.Item(`{}`), recall.Item(`[]`)}, 0)
	if !errors.Is(err, recall.ErrInvalidItem) || !strings.Contains(err.Error(), "item 1") {
		t.Errorf("ValidateItems = %v, want ErrInvalidItem naming item 1", err)
	}
}

func TestValidateEntries(t *testing.T) {
	good := []recall.Entry{
		recall.Message("user", "hi").Entry(),
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser}),
		recall.NewEntry(recall.KindMeta, recall.MetaChange{}),
		recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 1}),
		{Kind: recall.KindClear},
		recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: 3, Items: []recall.Item{recall.Item(`{}`)}}),
		recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: recall.Key{Project: "p", Session: "s"}, Seq: 2}),
		{Kind: "x-from-the-future", Data: json.RawMessage(`{"anything":true}`)},
		{Kind: "x-from-the-future"},
	}
	if err := storekit.ValidateEntries(good, 0); err != nil {
		t.Errorf("ValidateEntries(good): %v", err)
	}
	bad := []recall.Entry{
		{Kind: ""},
		{Kind: recall.KindItem, Data: json.RawMessage(`[1]`)},
		{Kind: recall.KindItem},
		{Kind: recall.KindTitle, Data: json.RawMessage(`"t"`)},
		{Kind: recall.KindTitle},
		{Kind: recall.KindMeta, Data: json.RawMessage(`{"archived":"yes"}`)},
		{Kind: recall.KindPop, Data: json.RawMessage(`{"seq":"1"}`)},
		{Kind: recall.KindCompaction, Data: json.RawMessage(`{"items":[1]}`)},
		{Kind: recall.KindCompaction, Data: json.RawMessage(`{"items":[{}, "x"]}`)},
		{Kind: recall.KindFork, Data: json.RawMessage(`[]`)},
	}
	for _, e := range bad {
		err := storekit.ValidateEntries([]recall.Entry{good[0], e}, 0)
		if !errors.Is(err, recall.ErrInvalidItem) || !strings.Contains(err.Error(), "entry 1") {
			t.Errorf("ValidateEntries(%q %s) = %v, want ErrInvalidItem naming entry 1", e.Kind, e.Data, err)
		}
	}
	// A compaction's items obey the size limit too.
	c := recall.NewEntry(recall.KindCompaction, recall.Compaction{Items: []recall.Item{recall.Item(`{"a":"` + strings.Repeat("x", 50) + `"}`)}})
	if err := storekit.ValidateEntries([]recall.Entry{c}, 20); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("an oversized compaction item = %v, want ErrTooLarge", err)
	}
}

func TestItemFields(t *testing.T) {
	cases := []struct {
		item                    string
		typ, role, callID, text string
	}{
		{`{"type":"message","role":"user","content":"hello"}`, "message", "user", "", "hello"},
		{`{"role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}`, "message", "assistant", "", "ab"},
		{`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`, "function_call", "", "c1", ""},
		{`{"type":"function_call_output","call_id":"c1","output":"42"}`, "function_call_output", "", "c1", ""},
		{`{"type":"reasoning","summary":[]}`, "reasoning", "", "", ""},
		{`{}`, "", "", "", ""},
		{`not json`, "", "", "", ""},
	}
	for _, c := range cases {
		it := recall.Item(c.item)
		if it.Type() != c.typ || it.Role() != c.role || it.CallID() != c.callID || it.Text() != c.text {
			t.Errorf("%s: type %q role %q call %q text %q; want %q %q %q %q",
				c.item, it.Type(), it.Role(), it.CallID(), it.Text(), c.typ, c.role, c.callID, c.text)
		}
	}
}

func TestOutputText(t *testing.T) {
	for item, want := range map[string]string{
		`{"type":"function_call_output","call_id":"c1","output":"42"}`:                                                 "42",
		`{"type":"function_call_output","output":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`: "ab",
		`{"type":"custom_tool_call_output","output":{"rows":3}}`:                                                       `{"rows":3}`,
		`{"type":"message","role":"user","content":"hello"}`:                                                           "",
		`not json`: "",
	} {
		if got := recall.Item(item).OutputText(); got != want {
			t.Errorf("%s: OutputText = %q, want %q", item, got, want)
		}
	}
}

func TestMessage(t *testing.T) {
	u := recall.Message("user", `say "hi" <b>`)
	if err := u.Validate(0); err != nil {
		t.Fatal(err)
	}
	if u.Type() != "message" || u.Role() != "user" || u.Text() != `say "hi" <b>` {
		t.Errorf("Message(user) = %s", u)
	}
	if !strings.Contains(string(u), `"input_text"`) {
		t.Errorf("a user message's part should be input_text: %s", u)
	}
	if a := recall.Message("assistant", "ok"); !strings.Contains(string(a), `"output_text"`) {
		t.Errorf("an assistant message's part should be output_text: %s", a)
	}
}

func TestItemCopies(t *testing.T) {
	it := recall.Item(`{"a": 1}`)
	c := it.Clone()
	c[2] = 'X'
	if string(it) != `{"a": 1}` {
		t.Errorf("Clone shares memory: %s", it)
	}
	if recall.Item(nil).Clone() != nil {
		t.Errorf("Clone(nil) is not nil")
	}
	items := []recall.Item{it, recall.Item(`{}`)}
	cs := recall.CloneItems(items)
	cs[0][0] = 'X'
	if items[0][0] != '{' {
		t.Errorf("CloneItems shares memory")
	}
	if recall.CloneItems(nil) != nil {
		t.Errorf("CloneItems(nil) is not nil")
	}

	// MarshalJSON hands the bytes over as they are; UnmarshalJSON copies.
	raw := []byte(" {\"b\" : 2} ")
	if b, err := recall.Item(raw).MarshalJSON(); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("MarshalJSON = %q, %v", b, err)
	}
	if b, _ := recall.Item(nil).MarshalJSON(); string(b) != "null" {
		t.Errorf("MarshalJSON of an empty item = %q, want null", b)
	}
	var got recall.Item
	if err := got.UnmarshalJSON(raw); err != nil || !bytes.Equal(got, raw) {
		t.Errorf("UnmarshalJSON = %q, %v", got, err)
	}
	raw[1] = 'X'
	if got[1] == 'X' {
		t.Errorf("UnmarshalJSON kept the decoder's buffer")
	}
	var wrapped struct{ Item recall.Item }
	if err := json.Unmarshal([]byte(`{"Item": {"c" :  [1 ,2]} }`), &wrapped); err != nil || string(wrapped.Item) != `{"c" :  [1 ,2]}` {
		t.Errorf("decoding keeps the item's bytes: %q, %v", wrapped.Item, err)
	}
}
