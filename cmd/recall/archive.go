package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

// newArchiveCmd builds "archive" (archive true) or "unarchive".
func newArchiveCmd(a *app, archive bool) *cobra.Command {
	use, short, done := "archive ID...", "Hide sessions from ls (they stay on disk)", "archived"
	if !archive {
		use, short, done = "unarchive ID...", "Show archived sessions in ls again", "unarchived"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return eachSession(cmd, a, argv, done, func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				return recall.SetArchived(cmd.Context(), st, m.Key, archive)
			})
		},
	}
}
