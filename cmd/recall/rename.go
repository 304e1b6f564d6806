package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newRenameCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID TITLE",
		Short: "Set a session's title",
		Long: `Set a session's title. A title set by a person is never replaced by an
automatic one. An empty TITLE removes the title.`,
		Example: `  recall rename 0199a3f2-1b "Parser rewrite"`,
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			st, m, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			// Several words without quotes make one title, as a person means.
			m, err = recall.NewSession(st, m.Key).SetTitle(ctx, strings.Join(argv[1:], " "), recall.TitleUser)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(listJSON([]recall.Meta{m}, ""))
			}
			if m.Title == "" {
				a.printf("%s has no title now\n", m.Key.Session)
				return nil
			}
			a.printf("%s is now %q\n", m.Key.Session, m.Title)
			return nil
		},
	}
}
