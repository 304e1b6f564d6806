package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/storekit"
)

func newCheckCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify the consistency of every session in the store",
		Long: `Check every session of the store (every project, archived sessions and
subagent records included): seqs are dense, the stored metadata and items
agree with the log. Each problem is printed on its own line; the exit code
is 1 when there is any. It reads every log, so it takes a while on a large
store.`,
		Args: args(cobra.NoArgs),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, _ []string) error {
			all, err := sessionref.All(ctx, st, "", true)
			if err != nil {
				return err
			}
			problems := splitJoined(storekit.Verify(ctx, st))
			if a.json {
				msgs := make([]string, len(problems))
				for i, p := range problems {
					msgs[i] = p.Error()
				}
				if err := a.printJSON(struct {
					Sessions int      `json:"sessions"`
					Problems []string `json:"problems"`
				}{len(all), msgs}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					a.printf("%v\n", p)
				}
			}
			if len(problems) > 0 {
				return withHint(fmt.Errorf("check: %s in %s", count(len(problems), "problem"), count(len(all), "session")),
					"the problems are listed on stdout; 'recall show ID --format jsonl' shows a session's log")
			}
			if !a.json {
				a.printf("ok: %s checked\n", count(len(all), "session"))
			}
			return nil
		}),
	}
}

// splitJoined returns the errors errors.Join combined, or err alone.
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}
