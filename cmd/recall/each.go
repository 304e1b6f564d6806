package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

// eachSession resolves every reference first, so a typo changes nothing,
// then applies op to each session and reports what it did: one line per
// session, or a JSON array of the new metadata.
func eachSession(cmd *cobra.Command, a *app, refs []string, done string, op func(recall.Store, recall.Meta) (recall.Meta, error)) error {
	ctx := cmd.Context()
	var (
		st    recall.Store
		metas []recall.Meta
	)
	for _, ref := range refs {
		s, m, err := a.resolve(ctx, ref)
		if err != nil {
			return err
		}
		st = s
		metas = append(metas, m)
	}
	out := make([]recall.Meta, 0, len(metas))
	for _, m := range metas {
		nm, err := op(st, m)
		if err != nil {
			return err
		}
		out = append(out, nm)
		if !a.json {
			a.printf("%s %s\n", done, describe(nm))
		}
	}
	if a.json {
		return a.printJSON(out)
	}
	return nil
}

// describe names a session in a message: its ID and, if any, its title.
func describe(m recall.Meta) string {
	if m.Title == "" {
		return m.Key.Session
	}
	return m.Key.Session + " (" + m.Title + ")"
}
