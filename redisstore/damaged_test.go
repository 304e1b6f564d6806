package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// TestDamagedElements plants log elements another program could leave:
// items that are not JSON objects, and elements that are no entry at all
// (no header, a bad header, a wrong seq, an empty kind, an item that only
// looks like a JSON object by its ends). Every reader
// skips them, never failing: Items and Pop leave them out, Load and
// Entries return the other entries and Load counts them in Meta.Corrupt;
// Verify reports the session; later appends go on as usual.
func TestDamagedElements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "damaged"}
	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"))...)
	elements := []struct{ data, kind string }{
		{`not json`, "item"},
		{"garbage without a header", ""},
		{"{\"k\":\"item\",\"t\":1}\n{\"a\":1}", "wrong seq"}, // handled below: the seq before it is wrong
		{"{\"t\":5}\n{\"a\":1}", ""},                         // no kind
		{"{\"k\":\"item\",\"t\":1.5}\n{\"a\":1}", ""},        // a time that is no µs count
		{"{\"k\":\"item\"\n{\"a\":1}", ""},                   // a header that does not decode
		{`[1,2]`, "item"},
		{`{x}`, "item"},
	}
	corrupt := 0
	for _, el := range elements {
		switch el.kind {
		case "wrong seq":
			// an element that claims another seq than its place in the log
			last, _ := s.Stat(ctx, k)
			if err := adminClient(t).RPush(ctx, s.k.log(k), "999\n"+el.data).Err(); err != nil {
				t.Fatal(err)
			}
			if err := adminClient(t).HSet(ctx, s.k.meta(k), "last", last.LastSeq+1).Err(); err != nil {
				t.Fatal(err)
			}
		default:
			plantElement(t, s, k, el.data, el.kind)
		}
		corrupt++
	}
	cSeq := mustAppend(t, s, k, item("c").Entry())
	plantElement(t, s, k, ` "newest, damaged" `, "item")
	corrupt++

	wantView := func(want ...string) {
		t.Helper()
		for _, limit := range []int{0, 1, 2, 10} {
			live, last, err := s.Items(ctx, k, limit)
			if err != nil {
				t.Fatalf("Items(%d): %v", limit, err)
			}
			w := want
			if limit > 0 && limit < len(w) {
				w = w[len(w)-limit:]
			}
			var got []string
			for _, l := range live {
				got = append(got, l.Item.Text())
			}
			m, _ := s.Stat(ctx, k)
			if strings.Join(got, ",") != strings.Join(w, ",") || last != m.LastSeq {
				t.Fatalf("Items(%d) = %q at seq %d, want %q at seq %d", limit, got, last, w, m.LastSeq)
			}
		}
	}
	wantView("a", "b", "c")
	m, entries, err := s.Load(ctx, k)
	if err != nil {
		t.Fatalf("Load of a damaged log: %v", err)
	}
	if m.Corrupt != corrupt || m.ItemCount != 3 || m.LastSeq != cSeq+1 {
		t.Errorf("Load's metadata: Corrupt %d, ItemCount %d, LastSeq %d; want %d, 3, %d", m.Corrupt, m.ItemCount, m.LastSeq, corrupt, cSeq+1)
	}
	if want := int(m.LastSeq) - 6; len(entries) != want { // the six elements that are no entry are left out
		t.Errorf("Load returned %d entries, want %d", len(entries), want)
	}
	page, err := s.Entries(ctx, k, 0, 0)
	if err != nil || len(page) != len(entries) {
		t.Errorf("Entries = %d entries, %v; want %d", len(page), err, len(entries))
	}
	if err := storekit.VerifySession(ctx, s, k); !errors.Is(err, recall.ErrCorrupt) || !strings.Contains(err.Error(), k.String()) {
		t.Errorf("VerifySession of the damaged session = %v, want ErrCorrupt naming it", err)
	}
	for _, want := range []string{"c", "b", "a"} {
		it, err := s.Pop(ctx, k)
		if err != nil || it.Text() != want {
			t.Fatalf("Pop = %s, %v; want %s", it, err, want)
		}
	}
	if it, err := s.Pop(ctx, k); it != nil || err != nil {
		t.Fatalf("Pop of a view holding only damaged elements = %s, %v", it, err)
	}
	wantView()
	mustAppend(t, s, k, item("d").Entry())
	wantView("d")
	if m, _, _ := s.Load(ctx, k); m.Corrupt != corrupt || m.ItemCount != 1 {
		t.Errorf("after the pops: Corrupt %d, ItemCount %d; want %d, 1", m.Corrupt, m.ItemCount, corrupt)
	}
	if err := s.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	verify(t, s)
}

