package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newForkCmd(a *app) *cobra.Command {
	var (
		at   int64
		name string
	)
	cmd := &cobra.Command{
		Use:   "fork ID",
		Short: "Copy a session into a new one, whole or as it stood at a seq",
		Long: `Fork a session: the new session starts with the conversation of ID as it
stood after entry --at (the whole session by default), and records where it
came from. The original is untouched. Without --name the fork is titled
after the original. 'recall show ID --format jsonl' shows the seqs.`,
		Example: `  recall fork 0199a3f2-1b
  recall fork 0199a3f2-1b --at 12 --name "try the other parser"`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			switch {
			case at < 0:
				return usageError("--at takes a seq from 'recall show ID --format jsonl'", "--at must not be negative")
			case at == 0 && cmd.Flags().Changed("at"):
				// "After entry 0" is before the first: an empty fork,
				// which no one means; the library reads 0 as "all of it".
				return usageError("seqs start at 1 ('recall show ID --format jsonl' shows them); leave --at out to fork the whole session",
					"--at 0 names no entry")
			}
			ctx := cmd.Context()
			st, src, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			if at > src.LastSeq {
				return withHint(fmt.Errorf("fork %s: seq %d not found: it is past the session's end, whose last seq is %d", src.Key.Session, at, src.LastSeq),
					fmt.Sprintf("the session ends at seq %d: give --at a seq from 1 to %d ('recall show ID --format jsonl' shows them), or leave it out to fork the whole session",
						src.LastSeq, src.LastSeq))
			}
			m, err := forkSession(ctx, st, src, at, name)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(listJSON([]recall.Meta{m}, ""))
			}
			a.printf("forked %s into %s (%s)\n", src.Key.Session, m.Key.Session, count(m.ItemCount, "item"))
			return nil
		},
	}
	cmd.Flags().Int64Var(&at, "at", 0, "fork as the session stood after this seq (default: all of it)")
	cmd.Flags().StringVar(&name, "name", "", "title of the new session (default: the original's title plus \"(fork)\")")
	return cmd
}

// forkSession forks src at atSeq into a new session of the same project
// and titles it: name as a user title, else the original's title marked
// as a fork, as an auto title a user title can replace later.
func forkSession(ctx context.Context, st recall.Store, src recall.Meta, atSeq int64, name string) (recall.Meta, error) {
	key := recall.Key{Project: src.Key.Project, Session: recall.NewSessionID()}
	m, err := recall.NewSession(st, src.Key).Fork(ctx, atSeq, key)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("fork %s: %w", src.Key.Session, err)
	}
	switch {
	case name != "":
		return recall.NewSession(st, key).SetTitle(ctx, name, recall.TitleUser)
	case src.Title != "":
		return recall.NewSession(st, key).SetTitle(ctx, src.Title+" (fork)", recall.TitleAuto)
	}
	return m, nil
}
