package main

import (
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Short:   "Delete sessions for good, with their subagent records",
		Long:    `Delete sessions for good. Every ID is resolved before anything is deleted, so a typo deletes nothing. 'recall archive' hides a session without deleting it.`,
		Example: `  recall rm 0199a3f2-1b 0199a3f4-77`,
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return eachSession(cmd, a, argv, "removed", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				return m, st.Remove(cmd.Context(), m.Key)
			})
		},
	}
}
