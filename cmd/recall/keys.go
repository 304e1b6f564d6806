package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/server"
)

// envEncryptKey names the key source of an encrypted store when
// --encrypt-key is not given.
const envEncryptKey = "RECALL_ENCRYPT_KEY"

// encrypted returns st encrypted with the key --encrypt-key or
// RECALL_ENCRYPT_KEY names (and the old keys of a rotation), or st itself
// when neither is set.
func (a *app) encrypted(ctx context.Context, st recall.Store) (recall.Store, error) {
	src := a.encryptKey
	if src == "" {
		src = os.Getenv(envEncryptKey)
	}
	if src == "" {
		if a.userKeys != "" {
			return nil, usageError("give the server's own key too: --encrypt-key SOURCE (recall keys new makes one)", "--user-keys needs --encrypt-key, for the server's own records")
		}
		if len(a.oldKeys) > 0 {
			return nil, usageError("pass the new key with --encrypt-key or "+envEncryptKey, "--old-key without a current key")
		}
		return st, nil
	}
	if a.ring == nil {
		ring, err := encrypt.LoadKeyring(ctx, src, a.oldKeys...)
		if err != nil {
			return nil, fmt.Errorf("encryption key: %w", err)
		}
		a.ring = &ring // a key command runs once
	}
	if a.userKeys != "" {
		return encrypt.Wrap(st, userKeys(a.userKeys, *a.ring), encrypt.Options{}), nil
	}
	return encrypt.Wrap(st, *a.ring, encrypt.Options{}), nil
}

// userKeys is the KeyProvider of recall serve --user-keys DIR: the
// projects of each user of the service are sealed under the key in
// DIR/USER.key, so that removing that file makes the user's sessions
// unreadable everywhere (crypto-shredding); the server's own projects
// (tokens, the audit log) and any other under ring, --encrypt-key's.
func userKeys(dir string, ring encrypt.Keyring) encrypt.KeyProvider {
	files := encrypt.DirKeys(dir)
	return encrypt.ProviderFunc(func(ctx context.Context, project string) (encrypt.Keyring, error) {
		if user, _, ok := server.ProjectOwner(project); ok {
			return files.Keys(ctx, user)
		}
		return ring, nil
	})
}

func newKeysCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make and rotate the keys of an encrypted store",
		Long: `An encrypted store seals every item and title with a data key of its
session, wrapped under the key --encrypt-key (or ` + envEncryptKey + `) names:
  file:PATH      a file holding the key (a plain path works too)
  env:NAME       an environment variable holding it
  cmd:COMMAND    the output of a command (a password manager, a KMS client)
A key is 32 bytes, written as base64 or as 64 hex digits.`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newKeysNewCmd(a), newKeysRotateCmd(a))
	return cmd
}

func newKeysNewCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "new",
		Short: "Print a new random key",
		Long: `Print a new random key, base64, on standard output. Keep it where
--encrypt-key can read it, and somewhere safe: without it the sessions it
seals cannot be read.`,
		Example: `  recall keys new > ~/.config/recall/key && chmod 600 ~/.config/recall/key
  recall --encrypt-key file:~/.config/recall/key chat`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := encrypt.GenerateKEK()
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]string{"key": k.String(), "id": k.ID()})
			}
			fmt.Fprintln(a.stdout, k.String())
			return nil
		},
	}
}

func newKeysRotateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate --old-key SOURCE",
		Short: "Wrap every session's data keys under the current key",
		Long: `Walk every session of the store and wrap its data keys under the current
key (--encrypt-key), reading them with the old keys (--old-key, one or
more). No log is rewritten: each session that needs it gets one entry with
its data keys wrapped anew. Run it again after an interruption, or after
writers still using an old key have stopped: sessions done already are
counted as current. Once it reports no failure, the old key opens nothing
the new one does not, and can be destroyed.`,
		Example: `  recall keys new > new.key
  recall keys rotate --encrypt-key file:new.key --old-key file:old.key`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(a.oldKeys) == 0 {
				return usageError("name the key the store was encrypted with", "--old-key is required")
			}
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			rep, err := encrypt.Rotate(ctx, st, nil)
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				a.printf("%d sessions: %d rotated (%d data keys), %d already current, %d failed\n",
					rep.Sessions, rep.Rewrapped, rep.DataKeys, rep.Current, len(rep.Failed))
				for _, f := range rep.Failed {
					fmt.Fprintf(a.stderr, "recall: %s: %s\n", f.Key, f.Error)
				}
			}
			if len(rep.Failed) > 0 {
				return withHint(fmt.Errorf("%d sessions were not rotated", len(rep.Failed)), "pass every old key with --old-key, then run 'recall keys rotate' again")
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&a.oldKeys, "old-key", nil, "a key the store was encrypted with (file:PATH, env:NAME or cmd:COMMAND); repeat for several")
	return cmd
}
