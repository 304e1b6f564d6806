package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/internal/transcript"
)

// The parts of 'recall show' that reach beyond the view: --full (the
// whole log, items that compactions replaced included) and --subagents
// (the transcripts recorded under the session).

// fullPart is one step of a session's whole history: an item, or a
// marker for what changed the view (a compaction, a clear).
type fullPart struct {
	item   recall.Item
	popped bool   // the item was removed later (undo, PopItem)
	marker string // set for a marker
}

// fullHistory returns every item a session's log ever held, in log order,
// with markers where compactions and clears changed the view. The items
// a compaction kept verbatim are not repeated; its summary items are.
func fullHistory(entries []recall.Entry) []fullPart {
	popped := map[recall.ItemRef]bool{}
	for _, e := range entries {
		var ref recall.ItemRef
		if e.Kind == recall.KindPop && json.Unmarshal(e.Data, &ref) == nil {
			popped[ref] = true
		}
	}
	var parts []fullPart
	for i, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			parts = append(parts, fullPart{item: recall.Item(e.Data), popped: popped[recall.ItemRef{Seq: e.Seq}]})
		case recall.KindClear:
			parts = append(parts, fullPart{marker: "cleared: the model starts afresh"})
		case recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			_, before := recall.Replay(recall.Key{}, entries[:i])
			kept := export.KeptCopies(recall.PlainItems(before), c.Items)
			strategy := c.Strategy
			if strategy == "" {
				strategy = "compaction"
			}
			parts = append(parts, fullPart{marker: fmt.Sprintf("compacted (%s): %s replaced by what follows; %d kept",
				strategy, count(c.Replaced-kept, "item"), kept)})
			for j, it := range c.Items[:len(c.Items)-kept] {
				parts = append(parts, fullPart{item: it, popped: popped[recall.ItemRef{Seq: e.Seq, Index: j}]})
			}
			if kept > 0 {
				parts = append(parts, fullPart{marker: "the items kept follow on from above"})
			}
		}
	}
	return parts
}

// writeFull prints a session's whole history as text or markdown.
func writeFull(w io.Writer, format string, entries []recall.Entry) error {
	for i, p := range fullHistory(entries) {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		var err error
		switch {
		case p.marker != "" && format == "text":
			_, err = fmt.Fprintf(w, "── %s ──\n", p.marker)
		case p.marker != "":
			_, err = fmt.Fprintf(w, "---\n\n*%s*\n", p.marker)
		case format == "text":
			if p.popped {
				_, err = fmt.Fprint(w, "(removed later)\n")
			}
			if err == nil {
				err = transcript.Text(w, []recall.Item{p.item})
			}
		default:
			if p.popped {
				_, err = fmt.Fprint(w, "*(removed later)*\n\n")
			}
			if err == nil {
				err = transcript.Markdown(w, "", []recall.Item{p.item})
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// subagentRecord is one transcript recorded under a session.
type subagentRecord struct {
	Meta  recall.Meta   `json:"session"`
	Items []recall.Item `json:"items"`
}

// subagentRecords returns the records under key, oldest first.
func subagentRecords(ctx context.Context, st recall.Store, key recall.Key) ([]subagentRecord, error) {
	page, err := st.List(ctx, key.Project, recall.ListOptions{Parent: key.Session, Limit: -1, IncludeArchived: true})
	if err != nil {
		return nil, err
	}
	metas := page.Sessions
	slices.SortFunc(metas, func(a, b recall.Meta) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key.Subpath, b.Key.Subpath))
	})
	out := make([]subagentRecord, 0, len(metas))
	for _, m := range metas {
		live, _, err := st.Items(ctx, m.Key, 0)
		if err != nil {
			return nil, err
		}
		items := recall.PlainItems(live)
		if items == nil {
			items = []recall.Item{}
		}
		out = append(out, subagentRecord{Meta: m, Items: items})
	}
	return out, nil
}

// writeSubagents prints the records as text or markdown, each under a
// heading naming its subpath.
func writeSubagents(w io.Writer, format string, recs []subagentRecord) error {
	for _, r := range recs {
		var err error
		if format == "text" {
			_, err = fmt.Fprintf(w, "\n═══ subagent %s (%s) ═══\n", r.Meta.Key.Subpath, count(len(r.Items), "item"))
			if err == nil {
				err = transcript.Text(w, r.Items)
			}
		} else {
			_, err = fmt.Fprintf(w, "\n## Subagent `%s`\n\n", r.Meta.Key.Subpath)
			if err == nil {
				err = transcript.Markdown(w, "", r.Items)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
