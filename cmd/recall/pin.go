package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

// newPinCmd builds "pin" (pin true) or "unpin".
func newPinCmd(a *app, pin bool) *cobra.Command {
	use, short, done := "pin ID...", "Keep sessions from ever being removed by gc", "pinned"
	if !pin {
		use, short, done = "unpin ID...", "Let gc remove sessions again", "unpinned"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return eachSession(cmd, a, argv, done, func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				return recall.SetPinned(cmd.Context(), st, m.Key, pin)
			})
		},
	}
}
