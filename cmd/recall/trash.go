package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/termsafe"
)

func newTrashCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List, restore and empty the sessions 'recall rm' and 'recall gc' moved to the trash",
		Long: `'recall rm' and 'recall gc' move sessions to the trash rather than delete
them. A session in the trash is in no listing, search or view, and keeps
everything it held: 'recall trash restore ID' brings it back as it was.
'recall gc' deletes for good what has been in the trash for longer than
its --grace (30 days by default); 'recall trash empty' does it now.`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newTrashLsCmd(a), newTrashRestoreCmd(a), newTrashEmptyCmd(a))
	return cmd
}

func newTrashLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List the sessions in the trash, of every project, newest-updated first",
		Example: "  recall trash ls\n  recall trash ls --json",
		Args:    args(cobra.NoArgs),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, _ []string) error {
			metas, err := trashed(ctx, st)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(listJSON(metas, ""))
			}
			if len(metas) == 0 {
				a.notef("the trash is empty\n")
				return nil
			}
			short := sessionref.ShortIDs(sessionIDs(metas))
			now := time.Now()
			rows := [][]string{{"ID", "TITLE", "TRASHED", "ITEMS", "PROJECT"}}
			for i, m := range metas {
				rows = append(rows, []string{short[i], displayTitle(m, titleWidth), age.Ago(m.Trashed, now),
					strconv.Itoa(m.ItemCount), termsafe.Escape(m.Key.Project)})
			}
			return writeTable(a.stdout, rows)
		}),
	}
}

func newTrashRestoreCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "restore ID...",
		Short:   "Bring sessions back from the trash, as they were",
		Example: "  recall trash restore 0199a3f2",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, argv []string) error {
			metas, err := trashed(ctx, st)
			if err != nil {
				return err
			}
			proj, _ := project("")
			var found []recall.Meta
			for _, ref := range argv {
				m, err := sessionref.Match(metas, proj, ref)
				if errors.Is(err, recall.ErrNotFound) {
					return withHint(fmt.Errorf("no session in the trash matches %q", ref), "'recall trash ls' lists the trash")
				}
				if err != nil {
					return err
				}
				found = append(found, m)
			}
			return applyEach(a, st, uniqueSessions(found), "restored", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				nm, err := recall.NewSession(st, m.Key).Restore(ctx)
				if err != nil {
					return m, fmt.Errorf("restore %s: %w", m.Key.Session, err)
				}
				return nm, nil
			})
		}),
	}
}

func newTrashEmptyCmd(a *app) *cobra.Command {
	var (
		olderThan   string
		yes, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "empty",
		Short: "Delete for good the sessions in the trash (pinned ones stay)",
		Long: `Delete for good every session in the trash, of every project, or with
--older-than those that have been there that long. A pinned session
stays: 'recall rm --purge --force ID' deletes it. In a terminal it lists
what would go and asks (y/N); --yes skips the question, and without a
terminal it is needed.`,
		Example: "  recall trash empty\n  recall trash empty --older-than 7d --yes",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cutoff := time.Now()
			if olderThan != "" {
				age, err := age.Parse(olderThan)
				if err != nil {
					return usageError("--older-than takes an age such as 30d, 12h or 1y", "%v", err)
				}
				cutoff = cutoff.Add(-age)
			}
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			opts := recall.CleanupOptions{OlderThan: cutoff, DryRun: true}
			rep, err := recall.EmptyTrash(ctx, st, opts)
			if err != nil {
				return err
			}
			if !dryRun && len(rep.Removed) > 0 {
				ok, err := a.confirmRemoval("trash empty", rep.Removed, yes, true)
				if err != nil || !ok {
					return err
				}
				opts.DryRun = false
				if rep, err = recall.EmptyTrash(ctx, st, opts); err != nil {
					return err
				}
			}
			if a.json {
				return a.printJSON(struct {
					DryRun bool `json:"dry_run"`
					sessionsJSON
					KeptPinned int `json:"kept_pinned"`
				}{dryRun, listJSON(rep.Removed, ""), rep.Kept})
			}
			verb := "deleted for good"
			if dryRun {
				verb = "would delete for good"
			}
			for _, m := range rep.Removed {
				a.printf("%s %s\n", verb, describe(m))
			}
			summary := fmt.Sprintf("%s %s from the trash", verb, count(len(rep.Removed), "session"))
			if rep.Kept > 0 {
				summary += fmt.Sprintf("; kept %d pinned ('recall rm --purge --force ID' deletes one)", rep.Kept)
			}
			a.printf("%s\n", summary)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&olderThan, "older-than", "", "only what has been in the trash this long (y, w, d, h, m, s)")
	fl.BoolVarP(&yes, "yes", "y", false, "delete without asking")
	fl.BoolVarP(&dryRun, "dry-run", "n", false, "only report what would be deleted")
	return cmd
}

// trashed returns every session in the trash, of every project, in List
// order.
func trashed(ctx context.Context, st recall.Store) ([]recall.Meta, error) {
	var out []recall.Meta
	opts := recall.ListOptions{Limit: 1000, Trashed: true}
	for {
		p, err := st.List(ctx, "", opts)
		if err != nil {
			return nil, fmt.Errorf("read the trash: %w", err)
		}
		out = append(out, p.Sessions...)
		if p.Next == "" {
			return out, nil
		}
		opts.Cursor = p.Next
	}
}

// resolveWithTrash is resolveAll over the sessions in the trash too: a
// reference that names no other session may name one there.
func resolveWithTrash(cmd *cobra.Command, a *app, refs []string) (recall.Store, []recall.Meta, error) {
	ctx := cmd.Context()
	st, err := a.store(ctx)
	if err != nil {
		return nil, nil, err
	}
	var metas, trash []recall.Meta
	for _, ref := range refs {
		_, m, err := a.resolve(ctx, ref)
		if errors.Is(err, recall.ErrNotFound) {
			if trash == nil {
				if trash, err = trashed(ctx, st); err != nil {
					return nil, nil, err
				}
			}
			proj, _ := project("")
			if m, err = sessionref.Match(trash, proj, ref); err != nil {
				return nil, nil, err
			}
		}
		if err != nil {
			return nil, nil, err
		}
		metas = append(metas, m)
	}
	return st, metas, nil
}
