package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/secrets"
)

// redactFlags are the flags of recall redact.
type redactFlags struct {
	all, dryRun bool
	dir         string
}

func newRedactCmd(a *app) *cobra.Command {
	var f redactFlags
	cmd := &cobra.Command{
		Use:   "redact ID... | --all",
		Short: "Remove secrets from sessions already stored, rewriting their logs",
		Long: `Find the secrets in stored sessions, with the rules the write path uses
(gitleaks' rules, URL passwords and every --redact-pattern), and remove
them from the stored bytes: each entry that holds one (an item, a title, a
compaction's items) is rewritten in place, its secrets replaced by
[REDACTED:rule], and a redaction entry is appended that lists, per entry
rewritten, each finding's rule and position, never the secret. Subagent
records are redacted with their session.

This is the one command that rewrites history. Each session is rewritten
in one atomic step: after a crash it holds the old bytes or the new, never
a mix, and 'recall check' verifies it afterwards. The store's indexes are
rewritten with it (the file store's list index and search index, the SQL
stores' search rows), and a mirror replaces the replica's copy of each
entry. On an encrypted store (--encrypt-key) the entries are opened,
redacted and sealed again with the session's key.

--dry-run only reports, per session, what would be redacted. IDs are
resolved as the other commands resolve them; --all takes every session of
every project (or of --project), in the trash too.`,
		Example: `  recall redact 0199a3f2 --dry-run
  recall redact 0199a3f2
  recall redact --all --redact-pattern 'internal=corp-[0-9a-f]{16}'`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			if f.all != (len(argv) == 0) {
				return usageError("give session IDs or --all", "redact takes session IDs or --all, not both and not neither")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.redactSessions(cmd, argv, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.all, "all", "a", false, "redact every session of every project (in the trash too)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "only report what would be redacted")
	fl.StringVar(&f.dir, "project", "", "with --all, only the sessions of this project `directory`")
	return cmd
}

// redactJSON is the shape of redact --json.
type redactJSON struct {
	DryRun   bool               `json:"dry_run"`
	Scanned  int                `json:"scanned"`
	Sessions []secrets.Redacted `json:"sessions"` // those holding secrets
	Redacted secrets.Report     `json:"redacted"`
}

func (a *app) redactSessions(cmd *cobra.Command, refs []string, f redactFlags) error {
	ctx := cmd.Context()
	r, err := a.redactor()
	if err != nil {
		return err
	}
	var st recall.Store
	var metas []recall.Meta
	if f.all {
		st, metas, err = a.everySession(ctx, f.dir)
	} else {
		st, metas, err = resolveWithTrash(cmd, a, refs)
	}
	if err != nil {
		return err
	}
	sum := redactJSON{DryRun: f.dryRun, Sessions: []secrets.Redacted{}, Redacted: secrets.Report{}}
	for _, m := range metas {
		done, err := r.Tree(ctx, st, m.Key, f.dryRun)
		for _, d := range done {
			sum.Scanned++
			if d.Report.Total() == 0 {
				continue
			}
			sum.Sessions = append(sum.Sessions, d)
			sum.Redacted.Add(d.Report)
			if !a.json {
				verb := "redacted"
				if f.dryRun {
					verb = "would redact"
				}
				a.printf("%s %s in %d entries of %s\n", verb, d.Report, d.Entries, describeKey(d.Key, m))
			}
		}
		if errors.Is(err, recall.ErrUnsupported) {
			return withHint(fmt.Errorf("redact: %w", err), "the file store, SQLite, PostgreSQL, Redis and mem:// can rewrite their logs")
		}
		if err != nil {
			return fmt.Errorf("redact: %w", err)
		}
	}
	if a.json {
		return a.printJSON(sum)
	}
	verb := "redacted"
	if f.dryRun {
		verb = "would redact"
	}
	a.printf("%d sessions scanned, %d holding secrets: %s %s\n", sum.Scanned, len(sum.Sessions), verb, sum.Redacted)
	return nil
}

// describeKey names key in a message: as describe names its session m,
// with the subpath of a subagent record.
func describeKey(key recall.Key, m recall.Meta) string {
	if key.Subpath != "" {
		return describe(m) + " (" + key.Subpath + ")"
	}
	return describe(m)
}

// everySession lists every main session of the store, or of the project
// of dir, archived and trashed ones too.
func (a *app) everySession(ctx context.Context, dir string) (recall.Store, []recall.Meta, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, nil, err
	}
	proj := ""
	if dir != "" {
		if proj, err = project(dir); err != nil {
			return nil, nil, err
		}
	}
	var out []recall.Meta
	for _, trashed := range []bool{false, true} {
		opts := recall.ListOptions{IncludeArchived: true, Trashed: trashed, Limit: 1000}
		for {
			page, err := st.List(ctx, proj, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("read sessions: %w", err)
			}
			out = append(out, page.Sessions...)
			if page.Next == "" {
				break
			}
			opts.Cursor = page.Next
		}
	}
	return st, out, nil
}
