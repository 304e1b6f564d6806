package recall_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

var testKey = recall.Key{Project: "p", Session: "s"}

// numbered gives entries seqs from 1 and times a second apart.
func numbered(entries ...recall.Entry) []recall.Entry {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]recall.Entry, len(entries))
	for i, e := range entries {
		e.Seq = int64(i + 1)
		e.Time = base.Add(time.Duration(i) * time.Second)
		out[i] = e
	}
	return out
}

func item(s string) recall.Entry { return recall.Item(`{"t":"` + s + `"}`).Entry() }

func texts(live []recall.LiveItem) []string {
	out := make([]string, len(live))
	for i, l := range live {
		var v struct{ T string }
		if json.Unmarshal(l.Item, &v) != nil {
			out[i] = string(l.Item)
			continue
		}
		out[i] = v.T
	}
	return out
}

func TestReplay(t *testing.T) {
	pop := func(seq int64, index int) recall.Entry {
		return recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: seq, Index: index})
	}
	comp := func(through int64, items ...string) recall.Entry {
		c := recall.Compaction{Through: through}
		for _, s := range items {
			c.Items = append(c.Items, recall.Item(`{"t":"`+s+`"}`))
		}
		return recall.NewEntry(recall.KindCompaction, c)
	}
	cases := []struct {
		name string
		log  []recall.Entry
		want []string
	}{
		{"empty", nil, []string{}},
		{"items", numbered(item("a"), item("b")), []string{"a", "b"}},
		{"pop", numbered(item("a"), item("b"), pop(2, 0)), []string{"a"}},
		{"pop of the middle", numbered(item("a"), item("b"), item("c"), pop(2, 0)), []string{"a", "c"}},
		{"pop of nothing", numbered(item("a"), pop(9, 0)), []string{"a"}},
		{"pop twice", numbered(item("a"), item("b"), pop(2, 0), pop(2, 0)), []string{"a"}},
		{"clear", numbered(item("a"), recall.Entry{Kind: recall.KindClear}, item("b")), []string{"b"}},
		{"compaction", numbered(item("a"), item("b"), comp(2, "sum", "b"), item("c")), []string{"sum", "b", "c"}},
		{"pop into a compaction", numbered(item("a"), comp(1, "sum", "a"), pop(2, 1)), []string{"sum"}},
		{"pop of a replaced item", numbered(item("a"), comp(1, "sum"), pop(1, 0)), []string{"sum"}},
		{"compaction after clear", numbered(item("a"), recall.Entry{Kind: recall.KindClear}, comp(2, "s")), []string{"s"}},
		{"undecodable compaction", numbered(item("a"), recall.Entry{Kind: recall.KindCompaction, Data: json.RawMessage(`{"items":7}`)}), []string{"a"}},
		{"unknown kinds", numbered(item("a"), recall.Entry{Kind: "x-new", Data: json.RawMessage(`{}`)}, item("b")), []string{"a", "b"}},
		{"titles and meta", numbered(item("a"), recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleAuto}), recall.NewEntry(recall.KindMeta, recall.MetaChange{})), []string{"a"}},
	}
	for _, c := range cases {
		_, live := recall.Replay(testKey, c.log)
		if got := texts(live); !slices.Equal(got, c.want) {
			t.Errorf("%s: Replay view %q, want %q", c.name, got, c.want)
		}
		tail, err := storekit.Tail(0, storekit.Backwards(c.log))
		if err != nil || !slices.Equal(texts(tail), c.want) {
			t.Errorf("%s: Tail view %q, %v; want %q", c.name, texts(tail), err, c.want)
		}
	}
}

