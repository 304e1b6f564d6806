package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/termsafe"
)

// eachSession resolves every reference first, so a typo changes nothing,
// then applies op to each session and reports what it did: one line per
// session, or the sessions as they are now in the listing shape
// ({"sessions": [...], "next": ""}).
func eachSession(cmd *cobra.Command, a *app, refs []string, done string, op func(recall.Store, recall.Meta) (recall.Meta, error)) error {
	st, metas, err := resolveAll(cmd, a, refs)
	if err != nil {
		return err
	}
	return applyEach(a, st, metas, done, op)
}

// resolveAll resolves every reference, failing on the first bad one.
func resolveAll(cmd *cobra.Command, a *app, refs []string) (recall.Store, []recall.Meta, error) {
	var (
		st    recall.Store
		metas []recall.Meta
	)
	for _, ref := range refs {
		s, m, err := a.resolve(cmd.Context(), ref)
		if err != nil {
			return nil, nil, err
		}
		st = s
		metas = append(metas, m)
	}
	return st, metas, nil
}

// applyEach applies op to each of metas and reports it.
func applyEach(a *app, st recall.Store, metas []recall.Meta, done string, op func(recall.Store, recall.Meta) (recall.Meta, error)) error {
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
		return a.printJSON(listJSON(out, ""))
	}
	return nil
}

// describe names a session in a message: its ID and, if any, its title,
// with control characters shown escaped.
func describe(m recall.Meta) string {
	if m.Title == "" {
		return m.Key.Session
	}
	return m.Key.Session + " (" + termsafe.Escape(m.Title) + ")"
}
