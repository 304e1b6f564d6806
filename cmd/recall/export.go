package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/sessionref"
)

// exported is what 'recall export --json' reports for one session.
type exported struct {
	Key    recall.Key `json:"key"`
	Title  string     `json:"title,omitempty"`
	Format string     `json:"format"`
	File   string     `json:"file"`
	Bytes  int64      `json:"bytes"`
}

// exportFlags are the flags of recall export.
type exportFlags struct {
	format, out, dir    string
	all, allProj, force bool
}

func newExportCmd(a *app) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export ID... | --all | --all-projects",
		Short: "Write sessions out as Markdown, HTML, JSON or recall's own JSONL",
		Long: `Export sessions. ID is a full ID, a unique ID prefix, or an exact title.

Formats:
  markdown  for people: a heading per turn, tool calls and outputs in fenced
            blocks, long ones folded; readable in a GitHub pull request
            (default)
  html      one self-contained page: no script, nothing loaded, light and
            dark, every piece of content escaped
  json      the item list of the OpenAI Conversations API
            ({"object":"list","data":[...]}), for other tools
  jsonl     recall's own log, lossless; 'recall import recall FILE' reads it
            back into any store

Markdown and HTML show the whole history (items later compacted away or
removed included, marked) and the session's subagent records; JSON holds the
items the model sees now; JSONL holds everything.

Where it goes:
  (no -o)      stdout; one session, or several in jsonl (one stream)
  -o FILE      that file; with no --format, its extension (.md, .html, .json,
               .jsonl) names the format
  -o DIR       one file per session in DIR, named ID.md, ID.html, ...; DIR must
               exist or be written with a trailing slash (created); --all-projects
               puts each project's sessions in a folder named by the project

--all exports every session of the project (archived ones included),
--all-projects every session of the store. An existing file is not replaced
unless --force; files are written whole or not at all, Markdown, HTML and
JSON readable by all (0644 less the umask), JSONL, a backup of the store's
log, by you only (0600). A file of several sessions is reported in one line.`,
		Example: `  recall export 0199a3f2-1b --format markdown > session.md
  recall export 0199a3f2-1b -o session.html
  recall export --all -o exports/ --format html
  recall export --all-projects --format jsonl -o backup.jsonl`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, refs []string) error {
			return a.export(cmd, refs, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.format, "format", "f", "", "output `format`: markdown, html, json or jsonl (default markdown, or the -o file's extension)")
	fl.StringVarP(&f.out, "output", "o", "", "write to `FILE` or into DIR (default stdout)")
	fl.BoolVarP(&f.all, "all", "a", false, "export every session of the project")
	fl.BoolVar(&f.allProj, "all-projects", false, "export every session of every project")
	fl.StringVar(&f.dir, "project", "", "with --all: the project of this `DIR` (default: the working directory)")
	fl.BoolVar(&f.force, "force", false, "replace files that exist")
	return cmd
}