// TestPopSkipsWhatItemsSkips plants, as the newest element, items at the
// edge of the readers' check (recall.Entry.Item and a full JSON check):
// Unicode white space around an object, a zero-width space, a lone brace,
// objects that are not JSON by a byte. The pop script, which checks in
// Lua, takes exactly those the Go readers keep in the view, so Pop and
// Items agree.
func TestPopSkipsWhatItemsSkips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	for i, data := range []string{
		`{}`, ` {"a":1} `, "\t\r\n{}\v\f", "\u00a0{}\u0085", "\u3000{\"a\":1}\u2028", "\u2000\u200a{}\u202f\u205f\u1680\u2029",
		"{", "}", ` { `, "\u200b{}", "{}\u200b", "x{}", `{}x`, `[]`, `""`, "\xc2{}", "{}\xa0", "\xe2\x80{}",
		`{x}`, `{"a":}`, `{"a":1,}`, `{"a":1}}`, `{"a":1} {"b":2}`, `{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}",
		"\t{\"a\":[1,2.5e-3,true,null,{}]}\r\n", "{\"a\":\"\xff\xfe\"}", `{"a":"\ud800"}`, `{"a":1,"a":2}`,
	} {
		k := recall.Key{Project: "p", Session: "s" + strconv.Itoa(i)}
		mustAppend(t, s, k, item("valid").Entry())
		seq := plantElement(t, s, k, data, "item")
		_, ok := recall.Entry.Item(recall.Entry{Kind: recall.KindItem, Data: []byte(data)})
		ok = ok && json.Valid([]byte(data))
		live, _, err := s.Items(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(live) == 2 && live[1].Ref.Seq == seq; got != ok {
			t.Errorf("%q: in the view %t, want %t", data, got, ok)
		}
		it, err := s.Pop(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if popped := bytes.Equal(it, []byte(data)); popped != ok {
			t.Errorf("%q: Pop took it %t, want %t", data, popped, ok)
		}
		if err := s.Remove(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
}

// luaJSONScript runs lua/common.lua's checks over ARGV[2:]: for each, 1
// when isjson holds, plus 2 when isitem does.
var luaJSONScript = redis.NewScript(luaCommon + `
local r = {}
for i = 2, #ARGV do
  local v = 0
  if isjson(ARGV[i]) then v = v + 1 end
  if isitem(ARGV[i]) then v = v + 2 end
  r[#r + 1] = v
end
return r`)

// TestLuaJSONAgrees holds the pop script's JSON check (lua/common.lua's
// isjson, and isitem for an item) to the Go readers' (jsonvalid.Valid, and
// recall.Entry.Item with it), on edge cases of the grammar (escapes, numbers,
// white space, invalid UTF-8, nesting 10,000 and 10,001 deep) and on
// random mutations of them and of storetest's verbatim items: Pop and
// Items must agree on what an item is.
func TestLuaJSONAgrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := adminClient(t)
	corpus := []string{
		``, ` `, `{}`, `[]`, `1`, `"x"`, `null`, `true`, `false`, `-0`, `-0.0e+5`, `1E400`, `{"a":1}`,
		" \t\r\n{\"a\" : [ 1e5, -0.0, true, null, {} ] } \n", `{"a":1,"a":2}`, "{\"a\":\"\xff\xfe\"}", "{\"\xc3\":1}",
		`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":"\u0000"}`, "{\"a\":\"\x00\"}", "{\"a\":\"\x1f\"}", "{\"a\":\"\x7f\"}",
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"\"\\\/\b\f\n\r\t"}`, `{"a":"\`, `{"a":"`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e}`, `{"a":1e+}`, `{"a":0x1}`, `{"a":-}`, `{"a":--1}`, `{"a":-01}`,
		`{"a":1,}`, `[1,]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{'a':1}`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `[,1]`,
		`{} {}`, `{}x`, `x{}`, `{x}`, `{"a":1}}`, `{{}}`, `[[]`, `[]]`, `{"a":[}`, `{"a":{]}`,
		`NaN`, `Infinity`, `tru`, `nul`, `truex`, `[true1]`, `[nulll]`, `[fals]`, "\ufeff{}", "\u00a0{}", "{}\u00a0", "\v{}", "{}\f",
		`{"a":1}` + "\x00", "\x00" + `{"a":1}`, `{"a":` + strings.Repeat("9", 400) + `}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, it := range storetest.VerbatimItems() {
		corpus = append(corpus, string(it))
	}
	// Mutations: a byte of JSON's grammar, or one it refuses, put in,
	// over, or taken out, anywhere.
	rng := testkit.Rand(t)
	marks := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, " ", "\n", "\x00", "\x1f", "\x7f", "\xff", "0", "1", "-", "+", ".", "e", "E", "u", "x", "t", "n", "/"}
	inputs := append([]string(nil), corpus...)
	for range testkit.Size(3000, 30000) {
		s := corpus[rng.IntN(len(corpus))]
		if len(s) > 4096 {
			continue // the deep ones
		}
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(s) + 1)
			b := marks[rng.IntN(len(marks))]
			switch j := min(i+1, len(s)); rng.IntN(3) {
			case 0:
				s = s[:i] + b + s[i:]
			case 1:
				s = s[:i] + b + s[j:]
			default:
				s = s[:i] + s[j:]
			}
		}
		inputs = append(inputs, s)
	}
	for start := 0; start < len(inputs); start += 500 {
		batch := inputs[start:min(start+500, len(inputs))]
		args := []any{"unused-prefix:"}
		for _, s := range batch {
			args = append(args, s)
		}
		got, err := luaJSONScript.Run(ctx, rdb, nil, args...).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range batch {
			valid := jsonvalid.Valid([]byte(s))
			_, looks := recall.Entry.Item(recall.Entry{Kind: recall.KindItem, Data: []byte(s)})
			if lj, li := got[i]&1 != 0, got[i]&2 != 0; lj != valid || li != (looks && valid) {
				t.Errorf("%.80q: Lua says JSON %t, item %t; Go says %t, %t", s, lj, li, valid, looks && valid)
			}
		}
	}
}
