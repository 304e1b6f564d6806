package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/termsafe"
	"github.com/recallkit/recall/server/audit"
)

func newAuditCmd(a *app) *cobra.Command {
	var (
		q     audit.Query
		since string
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the service's audit log: who deleted, exported or listed what",
		Long: `Print the audit log that 'recall serve' keeps in its store, newest first:
each delete, restore, purge, export and share of a session, each admin's list
of another user's sessions, and each token created or revoked (by 'recall
token' too, as the actor "local"), with who did it, the request id and the
client address. It never holds what a session says, nor a token.

It reads the store directly, as 'recall token' does: run it where the
server's store is reachable (--store URL), or read GET /api/v1/audit with an
admin token. The server keeps a year of it (recall serve --audit-retention).`,
		Example: `  recall audit --store postgres://db/recall
  recall audit --action session.delete --since 7d
  recall audit --actor alice --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if since != "" {
				d, err := age.Parse(since)
				if err != nil {
					return usageError("--since takes an age such as 7d, 12h or 90m", "--since: %v", err)
				}
				q.Since = time.Now().Add(-d)
			}
			if q.Limit < 1 || q.Limit > audit.MaxLimit {
				return usageError(fmt.Sprintf("--limit takes 1 to %d", audit.MaxLimit), "--limit %d is out of range", q.Limit)
			}
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			page, err := audit.Read(ctx, st, q)
			if errors.Is(err, audit.ErrBadCursor) {
				return usageError("--cursor takes the cursor a previous page printed", "--cursor %q is not a cursor of the audit log", q.Cursor)
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(page)
			}
			return a.writeAudit(page)
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Actor, "actor", "", "only the events of this actor (a user, or local)")
	f.StringVar(&q.Action, "action", "", "only the events of this action (session.delete, session.export, token.create, ...)")
	f.StringVar(&q.User, "user", "", "only the events on this user's data")
	f.StringVar(&q.Session, "session", "", "only the events on this session")
	f.StringVar(&since, "since", "", "only the events of the last AGE (7d, 12h)")
	f.IntVar(&q.Limit, "limit", audit.DefaultLimit, "the most events to print")
	f.StringVar(&q.Cursor, "cursor", "", "go on from a previous page")
	return cmd
}

// writeAudit prints a page of the audit log as a table.
func (a *app) writeAudit(page audit.Page) error {
	if len(page.Events) == 0 && page.Next == "" {
		a.notef("no events\n")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tUSER\tSESSION\tCLIENT\tDETAIL")
	for _, ev := range page.Events {
		actor := ev.Actor
		if ev.Admin {
			actor += " (admin)"
		}
		var detail []string
		for _, k := range slices.Sorted(maps.Keys(ev.Detail)) {
			detail = append(detail, k+"="+ev.Detail[k])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ev.Time.Local().Format(time.DateTime), termsafe.Escape(actor), termsafe.Escape(ev.Action),
			termsafe.Escape(ev.User), termsafe.Escape(ev.Session), termsafe.Escape(ev.Client), termsafe.Escape(strings.Join(detail, " ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		a.notef("more: recall audit --cursor %s (with the same filters)\n", page.Next)
	}
	return nil
}

// recordLocal records an event of a command run on the store's machine:
// the actor "local", with the system user's name. An event that cannot be
// recorded is a warning; what it records has happened.
func (a *app) recordLocal(ctx context.Context, st recall.Store, ev audit.Event) {
	ev.Actor = "local"
	if u, err := user.Current(); err == nil {
		if ev.Detail == nil {
			ev.Detail = map[string]string{}
		}
		ev.Detail["os_user"] = u.Username
	}
	if err := audit.Record(ctx, st, ev); err != nil {
		a.notef("warning: not in the audit log: %v\n", err)
	}
}