// export writes the sessions refs name, or with --all or --all-projects
// every session of the project or the store, where and as f says; with
// --json and -o it reports the files written.
func (a *app) export(cmd *cobra.Command, refs []string, f exportFlags) error {
	format, err := exportFormat(cmd, f.format, f.out, a.json)
	if err != nil {
		return err
	}
	if err := checkExportArgs(cmd, refs, f); err != nil {
		return err
	}
	ctx := cmd.Context()
	metas, err := exportTargets(ctx, a, refs, f.all, f.allProj, f.dir)
	if err != nil {
		return err
	}
	if len(metas) == 0 {
		return withHint(errors.New("no sessions to export"), "run 'recall ls --all' to see the sessions")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	plan, err := planOutput(f.out, format, metas, f.allProj, f.force)
	if err != nil {
		return err
	}
	var report []exported
	for _, tg := range plan {
		written, err := a.writeTarget(ctx, st, format, tg)
		if err != nil {
			return err
		}
		report = append(report, written...)
	}
	if a.json && f.out != "" && f.out != "-" {
		return a.printJSON(report)
	}
	return nil
}

// checkExportArgs refuses what export cannot do with refs and f: --all
// with --all-projects, IDs with either, neither, --project without --all.
func checkExportArgs(cmd *cobra.Command, refs []string, f exportFlags) error {
	switch {
	case f.all && f.allProj:
		return usageError("use one of them", "--all and --all-projects both given")
	case (f.all || f.allProj) && len(refs) > 0:
		return usageError("give session IDs or --all, not both", "session IDs given with --all or --all-projects")
	case !f.all && !f.allProj && len(refs) == 0:
		return usageError("usage: "+cmd.UseLine(), "export: no session named; give an ID, --all or --all-projects")
	case f.dir != "" && !f.all:
		return usageError("--project goes with --all", "--project given without --all")
	}
	return nil
}

// writeTarget writes the sessions of tg from st in format f, to stdout or
// whole to tg's file, and returns what went to a file, a report a
// session; unless --json, it reports the file in a line.
func (a *app) writeTarget(ctx context.Context, st recall.Store, f export.Format, tg target) ([]exported, error) {
	write := func(w io.Writer) error {
		for _, m := range tg.metas {
			// A page of the log at a time: memory does not
			// grow with the session.
			if err := export.Stream(ctx, w, f, st, m.Key); err != nil {
				return err
			}
		}
		return nil
	}
	if tg.path == "" {
		return nil, write(a.stdout)
	}
	n, err := writeFileAtomic(tg.path, exportPerm(f), write)
	if err != nil {
		return nil, err
	}
	var report []exported
	for _, m := range tg.metas {
		report = append(report, exported{Key: m.Key, Title: m.Title, Format: string(f), File: tg.path, Bytes: n})
	}
	if !a.json {
		a.printf("wrote %s: %s\n", tg.path, describeFile(tg.metas))
	}
	return report, nil
}

// exportFormat is the format the flags ask for: --format, else the
// extension of a -o file, else json under --json, else markdown.
func exportFormat(cmd *cobra.Command, format, out string, asJSON bool) (export.Format, error) {
	if cmd.Flags().Changed("format") {
		f, err := export.ParseFormat(format)
		if err != nil {
			return "", usageError("use markdown, html, json or jsonl", "unknown format %q", format)
		}
		return f, nil
	}
	if out != "" && out != "-" && !strings.HasSuffix(out, "/") {
		for _, f := range append(export.Formats, "md") {
			if strings.EqualFold(filepath.Ext(out), "."+string(f)) {
				return export.ParseFormat(string(f))
			}
		}
	}
	if asJSON && (out == "" || out == "-") {
		return export.FormatJSON, nil
	}
	return export.FormatMarkdown, nil
}

// exportTargets resolves the sessions to export, every reference first,
// so a typo exports nothing.
func exportTargets(ctx context.Context, a *app, refs []string, all, allProj bool, dir string) ([]recall.Meta, error) {
	if len(refs) > 0 {
		var metas []recall.Meta
		seen := map[recall.Key]bool{}
		for _, ref := range refs {
			_, m, err := a.resolve(ctx, ref)
			if err != nil {
				return nil, err
			}
			if !seen[m.Key] {
				seen[m.Key] = true
				metas = append(metas, m)
			}
		}
		return metas, nil
	}
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	proj := ""
	if all {
		if proj, err = project(dir); err != nil {
			return nil, err
		}
	}
	return sessionref.All(ctx, st, proj, true)
}

// target is one output of an export: a file, or stdout (path ""), and
// the sessions written to it, in order.
type target struct {
	path  string
	metas []recall.Meta
}

// planOutput decides where each session goes, and checks every path,
// before anything is written: several sessions need a directory (or the
// jsonl stream, on stdout or in one file), and an existing file is
// refused unless force.
func planOutput(out string, f export.Format, metas []recall.Meta, byProject, force bool) ([]target, error) {
	if out == "" || out == "-" {
		if len(metas) > 1 && f != export.FormatJSONL {
			return nil, usageError("write them into a directory with -o DIR/, or use --format jsonl", "%d sessions cannot share stdout in %s", len(metas), f)
		}
		return []target{{metas: metas}}, nil
	}
	if strings.IndexByte(out, 0) >= 0 {
		return nil, usageError("name a file or a directory", "-o holds a NUL byte")
	}
	wantDir := strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator))
	fi, err := os.Stat(filepath.Clean(out)) // "file/" would be ENOTDIR
	isDir := err == nil && fi.IsDir()
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("output %s: %w", out, err)
	case wantDir && err == nil && !isDir:
		return nil, usageError("name a directory", "-o %s is a file, not a directory", out)
	case !isDir && !wantDir && len(metas) > 1 && f != export.FormatJSONL:
		return nil, usageError("write them into a directory: -o "+out+"/ creates it", "%d sessions cannot share the file %s in %s", len(metas), out, f)
	case !isDir && !wantDir:
		// one file: one session, or the jsonl stream of several
		if err := refuseExisting(out, fi, force); err != nil {
			return nil, err
		}
		return []target{{path: out, metas: metas}}, nil
	}
	if !isDir {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	plan := make([]target, 0, len(metas))
	seen := map[string]bool{}
	for _, m := range metas {
		// Session IDs and project keys are [A-Za-z0-9._-] and never "." or
		// "..": a name made of them stays inside out.
		name := m.Key.Session + f.Ext()
		if byProject {
			name = filepath.Join(m.Key.Project, name)
		}
		p := filepath.Join(out, name)
		if seen[p] {
			return nil, usageError("use --all-projects, which writes a folder per project", "two sessions would both be written to %s", p)
		}
		seen[p] = true
		fi, err := os.Lstat(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("output %s: %w", p, err)
		}
		if err := refuseExisting(p, fi, force); err != nil {
			return nil, err
		}
		plan = append(plan, target{path: p, metas: []recall.Meta{m}})
	}
	return plan, nil
}

