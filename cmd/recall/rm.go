package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newRmCmd(a *app) *cobra.Command {
	var yes, force bool
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Delete sessions for good, with their subagent records",
		Long: `Delete sessions for good. Every ID is resolved before anything is deleted,
so a typo deletes nothing. Deleting more than one session asks first in a
terminal (y/N) and needs --yes without one. A pinned session is deleted
only with --force. 'recall archive' hides a session without deleting it.`,
		Example: `  recall rm 0199a3f2
  recall rm 0199a3f2 0199a3f4 --yes
  recall rm 0199a3f2 --force   # even though it is pinned`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			st, metas, err := resolveAll(cmd, a, argv)
			if err != nil {
				return err
			}
			metas = uniqueSessions(metas)
			if !force {
				for _, m := range metas {
					if m.Pinned {
						return usageError("pass --force to delete it anyway, or 'recall unpin "+m.Key.Session+"' first",
							"%s is pinned", describe(m))
					}
				}
			}
			if len(metas) > 1 {
				ok, err := a.confirmRemoval("rm", metas, yes)
				if err != nil || !ok {
					return err
				}
			}
			return applyEach(a, st, metas, "removed", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				if err := st.Remove(cmd.Context(), m.Key); err != nil {
					return m, fmt.Errorf("remove %s: %w", m.Key.Session, err)
				}
				return m, nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete several sessions without asking")
	cmd.Flags().BoolVar(&force, "force", false, "delete pinned sessions too")
	return cmd
}

// uniqueSessions drops repeats: two references to one session delete it once.
func uniqueSessions(metas []recall.Meta) []recall.Meta {
	seen := make(map[recall.Key]bool, len(metas))
	out := metas[:0:0]
	for _, m := range metas {
		if !seen[m.Key] {
			seen[m.Key] = true
			out = append(out, m)
		}
	}
	return out
}
