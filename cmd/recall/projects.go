package main

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/termsafe"
)

func newProjectsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "projects",
		Short: "List the projects that hold sessions",
		Long: `List every project of the store with its number of sessions and when one
was last updated. A project is a working directory turned into a key, the
way Claude Code names its folders: /home/me/src/app is -home-me-src-app.
The service's own projects (_server.*) are left out.`,
		Args: args(cobra.NoArgs),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, _ []string) error {
			ps, err := recall.Projects(ctx, st)
			if err != nil {
				return err
			}
			ps = slices.DeleteFunc(ps, func(p recall.ProjectInfo) bool { return reservedProject(p.Project) })
			if a.json {
				return a.printJSON(projectsJSON(ps))
			}
			if len(ps) == 0 {
				a.notef("no projects yet; start a session with 'recall chat'\n")
				return nil
			}
			// newest first, as ls orders sessions
			slices.SortStableFunc(ps, func(x, y recall.ProjectInfo) int { return y.Updated.Compare(x.Updated) })
			now := time.Now()
			rows := [][]string{{"PROJECT", "SESSIONS", "UPDATED"}}
			for _, p := range ps {
				rows = append(rows, []string{termsafe.Escape(p.Project), strconv.Itoa(p.Sessions), age.Ago(p.Updated, now)})
			}
			return writeTable(a.stdout, rows)
		}),
	}
}
