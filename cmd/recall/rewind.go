package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

// rewindListed is how many of the newest items 'recall rewind ID' and
// /rewind list without --to.
const rewindListed = 20

func newRewindCmd(a *app) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "rewind ID [--to ITEM]",
		Short: "Set a session's view back to just after an item ('recall redo' undoes it)",
		Long: `Set the session's view back to just after ITEM: the items after it leave
what the model sees next time, and the log keeps them. 'recall redo ID'
brings them back, the newest rewind first, until something else changes
the session (a new message, /undo, /clear, a compaction), as undo and redo
do in an editor. --to 0 empties the view.

Without --to, it lists the newest items with their refs (SEQ, or SEQ.INDEX
for the items of a compaction). To branch off instead of going back, see
'recall fork --at'.`,
		Example: `  recall rewind 0199a3f2-1b            # list the items and their refs
  recall rewind 0199a3f2-1b --to 12
  recall redo 0199a3f2-1b`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			ref, err := parseRewindTo(to, cmd.Flags().Changed("to"))
			if err != nil {
				return err
			}
			st, m, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("to") {
				return writeRewindPoints(ctx, a.stdout, st, m.Key, "recall rewind "+m.Key.Session+" --to ITEM")
			}
			n, err := rewindSession(ctx, st, m.Key, ref)
			if err != nil {
				return err
			}
			return a.printChanged(ctx, st, m.Key, fmt.Sprintf("rewound %s %s: %s out of the view (the log keeps them; 'recall redo %s' brings them back)\n",
				m.Key.Session, rewoundTo(ref), count(n, "item"), m.Key.Session))
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the item to go back to, by its ref (SEQ or SEQ.INDEX; 0: before the first)")
	return cmd
}

func newRedoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "redo ID",
		Short: "Bring back the items the last 'recall rewind' took out of the view",
		Long: `Undo the newest rewind of the session that is not yet redone: the items it
took out of the view come back, in their order. Run it again to undo the
rewind before. Once something else has changed the session (a new message,
/undo, /clear, a compaction), there is nothing to redo.`,
		Example: `  recall redo 0199a3f2-1b`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			st, m, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			n, err := redoSession(ctx, st, m.Key)
			if err != nil {
				return err
			}
			return a.printChanged(ctx, st, m.Key, fmt.Sprintf("redid the last rewind of %s: %s back in the view\n", m.Key.Session, count(n, "item")))
		},
	}
}

// parseRewindTo reads --to: a ref, or 0 for the start.
func parseRewindTo(to string, given bool) (recall.ItemRef, error) {
	if !given || to == "0" {
		return recall.ItemRef{}, nil
	}
	ref, err := recall.ParseItemRef(to)
	if err != nil {
		return ref, usageError("'recall rewind ID' lists the items and their refs", "--to %q: want an item's ref, SEQ or SEQ.INDEX", to)
	}
	return ref, nil
}

// rewoundTo says where a rewind to ref went.
func rewoundTo(ref recall.ItemRef) string {
	if ref == (recall.ItemRef{}) {
		return "to the start"
	}
	return "to just after item " + ref.String()
}

// rewindSession rewinds key to ref, with a hint when ref is not in the view.
func rewindSession(ctx context.Context, st recall.Store, key recall.Key, ref recall.ItemRef) (int, error) {
	n, err := recall.NewSession(st, key).Rewind(ctx, ref)
	if errors.Is(err, recall.ErrNotFound) && ref != (recall.ItemRef{}) {
		return 0, withHint(err, "'recall rewind "+key.Session+"' lists the items in the view and their refs")
	}
	return n, err
}

// redoSession redoes key's last rewind, with a hint when there is none.
func redoSession(ctx context.Context, st recall.Store, key recall.Key) (int, error) {
	n, err := recall.NewSession(st, key).Redo(ctx)
	if errors.Is(err, recall.ErrNothingToRedo) {
		return 0, withHint(fmt.Errorf("redo %s: %w", key.Session, err),
			"redo undoes a rewind until something else changes the session; 'recall rewind ID --to ITEM' goes back")
	}
	return n, err
}

// printChanged prints what a rewind or redo did, or with --json the
// session's metadata afterwards.
func (a *app) printChanged(ctx context.Context, st recall.Store, key recall.Key, line string) error {
	if !a.json {
		a.printf("%s", line)
		return nil
	}
	m, err := st.Stat(ctx, key)
	if err != nil {
		return err
	}
	return a.printJSON(listJSON([]recall.Meta{m}, ""))
}

// writeRewindPoints lists the newest items of key's view with their refs,
// oldest first, and how to rewind to one.
func writeRewindPoints(ctx context.Context, w io.Writer, st recall.Store, key recall.Key, usage string) error {
	page, err := recall.NewSession(st, key).ReadItems(ctx, recall.ItemPageOptions{Limit: rewindListed})
	if err != nil {
		return err
	}
	if len(page.Items) == 0 {
		_, err := fmt.Fprintln(w, "the session's view is empty: nothing to rewind")
		return err
	}
	items := slices.Clone(page.Items)
	slices.Reverse(items)
	var b strings.Builder
	if page.More {
		fmt.Fprintf(&b, "… earlier items not shown\n")
	}
	for _, l := range items {
		b.WriteString(itemRow(l) + "\n")
	}
	fmt.Fprintf(&b, "%s keeps that item and the ones before it\n", usage)
	_, err = io.WriteString(w, b.String())
	return err
}

// rewind runs /rewind [ITEM]: without ITEM it lets the person pick one
// of the newest items on a terminal, and elsewhere lists them with their
// refs.
func (c *chatSession) rewind(ctx context.Context, arg string) error {
	if _, err := c.st.Stat(ctx, c.key); errors.Is(err, recall.ErrNotFound) {
		c.app.notef("nothing said yet\n")
		return nil
	} else if err != nil {
		return err
	}
	var ref recall.ItemRef
	switch {
	case arg == "" && isTerminal(c.app.stdin) && isTerminal(c.app.stdout):
		var err error
		if ref, err = pickItem(ctx, c.app.stdin, c.app.stdout, c.st, c.key); errors.Is(err, errNoChoice) {
			return nil
		} else if err != nil {
			return err
		}
	case arg == "":
		return writeRewindPoints(ctx, c.app.stdout, c.st, c.key, "/rewind ITEM")
	default:
		var err error
		if ref, err = parseRewindTo(arg, true); err != nil {
			return usageError("/rewind lists the items and their refs", "/rewind %q: want an item's ref, SEQ or SEQ.INDEX", arg)
		}
	}
	n, err := rewindSession(ctx, c.st, c.key, ref)
	if err != nil {
		return err
	}
	c.app.notef("rewound %s: %s out of the view (/redo brings them back)\n", rewoundTo(ref), count(n, "item"))
	return nil
}
