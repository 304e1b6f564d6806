package export_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// randomSession writes a log of about n entries of every kind the
// writers treat apart, as a store could hold it or worse: items of each
// type, pops and removes of items in the view, of items already gone, of
// compaction items and of seqs not yet written, clears, compactions that
// keep the view's newest items verbatim and some that do not decode,
// forks, titles, and damaged items (not objects, or objects that are not
// JSON, when withInvalid is set). Subagent records follow, smaller.
func randomSession(rng *rand.Rand, key recall.Key, n int, withInvalid bool) *export.Session {
	s := randomLog(rng, key, n, withInvalid)
	if key.IsMain() {
		for i := range rng.IntN(3) {
			sub := key
			sub.Subpath = fmt.Sprintf("subagents/a%d", i)
			s.Subagents = append(s.Subagents, randomLog(rng, sub, n/3, withInvalid))
		}
	}
	return s
}

func randomLog(rng *rand.Rand, key recall.Key, n int, withInvalid bool) *export.Session {
	b := newLog(key)
	b.add(recall.KindCreate, "")
	// view mirrors recall.Replay, so removals can name items in it
	var view []recall.LiveItem
	seq := func() int64 { return int64(len(b.entries)) }
	for len(b.entries) < n {
		switch k := rng.IntN(100); {
		case k < 55:
			it := randomItem(rng)
			b.item(it)
			view = append(view, recall.LiveItem{Ref: recall.ItemRef{Seq: seq()}, Item: it})
			if rng.IntN(5) == 0 {
				b.usage(int64(rng.IntN(1000)), int64(rng.IntN(100)))
			}
		case k < 70:
			ref := recall.ItemRef{Seq: rng.Int64N(seq() + 3)} // gone, or not written yet
			if len(view) > 0 && rng.IntN(4) > 0 {
				ref = view[rng.IntN(len(view))].Ref
				if rng.IntN(3) > 0 {
					ref = view[len(view)-1].Ref // a pop
				}
			}
			if i := slices.IndexFunc(view, func(l recall.LiveItem) bool { return l.Ref == ref }); i >= 0 {
				view = slices.Delete(view, i, i+1)
			}
			kind := recall.KindPop
			if rng.IntN(2) == 0 {
				kind = recall.KindRemove
			}
			b.payload(kind, ref)
		case k < 74:
			b.add(recall.KindClear, "")
			view = nil
		case k < 82:
			keep := rng.IntN(min(len(view), 4) + 1)
			var items []recall.Item
			for range rng.IntN(3) {
				items = append(items, recall.Message("user", fmt.Sprintf("Summary %d of what came before.", rng.IntN(100))))
			}
			for _, l := range view[len(view)-keep:] {
				items = append(items, l.Item)
			}
			b.payload(recall.KindCompaction, recall.Compaction{Through: seq(), Replaced: len(view) - keep, Items: items, Strategy: []string{"", "summary"}[rng.IntN(2)]})
			view = view[:0]
			for j, it := range items {
				view = append(view, recall.LiveItem{Ref: recall.ItemRef{Seq: seq(), Index: j}, Item: it})
			}
		case k < 84:
			b.add(recall.KindCompaction, []string{`{"items":5}`, `[1]`, `null`}[rng.IntN(3)])
			if b.entries[len(b.entries)-1].Data[0] == 'n' { // null decodes: an empty compaction
				view = nil
			}
		case k < 86:
			b.payload(recall.KindFork, recall.ForkOrigin{Key: recall.Key{Project: key.Project, Session: "origin"}, Seq: rng.Int64N(50)})
		case k < 90:
			b.payload(recall.KindTitle, recall.TitleChange{Title: fmt.Sprintf("Title %d <b>", rng.IntN(100)), Source: recall.TitleUser})
		case k < 95:
			b.add(recall.KindItem, []string{`[1]`, `"a string"`, `{"type":"message","role":"user","content":"ok"}`}[rng.IntN(3)])
			if d := b.entries[len(b.entries)-1]; d.Data[0] == '{' {
				view = append(view, recall.LiveItem{Ref: recall.ItemRef{Seq: d.Seq}, Item: recall.Item(d.Data)})
			}
		case withInvalid:
			b.add(recall.KindItem, `{not json}`)
			view = append(view, recall.LiveItem{Ref: recall.ItemRef{Seq: seq()}, Item: recall.Item(`{not json}`)})
		}
	}
	return b.session()
}

// randomItem returns an item of one of the types the writers render
// apart.
func randomItem(rng *rand.Rand) recall.Item {
	id := fmt.Sprintf("call_%d", rng.IntN(1000))
	switch rng.IntN(9) {
	case 0, 1:
		return recall.Message("user", fmt.Sprintf("Question %d: what about `x` and <tag>?", rng.IntN(1000)))
	case 2, 3:
		return recall.Message("assistant", fmt.Sprintf("Answer %d.\n\n```go\nx := %d\n", rng.IntN(1000), rng.IntN(9)))
	case 4:
		return call(id, "read_file", fmt.Sprintf(`{"path":"f%d.go"}`, rng.IntN(9)))
	case 5:
		return output(id, strings.Repeat(fmt.Sprintf("line %d\n", rng.IntN(9)), rng.IntN(40)))
	case 6:
		return recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"think ` + fmt.Sprint(rng.IntN(9)) + `"}]}`)
	case 7:
		return recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"` + tinyPNG + `"}]}`)
	}
	return recall.Item(fmt.Sprintf(`{"id":"ws_%d","type":"web_search_call","status":"completed"}`, rng.IntN(1000)))
}
