package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/termsafe"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/server/audit"
)

func newShareCmd(a *app) *cobra.Command {
	var (
		expires, base string
		live          bool
	)
	cmd := &cobra.Command{
		Use:   "share ID",
		Short: "Make a read-only link to a session that 'recall serve' opens without a token",
		Long: `Make a share link to the session ID: 'recall serve' over this store shows
the session's page at /share/TOKEN to anyone who has the link, without a
token, until it expires (--expires, default 7d; never) or is revoked
('recall share revoke'). It shows the session as it is now; --live shows it
as it is when the link is opened. The page runs no script and asks search
engines not to index it. The token is printed once; --url puts the server's
address in front of it.`,
		Example: `  recall share 0199a3f2-1b --url http://127.0.0.1:8080
  recall share 0199a3f2-1b --expires 1d --live
  recall share ls
  recall share revoke 3f9a1c`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			opts := server.ShareOptions{Live: live}
			if expires != "never" {
				d, err := age.Parse(expires)
				if err != nil {
					return usageError("--expires takes an age such as 7d or 12h, or never", "--expires: %v", err)
				}
				opts.Expires = time.Now().Add(d)
			}
			ctx := cmd.Context()
			st, m, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			user := server.DefaultUser // the local viewer's, who owns every project of a home
			if owner, _, ok := server.ProjectOwner(m.Key.Project); ok {
				user = owner
			}
			token, sh, err := server.CreateShare(ctx, st, user, m.Key, opts)
			if err != nil {
				return fmt.Errorf("share %s: %w", m.Key.Session, err)
			}
			a.recordLocal(ctx, st, audit.Event{Action: audit.ActionShare, User: user, Session: m.Key.Session, Detail: map[string]string{"share": sh.ID}})
			link := strings.TrimSuffix(base, "/") + "/share/" + token
			if a.json {
				return a.printJSON(struct {
					server.Share
					Token string `json:"token"`
					URL   string `json:"url"`
				}{sh, token, link})
			}
			a.printf("%s\n", link)
			until := "never expires"
			if !sh.Expires.IsZero() {
				until = "works until " + sh.Expires.Local().Format(time.DateTime)
			}
			a.notef("shared %s as link %s; it %s; 'recall share revoke %s' ends it\n", describe(m), sh.ID, until, sh.ID)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&expires, "expires", "7d", "how long the link works: an age (7d, 12h), or never")
	fl.BoolVar(&live, "live", false, "show the session as it is when the link is opened")
	fl.StringVar(&base, "url", "", "the address of the server that serves this store, put in front of the link")
	cmd.AddCommand(newShareLsCmd(a), newShareRevokeCmd(a))
	return cmd
}

func newShareLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the share links of the store (never their tokens)",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, _ []string) error {
			if err := server.IndexShares(ctx, st); err != nil {
				return err
			}
			shares, err := server.ListShares(ctx, st, "")
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(orEmpty(shares))
			}
			if len(shares) == 0 {
				a.notef("no share links\n")
				return nil
			}
			return writeShares(a, shares)
		}),
	}
}

func writeShares(a *app, shares []server.Share) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tSESSION\tCREATED\tEXPIRES\tSHOWS")
	for _, sh := range shares {
		expires, shows := "never", "live"
		if !sh.Expires.IsZero() {
			expires = sh.Expires.Local().Format(time.DateTime)
		}
		if sh.AtSeq > 0 {
			shows = fmt.Sprintf("up to seq %d", sh.AtSeq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sh.ID, termsafe.Escape(sh.User), termsafe.Escape(sh.Session),
			sh.Created.Local().Format(time.DateTime), expires, shows)
	}
	return tw.Flush()
}

func newShareRevokeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "End a share link: every server answers 404 for it from then on",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, argv []string) error {
			if err := server.IndexShares(ctx, st); err != nil {
				return err
			}
			sh, err := server.RevokeShare(ctx, st, "", argv[0])
			switch {
			case errors.Is(err, server.ErrNoShare):
				return withHint(fmt.Errorf("share revoke %s: %w", argv[0], err), "'recall share ls' lists the links")
			case errors.Is(err, server.ErrAmbiguousToken):
				return withHint(fmt.Errorf("share revoke: %w", err), "give more of the id")
			case err != nil:
				return err
			}
			a.recordLocal(ctx, st, audit.Event{Action: audit.ActionShare, User: sh.User, Session: sh.Session, Detail: map[string]string{"share": sh.ID, "revoked": "true"}})
			a.printf("revoked share link %s of %s\n", sh.ID, sh.Session)
			return nil
		}),
	}
}
