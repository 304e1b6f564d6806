package redisstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// TestDamagedElements plants log elements another program could leave:
// items that are not JSON objects, and elements that are no entry at all
// (no header, a bad header, a wrong seq, an empty kind). Every reader
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
	cSeq := mustAppend(t, s, k, recall.ItemEntry(item("c")))
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
	if want := int(m.LastSeq) - 5; len(entries) != want { // the five elements that are no entry are left out
		t.Errorf("Load returned %d entries, want %d", len(entries), want)
	}
	page, err := s.Entries(ctx, k, 0, 0)
	if err != nil || len(page) != len(entries) {
		t.Errorf("Entries = %d entries, %v; want %d", len(page), err, len(entries))
	}
	if err := recall.VerifySession(ctx, s, k); !errors.Is(err, recall.ErrCorrupt) || !strings.Contains(err.Error(), k.String()) {
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
	mustAppend(t, s, k, recall.ItemEntry(item("d")))
	wantView("d")
	if m, _, _ := s.Load(ctx, k); m.Corrupt != corrupt || m.ItemCount != 1 {
		t.Errorf("after the pops: Corrupt %d, ItemCount %d; want %d, 1", m.Corrupt, m.ItemCount, corrupt)
	}
	if err := s.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	verify(t, s)
}

// TestPopSkipsWhatItemOfRefuses plants, as the newest element, items at
// the edge of recall.ItemOf's check (Unicode white space around an
// object, a zero-width space, a lone brace): the pop script, which checks
// in Lua, takes exactly those ItemOf accepts, as Items does.
func TestPopSkipsWhatItemOfRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	for i, data := range []string{
		`{}`, ` {"a":1} `, "\t\r\n{}\v\f", "\u00a0{}\u0085", "\u3000{\"a\":1}\u2028", "\u2000\u200a{}\u202f\u205f\u1680\u2029",
		"{", "}", ` { `, "\u200b{}", "{}\u200b", "x{}", `{}x`, `[]`, `""`, "\xc2{}", "{}\xa0", "\xe2\x80{}",
	} {
		k := recall.Key{Project: "p", Session: "s" + string(rune('a'+i))}
		mustAppend(t, s, k, recall.ItemEntry(item("valid")))
		seq := plantElement(t, s, k, data, "item")
		_, ok := recall.ItemOf(recall.Entry{Kind: recall.KindItem, Data: []byte(data)})
		live, _, err := s.Items(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(live) == 2 && live[1].Ref.Seq == seq; got != ok {
			t.Errorf("%q: in the view %t, ItemOf says %t", data, got, ok)
		}
		it, err := s.Pop(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if popped := bytes.Equal(it, []byte(data)); popped != ok {
			t.Errorf("%q: Pop took it %t, ItemOf says %t", data, popped, ok)
		}
		if err := s.Remove(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
}
