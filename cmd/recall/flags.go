package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

// flagCmd is a command that sets one of a session's flags on the sessions
// it names: archive and unarchive, pin and unpin.
type flagCmd struct {
	use, short, done string
	change           recall.MetaChange
}

// flagCmds are the commands that set a session's flags.
var flagCmds = []flagCmd{
	{"archive ID...", "Hide sessions from ls (they stay on disk)", "archived", recall.MetaChange{Archived: new(true)}},
	{"unarchive ID...", "Show archived sessions in ls again", "unarchived", recall.MetaChange{Archived: new(false)}},
	{"pin ID...", "Keep sessions from ever being removed by gc", "pinned", recall.MetaChange{Pinned: new(true)}},
	{"unpin ID...", "Let gc remove sessions again", "unpinned", recall.MetaChange{Pinned: new(false)}},
}

// newFlagCmd builds the command of f.
func newFlagCmd(a *app, f flagCmd) *cobra.Command {
	return &cobra.Command{
		Use:   f.use,
		Short: f.short,
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return eachSession(cmd, a, argv, f.done, func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				return recall.NewSession(st, m.Key).ChangeMeta(cmd.Context(), f.change)
			})
		},
	}
}
