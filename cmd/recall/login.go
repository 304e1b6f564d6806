package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/recallkit/recall/remotestore"
)

func newLoginCmd(a *app) *cobra.Command {
	var token string
	cmd := &cobra.Command{
		Use:   "login URL [--token TOKEN]",
		Short: "Keep a token for a recall serve, so that its URL works as a store",
		Long: `Check a bearer token against the recall serve at URL (https://host[:port][/prefix],
or http:// to a loopback host) and keep it for that server, so that URL works
as a store: recall --store URL ls, recall chat --mirror URL.

Without --token it asks for the token on the terminal, without echo (or reads
one line of stdin when that is not a terminal). The token is kept in
$XDG_CONFIG_HOME/recall/credentials.json (~/.config/recall when XDG_CONFIG_HOME
is not set), a file only you can read (mode 0600 in a 0700 directory), written
atomically. RECALL_TOKEN, when set, is used instead of any kept token.`,
		Example: `  recall login https://recall.example.com
  recall login https://recall.example.com --token "$TOKEN"
  recall --store https://recall.example.com ls`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.login(cmd.Context(), argv[0], token)
		},
	}
	cmd.Flags().StringVar(&token, "token", "", "the token (default: asked for on the terminal)")
	return cmd
}

func newLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout URL",
		Short: "Forget the token kept for a recall serve",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, argv []string) error {
			found, err := remotestore.RemoveToken(argv[0])
			if err != nil {
				return err
			}
			if !found {
				a.notef("recall: no token was kept for %s\n", argv[0])
				return nil
			}
			a.notef("recall: forgot the token of %s\n", argv[0])
			return nil
		},
	}
}

func (a *app) login(ctx context.Context, raw, token string) error {
	u, err := remotestore.CheckURL(raw)
	if err != nil {
		return usageError("recall login https://host[:port][/prefix], or http:// to localhost", "login: %v", err)
	}
	if token == "" {
		if token, err = a.readSecret("Token for " + u.String() + ": "); err != nil {
			return err
		}
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return usageError("paste the token that `recall token create` printed on the server", "login: no token given")
	}
	st, err := remotestore.Open(ctx, u.String(), remotestore.Options{Token: token})
	if err != nil {
		return err
	}
	defer st.Close()
	me, err := st.Me(ctx)
	if errors.Is(err, remotestore.ErrUnauthorized) {
		return withHint(fmt.Errorf("login: %s refused the token", u), "check the token, or create one on the server: recall token create --user NAME")
	}
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if err := remotestore.SaveToken(u.String(), token); err != nil {
		return err
	}
	path, _ := remotestore.CredentialsPath()
	mode := ""
	if me.ReadOnly {
		mode = " (read-only)"
	}
	a.notef("recall: logged in to %s as %s%s; the token is kept in %s\n", u, me.User, mode, path)
	return nil
}

// readSecret asks for a secret on the terminal without echo, or reads a
// line of stdin when stdin is not a terminal.
func (a *app) readSecret(prompt string) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(f.Fd()) {
		fmt.Fprint(a.stderr, prompt)
		b, err := term.ReadPassword(f.Fd())
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", fmt.Errorf("login: reading the token: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usageError("give it with --token, or on stdin", "login: no token on stdin")
	}
	return line, nil
}
