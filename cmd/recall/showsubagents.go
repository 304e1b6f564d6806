package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/transcript"
)

// The subagents 'recall show --subagents' adds: the transcripts recorded
// under the session, each as the model saw it.

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
		out = append(out, subagentRecord{Meta: m, Items: orEmpty(recall.PlainItems(live))})
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
