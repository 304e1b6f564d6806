package recall_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// purgeGen draws a log as a store writes it, with everything a purge must
// carry over: titles of both sources, archive, pin, labels, a fork origin,
// usage, increasing times, and compactions (some undecodable).
func purgeGen() *rapid.Generator[[]recall.Entry] {
	return rapid.Custom(func(t *rapid.T) []recall.Entry {
		var log []recall.Entry
		var live []recall.LiveItem
		t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
		add := func(e recall.Entry) {
			e.Seq = int64(len(log) + 1)
			e.Time = t0.Add(time.Duration(len(log)) * time.Second)
			log = append(log, e)
			_, live = recall.Replay(testKey, log)
		}
		if rapid.Bool().Draw(t, "forked") {
			add(recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: recall.Key{Project: "p", Session: "src"}, Seq: 7}))
		}
		n := rapid.IntRange(0, 30).Draw(t, "len")
		for range n {
			var e recall.Entry
			switch rapid.SampledFrom([]string{"item", "item", "item", "pop", "clear", "compaction", "compaction", "badcompaction", "title", "meta"}).Draw(t, "kind") {
			case "item":
				e = recall.Item(fmt.Sprintf(`{"t":"i%d"}`, len(log)+1)).Entry()
				if rapid.Bool().Draw(t, "usage") {
					e.Usage = &recall.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}
				}
			case "pop":
				if len(live) == 0 {
					continue
				}
				e = recall.NewEntry(recall.KindPop, live[rapid.IntRange(0, len(live)-1).Draw(t, "which")].Ref)
			case "clear":
				e = recall.Entry{Kind: recall.KindClear}
			case "compaction":
				c := recall.Compaction{Through: int64(len(log)), Replaced: len(live), Strategy: "summary"}
				c.Items = append(c.Items, recall.Item(fmt.Sprintf(`{"t":"sum%d"}`, len(log)+1)))
				if k := rapid.IntRange(0, len(live)).Draw(t, "keep"); k > 0 {
					c.Items = append(c.Items, recall.PlainItems(live[len(live)-k:])...)
				}
				e = recall.NewEntry(recall.KindCompaction, c)
				if rapid.Bool().Draw(t, "compactionUsage") {
					e.Usage = &recall.Usage{InputTokens: 10, OutputTokens: 1, TotalTokens: 11}
				}
			case "badcompaction":
				e = recall.Entry{Kind: recall.KindCompaction, Data: json.RawMessage(`[`)}
			case "title":
				src := rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(t, "source")
				e = recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "title"), Source: src})
			case "meta":
				var mc recall.MetaChange
				if rapid.Bool().Draw(t, "arch") {
					b := rapid.Bool().Draw(t, "archived")
					mc.Archived = &b
				}
				if rapid.Bool().Draw(t, "pin") {
					b := rapid.Bool().Draw(t, "pinned")
					mc.Pinned = &b
				}
				if rapid.Bool().Draw(t, "lab") {
					mc.Labels, mc.SetLabels = rapid.SliceOfN(rapid.SampledFrom([]string{"x", "y"}), 0, 2).Draw(t, "labels"), true
				}
				e = recall.NewEntry(recall.KindMeta, mc)
			}
			add(e)
		}
		return log
	})
}

// A purge changes nothing a reader sees: the view (refs included) and the
// metadata are those of the whole log, but for LastSeq, which grows by the
// entries restored. The log it leaves starts at a compaction entry, has
// dense seqs, keeps every entry after the cut verbatim, and has nothing
// more to purge.
func TestPurgeLogKeepsWhatReadersSee(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		log := purgeGen().Draw(t, "log")
		out, dropped, err := storekit.PurgeLog(testKey, log)
		if err != nil {
			t.Fatalf("PurgeLog: %v", err)
		}
		want, wantLive := recall.Replay(testKey, log)
		if dropped == 0 {
			if out != nil {
				t.Fatalf("nothing dropped but a log returned")
			}
			for i, e := range log {
				var c recall.Compaction
				if i > 0 && e.Kind == recall.KindCompaction && json.Unmarshal(e.Data, &c) == nil {
					t.Fatalf("a decodable compaction at entry %d, yet nothing purged", i)
				}
			}
			return
		}
		if out[0].Kind != recall.KindCompaction || out[0].Seq != log[dropped].Seq {
			t.Fatalf("purged log starts with %s@%d, want the compaction at %d", out[0].Kind, out[0].Seq, log[dropped].Seq)
		}
		for i := 1; i < len(out); i++ {
			if out[i].Seq != out[i-1].Seq+1 {
				t.Fatalf("seq %d follows %d", out[i].Seq, out[i-1].Seq)
			}
		}
		kept := len(log) - dropped
		for i := 1; i < kept; i++ {
			if a, b := out[i], log[dropped+i]; a.Seq != b.Seq || a.Kind != b.Kind || !bytes.Equal(a.Data, b.Data) || !a.Time.Equal(b.Time) {
				t.Fatalf("entry %d changed: %+v, was %+v", i, a, b)
			}
		}
		got, gotLive := recall.Replay(testKey, out)
		if got.LastSeq != want.LastSeq+int64(len(out)-kept) {
			t.Fatalf("LastSeq %d, want %d + %d restored", got.LastSeq, want.LastSeq, len(out)-kept)
		}
		got.LastSeq = want.LastSeq
		if g, w := metaString(got), metaString(want); g != w {
			t.Fatalf("metadata after purge\n%s\nwant\n%s", g, w)
		}
		if !slices.EqualFunc(gotLive, wantLive, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
			t.Fatalf("view after purge %v, want %v", texts(gotLive), texts(wantLive))
		}
		if again, n, err := storekit.PurgeLog(testKey, out); err != nil || n != 0 || again != nil {
			t.Fatalf("purging a purged log: %d dropped, %v", n, err)
		}
	})
}

func TestPurgeLogNothingToPurge(t *testing.T) {
	item := recall.Item(`{"t":"a"}`).Entry()
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Items: []recall.Item{recall.Item(`{"t":"s"}`)}})
	for name, log := range map[string][]recall.Entry{
		"empty":            nil,
		"no compaction":    {item, item},
		"compaction first": {comp, item},
	} {
		for i := range log {
			log[i].Seq = int64(i + 1)
		}
		if out, n, err := storekit.PurgeLog(testKey, log); out != nil || n != 0 || err != nil {
			t.Errorf("%s: PurgeLog = %d entries, %d dropped, %v; want nothing", name, len(out), n, err)
		}
	}
}

// metaString renders every field of m, the fork origin by value.
func metaString(m recall.Meta) string {
	fork := "-"
	if m.ForkedFrom != nil {
		fork = fmt.Sprintf("%+v", *m.ForkedFrom)
	}
	m.ForkedFrom = nil
	return fmt.Sprintf("%+v fork=%s", m, fork)
}
