package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree around a.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "recall",
		Short: "Chat with an agent that remembers, and manage its sessions",
		Long: `recall keeps every conversation with an agent as a session: an append-only
log that survives the process. "recall chat" talks to a model (a built-in
offline model unless OPENAI_API_KEY is set); "recall chat --continue" picks
up where the last conversation in this directory stopped. The other commands
manage the sessions of the store.

The store is the JSONL file store in --home (default $RECALL_HOME, else
~/.recall), or the one --store / RECALL_STORE names:
  file:///path/to/dir           the file store in that directory (or a plain path)
  sqlite:///path/to/recall.db   SQLite
  postgres://user@host/db       PostgreSQL
  redis://host:6379/0           Redis
  mem://                        in memory, gone on exit

Exit codes: 0 ok, 1 failed, 2 bad usage.`,
		Args:              cobra.ArbitraryArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				hint := "run 'recall --help' for the commands"
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "did you mean '" + s[0] + "'?"
				}
				return usageError(hint, "unknown command %q", args[0])
			}
			return cmd.Help()
		},
	}
	root.SuggestionsMinimumDistance = 2
	pf := root.PersistentFlags()
	pf.StringVar(&a.home, "home", "", "file store home `DIR` (default $RECALL_HOME, else ~/.recall)")
	pf.StringVar(&a.storeURL, "store", "", "store `URL`: file://, sqlite://, postgres://, redis://, mem://, https:// (a recall serve; see recall login) (default $RECALL_STORE, else the file store in --home)")
	pf.StringVar(&a.encryptKey, "encrypt-key", "", "encrypt the store with the key from `SOURCE`: file:PATH, env:NAME or cmd:COMMAND (default $"+envEncryptKey+")")
	pf.BoolVar(&a.json, "json", false, "print JSON instead of text")
	pf.BoolVar(&a.redact, "redact", false, "redact secrets (API keys, tokens, private keys, URL passwords) from every item and title before the store sees them (default $RECALL_REDACT; recall import redacts by default)")
	pf.StringArrayVar(&a.redactPatterns, "redact-pattern", nil, "with redaction, also redact what `NAME=REGEXP` matches (its first group, if it has one) as [REDACTED:NAME]; repeatable; implies --redact")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newChatCmd(a),
		newLsCmd(a),
		newShowCmd(a),
		newForkCmd(a),
		newRenameCmd(a),
		newRewindCmd(a),
		newRedoCmd(a),
		newAuditCmd(a),
		newPolicyCmd(a),
		newShareCmd(a),
		newRmCmd(a),
		newTrashCmd(a),
		newGcCmd(a),
		newCheckCmd(a),
		newProjectsCmd(a),
		newMirrorCmd(a),
		newSyncCmd(a),
		newKeysCmd(a),
		newCompactCmd(a),
		newRedactCmd(a),
		newMemoryCmd(a),
		newImportCmd(a),
		newExportCmd(a),
		newSearchCmd(a),
		newServeCmd(a), newTokenCmd(a), newLoginCmd(a), newLogoutCmd(a),
		newMcpCmd(a),
	)
	for _, f := range flagCmds {
		root.AddCommand(newFlagCmd(a, f))
	}
	root.AddCommand(newLabelCmd(a))
	return root
}

// args wraps a cobra argument check so that a wrong count is a usage
// error (exit 2) naming the command's usage line.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError("usage: "+cmd.UseLine(), "%s: %v", cmd.Name(), err)
		}
		return nil
	}
}