// refuseExisting refuses to replace an existing path (fi non-nil) unless
// force, and never replaces a directory.
func refuseExisting(path string, fi fs.FileInfo, force bool) error {
	switch {
	case fi == nil:
		return nil
	case fi.IsDir():
		return usageError("choose another name", "%s is a directory", path)
	case !force:
		return withHint(fmt.Errorf("%s exists", path), "use --force to replace it, or choose another name")
	}
	return nil
}

// describeFile says what one exported file holds: its session, or how
// many sessions and items (a jsonl stream of several).
func describeFile(metas []recall.Meta) string {
	if len(metas) == 1 {
		return describe(metas[0])
	}
	items := 0
	for _, m := range metas {
		items += m.ItemCount
	}
	return count(len(metas), "session") + ", " + count(items, "item")
}

// exportPerm is the mode an exported file is created with, less the
// umask. Markdown, HTML and JSON are documents to read and hand on, made
// as an editor saves one (0644). JSONL is the store's own log, every
// entry of it, which 'recall import recall' restores into a store: a
// backup, kept as private as the store keeps its files (0600).
func exportPerm(f export.Format) fs.FileMode {
	if f == export.FormatJSONL {
		return 0o600
	}
	return 0o644
}

// writeFileAtomic writes a file whole or not at all, with mode perm less
// the umask: into a temporary file beside it, synced, then renamed into
// place (over the old file, which --force allowed; see durable.Replace).
// A failure leaves no partial file behind.
func writeFileAtomic(path string, perm fs.FileMode, write func(io.Writer) error) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, fmt.Errorf("output directory: %w", err)
	}
	tmp, err := createTemp(path, perm)
	if err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	var n int64
	err = durable.Replace(path, tmp, func(w io.Writer) error {
		cw := &countWriter{w: w}
		err := write(cw)
		n = cw.n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("export to %s: %w", path, err)
	}
	return n, nil
}

// createTemp creates a new file beside path, named as os.CreateTemp would
// with the pattern "."+base+".tmp-*", but with mode perm less the umask
// (os.CreateTemp's files are 0600 whatever the umask).
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
