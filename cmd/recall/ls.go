package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/internal/sessionref"
)

func newLsCmd(a *app) *cobra.Command {
	var (
		all, archived       bool
		limit               int
		dir, cursor, source string
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the sessions of this project, newest first",
		Long: `List sessions newest-updated first: short ID, title, when it was last
updated, and how many items it holds. The short ID is the shortest prefix
that names the session unambiguously among those listed (this project,
or every project with --all); every command that takes an ID
accepts it, as well as the full ID or the exact title.

With --all or --source, a SOURCE column names the tool each session came
from: recall for the sessions recall wrote, or the import it came in by
(claude-code, codex, ...). --source keeps only the sessions of one tool.`,
		Example: `  recall ls
  recall ls --all --limit 10
  recall ls --archived --json
  recall ls --all --source claude-code
  recall ls --json --limit 100 --cursor "$(recall ls --json --limit 100 | jq -r .next)"`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageError("--limit 0 lists every session", "--limit must not be negative")
			}
			if err := checkSource(cmd, source); err != nil {
				return err
			}
			ctx := cmd.Context()
			proj := ""
			if !all {
				p, err := project(dir)
				if err != nil {
					return err
				}
				proj = p
			}
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			opts := recall.ListOptions{Limit: limit, IncludeArchived: archived, Cursor: cursor}
			if limit == 0 {
				opts.Limit = -1
			}
			page, err := pagefilter.List(ctx, st, proj, opts, listFilter(all, source))
			if cursor != "" && errors.Is(err, recall.ErrInvalidKey) {
				// The project key is derived, so the cursor is what the store refused.
				return usageError(cursorHint("ls"), "bad list cursor %q", cursor)
			}
			if err != nil {
				return withHint(fmt.Errorf("read sessions: %w", err), "check the store (--store, RECALL_STORE) and the --cursor value")
			}
			if a.json {
				return a.printJSON(listJSON(page.Sessions, page.Next))
			}
			if len(page.Sessions) == 0 {
				if source != "" {
					a.notef("no sessions from %s (without --source, ls lists every tool's)\n", source)
					return nil
				}
				if all {
					a.notef("no sessions yet; start one with 'recall chat'\n")
				} else {
					a.notef("no sessions in this project; 'recall ls --all' lists every project\n")
				}
				return nil
			}
			// Short IDs are unique among the sessions listed from here:
			// those of this project (a prefix matching one session of the
			// current project resolves to it), or of every project with
			// --all. Listing only this project keeps ls from reading the
			// whole home.
			scope, err := sessionref.All(ctx, st, proj, true)
			if err != nil {
				return err
			}
			if err := writeSessions(a.stdout, page.Sessions, scope, columns{project: all, source: all || source != ""}); err != nil {
				return err
			}
			if page.Next != "" {
				a.notef("(more sessions: --limit 0 lists them all, --cursor %s the next page)\n", page.Next)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&all, "all", "a", false, "list the sessions of every project")
	f.BoolVar(&archived, "archived", false, "include archived sessions")
	f.IntVarP(&limit, "limit", "n", 50, "show at most N sessions (0: all)")
	f.StringVar(&cursor, "cursor", "", "start after this `CURSOR`: the \"next\" of a previous --json page")
	f.StringVar(&dir, "project", "", "list the sessions of this project directory (default: the working directory)")
	f.StringVar(&source, "source", "", "list only the sessions that came from `TOOL`: recall, or an import's name (claude-code, codex, ...)")
	return cmd
}

// listFilter is what ls keeps of the sessions it lists: with all, none of
// the service's own projects (see reservedProject); with a source, only
// the sessions of that source. nil keeps every session.
func listFilter(all bool, source string) pagefilter.Keep {
	if !all && source == "" {
		return nil
	}
	ofSource := pagefilter.OfSource(source)
	return func(m recall.Meta) bool {
		if all && reservedProject(m.Key.Project) {
			return false
		}
		return ofSource == nil || ofSource(m)
	}
}
