package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// newImportRecallCmd is 'recall import recall FILE': it reads recall's own
// JSONL export back into the store.
func newImportRecallCmd(a *app) *cobra.Command {
	var dir, as string
	cmd := &cobra.Command{
		Use:   "recall FILE",
		Short: "Import sessions exported by 'recall export --format jsonl'",
		Long: `Read a JSONL export of recall ('recall export --format jsonl'; FILE "-" is
stdin) and write each session in it, with its subagent records, into the
store. Every entry keeps its seq, time, payload bytes and usage, so the
imported session's items are the exported ones byte for byte, and its title,
labels, metadata, archive and pin state, fork origin and usage are the same.

A session goes to the key the export names (--project and --as change it).
A session already there is never overwritten: if it holds the exported log
or its start, only the missing entries are added (importing a file twice
changes nothing); if it holds another log, the session is imported under a
new ID (or, with --as, the import fails).

Entries a store would refuse (an item that is not a JSON object, damaged or
written by another program) are kept, with their bytes, as entries of kind
"damaged" that readers skip; the view is the same.`,
		Example: `  recall export 0199a3f2-1b --format jsonl -o chat.jsonl
  recall --store sqlite:///tmp/r.db import recall chat.jsonl
  ssh host recall export 0199a3f2 --format jsonl | recall import recall -`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			var opts export.ImportOptions
			if dir != "" {
				p, err := project(dir)
				if err != nil {
					return err
				}
				opts.Project = p
			}
			if as != "" {
				if err := recall.ValidateID(as); err != nil {
					return usageError("--as takes a session ID: 1-128 characters of A-Z a-z 0-9 . _ -", "%v", err)
				}
				opts.Session = as
			}
			sessions, err := readExport(a, argv[0])
			if err != nil {
				return err
			}
			if as != "" && len(sessions) > 1 {
				return usageError("import the file without --as", "--as names one session and %s holds %d", argv[0], len(sessions))
			}
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			var results []export.ImportResult
			for _, s := range sessions {
				r, err := export.Import(ctx, st, s, opts)
				if err != nil {
					return err
				}
				results = append(results, r)
				if !a.json {
					a.printf("%s\n", describeImport(s, r))
				}
			}
			a.indexSearch(ctx, st)
			if a.json {
				return a.printJSON(results)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "project", "", "import into the project of this `DIR` (default: the project the export names)")
	cmd.Flags().StringVar(&as, "as", "", "import the session under this session `ID`")
	return cmd
}

// readExport reads and checks the whole export at path ("-" is stdin)
// before anything is written.
func readExport(a *app, path string) ([]*export.Session, error) {
	var r io.Reader = a.stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, withHint(err, "name a file written by 'recall export --format jsonl', or - for stdin")
		}
		defer f.Close()
		r, name = f, path
	}
	sessions, err := export.ReadJSONL(r)
	if errors.Is(err, export.ErrInvalidLog) {
		return nil, withHint(fmt.Errorf("%s: %w", name, err), "the file must be written by 'recall export --format jsonl'")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sessions, nil
}

// describeImport is the line 'recall import recall' prints for a session.
func describeImport(s *export.Session, r export.ImportResult) string {
	line := fmt.Sprintf("%s %s", r.Status, r.Key.Session)
	if s.Meta.Title != "" {
		line += fmt.Sprintf(" (%s)", s.Meta.Title)
	}
	if r.Key != r.From {
		line += " from " + r.From.String()
	}
	if r.Entries == 1 {
		line += ": 1 entry written"
	} else {
		line += fmt.Sprintf(": %d entries written", r.Entries)
	}
	if r.Damaged > 0 {
		line += fmt.Sprintf(", %d kept as damaged", r.Damaged)
	}
	if n := len(r.Subagents); n > 0 {
		line += fmt.Sprintf("; %s", count(n, "subagent record"))
	}
	return line
}
