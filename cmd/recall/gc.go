package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newGcCmd(a *app) *cobra.Command {
	var (
		olderThan string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete sessions not updated for a while (pinned ones stay)",
		Long: `Delete every session, in every project, that has not been updated for
--older-than (default 30d). Pinned sessions are never deleted. Ages take
d, h, m and s units: 30d, 12h, 1d12h, 90m.`,
		Example: `  recall gc --dry-run
  recall gc --older-than 90d`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			age, err := parseAge(olderThan)
			if err != nil {
				return usageError("--older-than takes an age such as 30d, 12h or 90m", "%v", err)
			}
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			rep, err := recall.Cleanup(ctx, st, recall.CleanupOptions{OlderThan: time.Now().Add(-age), DryRun: dryRun})
			if err != nil {
				return err
			}
			if a.json {
				if rep.Removed == nil {
					rep.Removed = []recall.Meta{}
				}
				return a.printJSON(struct {
					DryRun bool `json:"dry_run"`
					recall.CleanupReport
				}{dryRun, rep})
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			now := time.Now()
			for _, m := range rep.Removed {
				a.printf("%s %s, updated %s\n", verb, describe(m), ago(m.Updated, now))
			}
			summary := fmt.Sprintf("%s %s not updated for %s", verb, count(len(rep.Removed), "session"), olderThan)
			if rep.Kept > 0 {
				summary += fmt.Sprintf("; kept %d pinned", rep.Kept)
			}
			a.printf("%s\n", summary)
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "30d", "remove sessions not updated for this long (d, h, m, s)")
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "only report what would be removed")
	return cmd
}