// logGen draws a random log. With valid, pops name only items of the
// current view, as a store writes them; otherwise they name anything.
func logGen(valid bool) *rapid.Generator[[]recall.Entry] {
	return rapid.Custom(func(t *rapid.T) []recall.Entry {
		var log []recall.Entry
		var live []recall.LiveItem
		n := rapid.IntRange(0, 40).Draw(t, "len")
		for i := range n {
			seq := int64(i + 1)
			var e recall.Entry
			switch rapid.SampledFrom([]string{"item", "item", "item", "pop", "pop", "remove", "clear", "compaction", "title", "meta", "create", "unknown", "garbage", "damaged"}).Draw(t, "kind") {
			case "item":
				e = recall.Item(fmt.Sprintf(`{"t":"i%d"}`, seq)).Entry()
			case "pop", "remove":
				ref := recall.ItemRef{Seq: rapid.Int64Range(0, seq).Draw(t, "refSeq"), Index: rapid.IntRange(0, 2).Draw(t, "refIndex")}
				if valid {
					if len(live) == 0 {
						continue
					}
					ref = live[rapid.IntRange(0, len(live)-1).Draw(t, "which")].Ref
				}
				e = recall.NewEntry(recall.KindPop, ref)
				if rapid.Bool().Draw(t, "remove") {
					e.Kind = recall.KindRemove
				}
			case "clear":
				e = recall.Entry{Kind: recall.KindClear}
			case "compaction":
				c := recall.Compaction{Through: seq - 1, Replaced: len(live)}
				for j := range rapid.IntRange(0, 3).Draw(t, "summary") {
					c.Items = append(c.Items, recall.Item(fmt.Sprintf(`{"t":"c%d.%d"}`, seq, j)))
				}
				e = recall.NewEntry(recall.KindCompaction, c)
			case "title":
				e = recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleAuto})
			case "meta":
				v := fmt.Sprint(seq)
				e = recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: map[string]*string{"k": &v}})
			case "create":
				e = recall.Entry{Kind: recall.KindCreate}
			case "damaged":
				// an item that is not a JSON object, as another program
				// might leave: readers skip it and count it
				e = recall.Entry{Kind: recall.KindItem, Data: json.RawMessage(rapid.SampledFrom([]string{`[1]`, `"s"`, `42`, `null`, `{"a":1`}).Draw(t, "damage"))}
			case "unknown":
				e = recall.Entry{Kind: "x-unknown", Data: json.RawMessage(`{"t":"ignored"}`)}
			case "garbage":
				// payloads that do not decode: readers skip them
				e = recall.Entry{Kind: rapid.SampledFrom([]recall.Kind{recall.KindPop, recall.KindCompaction, recall.KindTitle}).Draw(t, "garbageKind"), Data: json.RawMessage(`[`)}
			}
			e.Seq = int64(len(log) + 1)
			log = append(log, e)
			_, live = recall.Replay(testKey, log)
		}
		return log
	})
}

// Tail(limit) reads a log backwards and must agree with the last limit
// items of Replay, refs included, on any log.
func TestTailAgreesWithReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		log := logGen(rapid.Bool().Draw(t, "valid")).Draw(t, "log")
		_, live := recall.Replay(testKey, log)
		for limit := -1; limit <= len(live)+2; limit++ {
			want := live
			if limit > 0 && limit < len(want) {
				want = want[len(want)-limit:]
			}
			got, err := storekit.Tail(limit, storekit.Backwards(log))
			if err != nil {
				t.Fatalf("Tail(%d): %v", limit, err)
			}
			if !slices.EqualFunc(got, want, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
				t.Fatalf("Tail(%d) = %v\nReplay's last %d = %v", limit, texts(got), limit, texts(want))
			}
		}
	})
}

// On logs a store writes, the item count kept by Meta.Apply is the length
// of the view, and LastSeq the last seq.
func TestReplayMetaCountsView(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		log := logGen(true).Draw(t, "log")
		m, live := recall.Replay(testKey, log)
		if m.ItemCount != len(live) {
			t.Fatalf("ItemCount %d, view has %d", m.ItemCount, len(live))
		}
		if n := len(log); n > 0 && m.LastSeq != log[n-1].Seq || n == 0 && m.LastSeq != 0 {
			t.Fatalf("LastSeq %d for a log of %d", m.LastSeq, n)
		}
	})
}

