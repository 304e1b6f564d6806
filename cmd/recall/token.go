package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/server/audit"
)

func newTokenCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the bearer tokens of 'recall serve'",
		Long: `Manage the bearer tokens 'recall serve --auth token' accepts. A token
belongs to one user, who sees only their own conversations; an admin token
may also list and remove every user's sessions, but not read them.

Only a hash of each token is kept, in the store itself (--store/--home), so
every 'recall serve' over that store accepts it at once, and a revoked
token stops working on all of them.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTokenCreateCmd(a), newTokenLsCmd(a), newTokenRevokeCmd(a))
	return cmd
}

func newTokenCreateCmd(a *app) *cobra.Command {
	var (
		user     string
		admin    bool
		readOnly bool
		expires  string
	)
	cmd := &cobra.Command{
		Use:   "create --user NAME [--admin] [--read-only] [--expires AGE]",
		Short: "Make a new token and print it, once",
		Long: `Make a new bearer token for --user and print it on stdout: it is shown
this once and cannot be recovered, since only its hash is kept. Nothing
else goes to stdout, so TOKEN=$(recall token create --user alice) works;
with --json the token comes with its id, user, creation time and expiry.
With --expires the token stops working that long from now (every server
refuses it from then on); without, it works until it is revoked.`,
		Example: `  recall token create --user alice
  recall token create --user ci --expires 30d
  recall token create --user ops --admin --store postgres://recall@db/recall`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tokenCreate(cmd.Context(), user, server.TokenOptions{Admin: admin, ReadOnly: readOnly}, expires)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user the token serves as (1-128 characters of A-Z a-z 0-9 . _ -)")
	cmd.Flags().BoolVar(&admin, "admin", false, "an admin token: lists and removes every user's sessions")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "a reader's token: it reads and never writes (a write is refused with 403)")
	cmd.Flags().StringVar(&expires, "expires", "", "how long the token works, from now: 30d, 12h, 1y, 1d12h (default: until revoked)")
	return cmd
}

func (a *app) tokenCreate(ctx context.Context, user string, opts server.TokenOptions, expires string) error {
	if user == "" {
		return usageError("usage: recall token create --user NAME [--admin] [--read-only] [--expires AGE]", "token create: --user is required")
	}
	if err := server.ValidateUser(user); err != nil {
		return usageError("user names are 1-128 characters of A-Z a-z 0-9 . _ -", "--user %q: %v", user, err)
	}
	if expires != "" {
		d, err := age.Parse(expires)
		if err != nil {
			return usageError("--expires takes an age such as 30d, 12h or 1y", "--expires: %v", err)
		}
		opts.Expires = time.Now().Add(d).Truncate(time.Second)
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	token, info, err := server.CreateTokenWith(ctx, st, user, opts)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	a.recordLocal(ctx, st, audit.Event{Action: audit.ActionTokenCreate, User: info.User,
		Detail: map[string]string{"token_id": info.ID, "admin": strconv.FormatBool(info.Admin)}})
	if a.json {
		return a.printJSON(struct {
			Token string `json:"token"`
			server.TokenInfo
		}{token, info})
	}
	a.printf("%s\n", token)
	kind := "token"
	if info.Admin {
		kind = "admin token"
	}
	until := ""
	if !info.Expires.IsZero() {
		until = ", until " + info.Expires.Local().Format(time.DateTime)
	}
	a.notef("created %s %s for user %s%s; it is shown this once, keep it secret\n", kind, info.ID, info.User, until)
	return nil
}

func newTokenLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tokens: id, user, admin, created, expires (never the token itself)",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tokenLs(cmd.Context())
		},
	}
}

func (a *app) tokenLs(ctx context.Context) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	tokens, err := server.ListTokens(ctx, st)
	if err != nil {
		return fmt.Errorf("token ls: %w", err)
	}
	if a.json {
		return a.printJSON(orEmpty(tokens))
	}
	if len(tokens) == 0 {
		a.notef("no tokens; make one with 'recall token create --user NAME'\n")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tADMIN\tCREATED\tEXPIRES")
	now := time.Now()
	for _, t := range tokens {
		admin := "-"
		if t.Admin {
			admin = "yes"
		}
		expires := "never"
		if !t.Expires.IsZero() {
			expires = t.Expires.Local().Format(time.DateTime)
			if t.Expired(now) {
				expires += " (expired)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.User, admin, t.Created.Local().Format(time.DateTime), expires)
	}
	return tw.Flush()
}

func newTokenRevokeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: every server refuses it from now on",
		Long: `Revoke the token whose id ('recall token ls') is ID; a longer prefix of the
token's hash works too. Every 'recall serve' over the store refuses the
token from its next request on.`,
		Example: `  recall token revoke 3f9a2c41d07e`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.tokenRevoke(cmd.Context(), argv[0])
		},
	}
}

func (a *app) tokenRevoke(ctx context.Context, id string) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	info, err := server.RevokeToken(ctx, st, id)
	switch {
	case errors.Is(err, server.ErrNoToken):
		return withHint(fmt.Errorf("token revoke: %w", err), "run 'recall token ls' to see the token ids")
	case errors.Is(err, server.ErrAmbiguousToken):
		return withHint(fmt.Errorf("token revoke: %w", err), "give more of the id")
	case err != nil:
		return fmt.Errorf("token revoke: %w", err)
	}
	a.recordLocal(ctx, st, audit.Event{Action: audit.ActionTokenRevoke, User: info.User, Detail: map[string]string{"token_id": info.ID}})
	if a.json {
		return a.printJSON(info)
	}
	a.printf("revoked token %s of user %s\n", info.ID, info.User)
	return nil
}
