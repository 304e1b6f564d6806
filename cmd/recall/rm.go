package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newRmCmd(a *app) *cobra.Command {
	var yes, force, purge bool
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Move sessions to the trash (--purge: delete them for good)",
		Long: `Move sessions to the trash, with their subagent records: they leave every
listing, search and view, and 'recall trash restore ID' brings one back as
it was. The trash keeps them until 'recall gc' finds them there for longer
than its --grace (30 days by default), or until 'recall trash empty'.

--purge deletes the sessions for good at once, sessions in the trash too.

Every ID is resolved before anything changes, so a typo changes nothing.
More than one session asks first in a terminal (y/N) and needs --yes
without one. A pinned session goes only with --force. 'recall archive'
hides a session without deleting it.`,
		Example: `  recall rm 0199a3f2
  recall rm 0199a3f2 0199a3f4 --yes
  recall rm 0199a3f2 --force   # even though it is pinned
  recall rm 0199a3f2 --purge   # for good, no trash`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resolve := resolveAll
			if purge {
				resolve = resolveWithTrash
			}
			st, metas, err := resolve(cmd, a, argv)
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
				ok, err := a.confirmRemoval("rm", metas, yes, purge)
				if err != nil || !ok {
					return err
				}
			}
			if purge {
				return applyEach(a, st, metas, "deleted for good", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
					if err := st.Remove(cmd.Context(), m.Key); err != nil {
						return m, fmt.Errorf("remove %s: %w", m.Key.Session, err)
					}
					return m, nil
				})
			}
			err = applyEach(a, st, metas, "moved to the trash", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				nm, err := recall.NewSession(st, m.Key).Trash(cmd.Context())
				if err != nil {
					return m, fmt.Errorf("move %s to the trash: %w", m.Key.Session, err)
				}
				return nm, nil
			})
			if err == nil && !a.json {
				a.notef("restore with 'recall trash restore %s'; 'recall rm --purge' deletes for good\n", metas[0].Key.Session)
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "go ahead with several sessions without asking")
	cmd.Flags().BoolVar(&force, "force", false, "delete pinned sessions too")
	cmd.Flags().BoolVar(&purge, "purge", false, "delete for good at once, not to the trash")
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