// Tail stops reading at a clear or a compaction, and once it has limit
// items: it costs O(limit), not the length of the log.
func TestTailReadsOnlyTheEnd(t *testing.T) {
	var entries []recall.Entry
	for i := range 1000 {
		entries = append(entries, item(fmt.Sprint(i)))
	}
	log := numbered(entries...)
	read := 0
	counting := func(yield func(recall.Entry, error) bool) {
		for e, err := range storekit.Backwards(log) {
			read++
			if !yield(e, err) {
				return
			}
		}
	}
	got, err := storekit.Tail(20, counting)
	if err != nil || len(got) != 20 || read != 20 {
		t.Errorf("Tail(20) of 1000 items read %d entries and returned %d, %v", read, len(got), err)
	}

	log = numbered(append(append(slices.Clone(entries), recall.Entry{Kind: recall.KindClear}), item("after"))...)
	read = 0
	if got, _ := storekit.Tail(0, counting); len(got) != 1 || read != 2 {
		t.Errorf("Tail(0) after a clear read %d entries, returned %d items", read, len(got))
	}

	// An error from the reader stops Tail.
	boom := errors.New("disk on fire")
	failing := iter.Seq2[recall.Entry, error](func(yield func(recall.Entry, error) bool) {
		yield(recall.Entry{}, boom)
	})
	if _, err := storekit.Tail(5, failing); !errors.Is(err, boom) {
		t.Errorf("Tail with a failing reader = %v", err)
	}
}

