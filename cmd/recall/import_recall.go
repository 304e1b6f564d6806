package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/secrets"
)

// newImportRecallCmd is 'recall import recall FILE': it reads recall's own
// JSONL export back into the store.
func newImportRecallCmd(a *app) *cobra.Command {
	var dir, as string
	var noRedact bool
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
"damaged" that readers skip; the view is the same.

The file is read twice: first every line is checked (a damaged file imports
nothing), then the sessions are imported a batch of entries at a time, so
an export of any size imports in bounded memory. Stdin is first copied to a
temporary file.

Secrets in items, titles and compactions are redacted as they are read,
before the log is compared with the store's, so importing a file twice still
changes nothing; --no-redact imports the bytes as they are.`,
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
			return a.importRecall(ctx, argv[0], as != "", noRedact, opts)
		},
	}
	cmd.Flags().StringVar(&dir, "project", "", "import into the project of this `DIR` (default: the project the export names)")
	cmd.Flags().StringVar(&as, "as", "", "import the session under this session `ID`")
	registerNoRedact(cmd.Flags(), &noRedact)
	return cmd
}

// importRecall imports the export at path ("-": stdin): it checks every
// line, then imports a line at a time, saying what it did per session.
// as reports that --as named the session. Unless noRedact, each entry is
// redacted as it is read (export.ImportOptions.Rewrite).
func (a *app) importRecall(ctx context.Context, path string, as, noRedact bool, opts export.ImportOptions) error {
	f, name, done, err := openExport(a, path)
	if err != nil {
		return err
	}
	defer done()
	n, err := checkExport(f, name)
	if err != nil {
		return err
	}
	if as && n > 1 {
		return usageError("import the file without --as", "--as names one session and %s holds %d", path, n)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	redacted := secrets.Report{}
	if !noRedact {
		r, err := a.redactor()
		if err != nil {
			return err
		}
		opts.Rewrite = func(e recall.Entry) recall.Entry {
			es, rep := r.Entries([]recall.Entry{e})
			redacted.Add(rep)
			return es[0]
		}
	}
	var results []export.ImportResult
	err = export.ImportJSONL(ctx, st, f, opts, func(m recall.Meta, r export.ImportResult) error {
		results = append(results, r)
		if !a.json {
			a.printf("%s\n", describeImport(m, r))
		}
		return nil
	})
	if err != nil {
		return exportError(name, err)
	}
	a.indexSearch(ctx, st)
	if a.json {
		return a.printJSON(results)
	}
	a.noteRedacted(redacted)
	return nil
}

// openExport opens the export at path, or stdin ("-") copied to a
// temporary file, so that it can be read twice: checked whole, then
// imported. done closes it (and removes the copy).
func openExport(a *app, path string) (f *os.File, name string, done func(), err error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", nil, withHint(err, "name a file written by 'recall export --format jsonl', or - for stdin")
		}
		return f, path, func() { f.Close() }, nil
	}
	f, err = os.CreateTemp("", "recall-import-*.jsonl")
	if err != nil {
		return nil, "", nil, err
	}
	done = func() {
		f.Close()
		os.Remove(f.Name())
	}
	if _, err := io.Copy(f, a.stdin); err != nil {
		done()
		return nil, "", nil, fmt.Errorf("read stdin: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		done()
		return nil, "", nil, err
	}
	return f, "stdin", done, nil
}

// checkExport reads the whole export from r and checks every line before
// anything is written, and returns how many sessions it holds.
func checkExport(r io.Reader, name string) (int, error) {
	n := 0
	for l, err := range export.ScanJSONL(r) {
		if err != nil {
			return 0, exportError(name, err)
		}
		if l.Header != nil && !l.Nested {
			n++
		}
	}
	return n, nil
}

// exportError names the export in err, with a hint when it is not one.
func exportError(name string, err error) error {
	if errors.Is(err, export.ErrInvalidLog) {
		return withHint(fmt.Errorf("%s: %w", name, err), "the file must be written by 'recall export --format jsonl'")
	}
	return fmt.Errorf("%s: %w", name, err)
}

// describeImport is the line 'recall import recall' prints for a session.
func describeImport(m recall.Meta, r export.ImportResult) string {
	line := fmt.Sprintf("%s %s", r.Status, r.Key.Session)
	if m.Title != "" {
		line += fmt.Sprintf(" (%s)", m.Title)
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
