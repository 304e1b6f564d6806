package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// modelBlock is a block with its parts, as historyModel builds it.
type modelBlock struct {
	block
	Parts []part
}

// historyModel is history as the definition says it, from the whole log
// at once: an item is marked removed if any removal names it, and a
// compaction's kept items are counted against the view recall.Replay
// gives for the log before it. history, which reads the log a page at a
// time and keeps only marks, must give the same (TestHistoryMatchesModel).
func historyModel(entries []recall.Entry) []modelBlock {
	removed := map[recall.ItemRef]bool{}
	for _, e := range entries {
		var ref recall.ItemRef
		if (e.Kind == recall.KindPop || e.Kind == recall.KindRemove) && json.Unmarshal(e.Data, &ref) == nil {
			removed[ref] = true
		}
	}
	var (
		blocks []modelBlock
		turns  int
	)
	note := func(t time.Time, format string, args ...any) {
		blocks = append(blocks, modelBlock{block: block{Time: t, Note: fmt.Sprintf(format, args...)}})
	}
	add := func(p part) {
		if p.Kind == "message" && p.Role == "user" || len(blocks) == 0 || blocks[len(blocks)-1].Turn == 0 {
			turns++
			blocks = append(blocks, modelBlock{block: block{Turn: turns, Time: p.Time}})
		}
		b := &blocks[len(blocks)-1]
		b.Parts = append(b.Parts, p)
	}
	for i, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			p := describe(e.Data)
			if _, ok := e.Item(); !ok || p.Kind == "damaged" {
				p = part{Kind: "damaged", Text: fmt.Sprintf("a damaged item of %d bytes (not a JSON object) is kept in the log at seq %d", len(e.Data), e.Seq)}
			}
			p.Time, p.Removed = e.Time, removed[recall.ItemRef{Seq: e.Seq}]
			if p.Kind != "damaged" {
				p.Item = recall.Item(e.Data)
			}
			add(p)
		case recall.KindFork:
			var f recall.ForkOrigin
			if json.Unmarshal(e.Data, &f) == nil {
				note(e.Time, "Forked from session %s at seq %d.", f.Key.Session, f.Seq)
			}
		case recall.KindClear:
			note(e.Time, "Cleared: the model started afresh here.")
		case recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			_, before := recall.Replay(recall.Key{}, entries[:i])
			kept := keptCopies(recall.PlainItems(before), c.Items)
			note(e.Time, "%s", compactionNote(c, kept))
			for j, it := range c.Items[:len(c.Items)-kept] {
				p := describe(it)
				p.Time, p.Removed, p.Summary = e.Time, removed[recall.ItemRef{Seq: e.Seq, Index: j}], true
				if p.Kind != "damaged" {
					p.Item = it
				}
				add(p)
			}
		}
	}
	return blocks
}

// jsonModel is the JSON export as the definition says it: the view
// recall.Replay gives for the whole log, every item checked, then
// written. writeJSON, which reads the log twice a page at a time, must
// give the same.
func jsonModel(s *Session) ([]byte, error) {
	_, live := recall.Replay(s.Meta.Key, s.Entries)
	var b bytes.Buffer
	list := newItemList(&b)
	for _, l := range live {
		if !jsonvalid.Valid(l.Item) {
			return nil, fmt.Errorf("export: json %s: item %d.%d: %w: not valid JSON", s.Meta.Key, l.Ref.Seq, l.Ref.Index, recall.ErrCorrupt)
		}
		list.add(l)
	}
	list.end()
	return b.Bytes(), nil
}