func TestMetaApply(t *testing.T) {
	yes, no := true, false
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(e recall.Entry, seq int64, d time.Duration) recall.Entry {
		e.Seq, e.Time = seq, t0.Add(d)
		return e
	}
	title := func(s string, src recall.TitleSource) recall.Entry {
		return recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: s, Source: src})
	}
	withUsage := item("u")
	withUsage.Usage = &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	log := []recall.Entry{
		at(item("a"), 1, 0),
		at(withUsage, 2, time.Minute),
		at(title("Auto", recall.TitleAuto), 3, 2*time.Minute),
		at(title("Mine", recall.TitleUser), 4, time.Second), // an older time does not move Updated back
		at(title("Auto 2", recall.TitleAuto), 5, 3*time.Minute),
		at(recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes, Pinned: &yes, Labels: []string{"x", "y"}}), 6, 3*time.Minute),
		at(recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &no}), 7, 3*time.Minute),
		at(recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 2}), 8, 3*time.Minute),
		at(recall.Entry{Kind: "x-unknown", Data: json.RawMessage(`{`)}, 9, 4*time.Minute),
		at(recall.Entry{Kind: recall.KindTitle, Data: json.RawMessage(`{`)}, 10, 4*time.Minute),
	}
	m, _ := recall.Replay(testKey, log)
	want := recall.Meta{
		Key: testKey, Title: "Mine", TitleSource: recall.TitleUser,
		// Updated is the pop's time: titles, meta entries and unknown
		// kinds are not conversation activity.
		Created: t0, Updated: t0.Add(3 * time.Minute),
		ItemCount: 1, LastSeq: 10, Archived: false, Pinned: true, Labels: []string{"x", "y"},
		Usage: recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3},
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("Replay meta\n got %+v\nwant %+v", m, want)
	}

	// Title and meta changes never move Updated, however late.
	m3 := m.Clone()
	m3.Apply(at(title("Later", recall.TitleUser), 11, time.Hour))
	m3.Apply(at(recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &no}), 12, 2*time.Hour))
	if !m3.Updated.Equal(m.Updated) {
		t.Errorf("a title and a pin moved Updated to %v", m3.Updated)
	}
	// A session whose first entry is a title starts Updated there.
	var m4 recall.Meta
	m4.Apply(at(title("First", recall.TitleUser), 1, time.Minute))
	if !m4.Updated.Equal(t0.Add(time.Minute)) || !m4.Created.Equal(m4.Updated) {
		t.Errorf("first entry a title: Created %v Updated %v", m4.Created, m4.Updated)
	}
	// An item that is not a JSON object is counted as corrupt, not as an item.
	m4.Apply(at(recall.Entry{Kind: recall.KindItem, Data: json.RawMessage(`[1]`)}, 2, 2*time.Minute))
	if m4.ItemCount != 0 || m4.Corrupt != 1 {
		t.Errorf("a damaged item: ItemCount %d Corrupt %d, want 0 and 1", m4.ItemCount, m4.Corrupt)
	}
	// Metadata: set, merge, delete and clear.
	v := func(s string) *string { return &s }
	md := func(c recall.MetaChange) recall.Entry { return recall.NewEntry(recall.KindMeta, c) }
	m4.Apply(at(md(recall.MetaChange{Metadata: map[string]*string{"a": v("1"), "b": v("2")}}), 3, 0))
	m4.Apply(at(md(recall.MetaChange{Metadata: map[string]*string{"a": nil, "c": v("3")}}), 4, 0))
	if fmt.Sprint(m4.Metadata) != "map[b:2 c:3]" {
		t.Errorf("merged metadata %v", m4.Metadata)
	}
	m4.Apply(at(md(recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"d": v("4")}}), 5, 0))
	if fmt.Sprint(m4.Metadata) != "map[d:4]" {
		t.Errorf("replaced metadata %v", m4.Metadata)
	}
	m4.Apply(at(md(recall.MetaChange{ClearMetadata: true}), 6, 0))
	if m4.Metadata != nil {
		t.Errorf("cleared metadata %v", m4.Metadata)
	}

	// Labels: nil leaves them, SetLabels with none clears them.
	m2 := m.Clone()
	m2.Apply(at(recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &no}), 11, 5*time.Minute))
	if !slices.Equal(m2.Labels, []string{"x", "y"}) {
		t.Errorf("labels after an unrelated change: %q", m2.Labels)
	}
	m2.Apply(at(recall.NewEntry(recall.KindMeta, recall.MetaChange{SetLabels: true}), 12, 5*time.Minute))
	if len(m2.Labels) != 0 {
		t.Errorf("labels after SetLabels with none: %q", m2.Labels)
	}
	// An empty user title removes the title, and auto titles may follow.
	m2.Apply(at(title("", recall.TitleUser), 13, 5*time.Minute))
	m2.Apply(at(title("Auto 3", recall.TitleAuto), 14, 5*time.Minute))
	if m2.Title != "Auto 3" || m2.TitleSource != recall.TitleAuto {
		t.Errorf("after removing the user title: %q/%q", m2.Title, m2.TitleSource)
	}
	// A fork entry sets ForkedFrom.
	origin := recall.ForkOrigin{Key: recall.Key{Project: "p", Session: "src"}, Seq: 4}
	m2.Apply(at(recall.NewEntry(recall.KindFork, origin), 15, 5*time.Minute))
	if m2.ForkedFrom == nil || *m2.ForkedFrom != origin {
		t.Errorf("ForkedFrom = %v", m2.ForkedFrom)
	}
	// Clone shares nothing.
	c := m2.Clone()
	c.ForkedFrom.Seq = 99
	mc := m.Clone()
	mc.Labels[0] = "changed"
	if m2.ForkedFrom.Seq != 4 || m.Labels[0] != "x" {
		t.Errorf("Meta.Clone shares memory")
	}
}

func TestTitleSourceYields(t *testing.T) {
	for _, c := range []struct {
		cur, next recall.TitleSource
		ok        bool
	}{
		{recall.TitleNone, recall.TitleAuto, true},
		{recall.TitleNone, recall.TitleUser, true},
		{recall.TitleAuto, recall.TitleAuto, true},
		{recall.TitleAuto, recall.TitleUser, true},
		{recall.TitleUser, recall.TitleUser, true},
		{recall.TitleUser, recall.TitleAuto, false},
	} {
		if got := c.cur.Yields(c.next); got != c.ok {
			t.Errorf("%q.Yields(%q) = %t", c.cur, c.next, got)
		}
	}
}

func TestEntryClone(t *testing.T) {
	e := recall.Item(`{"a":1}`).Entry()
	e.Usage = &recall.Usage{TotalTokens: 1}
	c := e.Clone()
	c.Data[0] = 'X'
	c.Usage.TotalTokens = 2
	if e.Data[0] != '{' || e.Usage.TotalTokens != 1 {
		t.Errorf("Entry.Clone shares memory")
	}
}
