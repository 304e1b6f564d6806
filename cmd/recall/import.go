package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/claudecode"
	"github.com/recallkit/recall/importer/codex"
	"github.com/recallkit/recall/importer/gemini"
	"github.com/recallkit/recall/importer/opencode"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/secrets"
)

// importFlags are the flags of recall import claude-code, codex, gemini and
// opencode.
type importFlags struct {
	dryRun   bool
	project  string // --project DIR
	noRedact bool   // --no-redact
}

func (f *importFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "read and count what would be imported; write nothing")
	fl.StringVar(&f.project, "project", "", "import every session into the project of `DIR` instead of the one each transcript names")
	registerNoRedact(fl, &f.noRedact)
}

// registerNoRedact adds --no-redact, which every import command takes.
func registerNoRedact(fl *pflag.FlagSet, noRedact *bool) {
	fl.BoolVar(noRedact, "no-redact", false, "keep the secrets of what is imported (API keys, tokens, private keys, URL passwords), which are otherwise replaced by [REDACTED:rule] before anything is stored; a store that redacts (--redact, redact=1) still does")
}

// importTool is one tool recall import reads: its subcommand, and what
// recall import --watch follows.
type importTool struct {
	name string
	// cmd returns the tool's subcommand, its use and help only;
	// newImportToolCmd makes it import what imp imports.
	cmd func() *cobra.Command
	// imp imports the transcripts under paths: PATH, or else paths().
	imp func(ctx context.Context, st recall.Store, paths []string, opts importer.Options) (importer.Summary, error)
	// paths returns the tool's own folders; find and mapper find and map
	// its transcripts there. follow, for a tool whose transcripts are not
	// files read line by line (opencode's database), returns one
	// watcher's watch.Source.Import instead of a mapper.
	paths  func() ([]string, error)
	find   func(path string) ([]string, error)
	mapper func(path string) importer.Mapper
	follow func() func(ctx context.Context, st recall.Store, path string) (importer.Summary, error)
	// env names the variables that move the tool's folders, which an
	// installed watcher service keeps.
	env []string
}

// importTools is the table of the tools recall import reads: each has
// its subcommand, and --watch takes its name.
var importTools = []importTool{
	{name: claudecode.Tool, cmd: newImportClaudeCodeCmd, imp: firstPath(claudecode.Import), paths: one(claudecode.DefaultPath), find: claudecode.Find, mapper: claudecode.NewMapper, env: []string{"CLAUDE_CONFIG_DIR"}},
	{name: codex.Tool, cmd: newImportCodexCmd, imp: codex.Import, paths: codex.DefaultPaths, find: codex.Find, mapper: codex.NewMapper, env: []string{"CODEX_HOME"}},
	{name: gemini.Tool, cmd: newImportGeminiCmd, imp: firstPath(gemini.Import), paths: one(gemini.DefaultPath), find: gemini.Find, mapper: gemini.NewMapper, env: []string{"GEMINI_CLI_HOME"}},
	{name: opencode.Tool, cmd: newImportOpencodeCmd, imp: opencode.Import, paths: opencode.DefaultPaths, find: opencode.Find, follow: followOpencode, env: []string{"XDG_DATA_HOME", "OPENCODE_DB"}},
}

func newImportCmd(a *app) *cobra.Command {
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Bring sessions in from Claude Code, Codex, Gemini CLI, opencode or a recall export",
		Long: `Import conversations of other tools as recall sessions, which recall can then
list, show, fork, archive and export; or read back a recall export.

Importing a tool's sessions again is safe: one already imported adds
nothing, and one that grew adds only what is new. Each imported session keeps
where it came from in its metadata (import.source, import.session,
import.file).

With --watch TOOL (claude-code, codex, gemini, opencode, or all of them), recall import
follows the tool's folders and imports each transcript as it grows, within a
second or two of a line being written, until SIGINT or SIGTERM; a rescan every
--rescan finds what no event reported. A transcript rewritten rather than
appended to is reported and left alone. Killed, it resumes from what the
store holds. --install writes a user service that runs it at login (a
systemd user unit on Linux, a launchd agent on macOS) and prints how to
enable it. For opencode it follows the database and its write-ahead log.`,
		Example: `  recall import claude-code
  recall import --watch claude-code
  recall import --watch all --install`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) > 0 {
				return usageError("run 'recall import --help' for the sources", "unknown import source %q", argv[0])
			}
			if w.set(cmd) {
				return a.runWatch(cmd, w)
			}
			return cmd.Help()
		},
	}
	w.register(cmd)
	for _, t := range importTools {
		cmd.AddCommand(a.newImportToolCmd(t))
	}
	cmd.AddCommand(newImportRecallCmd(a))
	return cmd
}

// newImportClaudeCodeCmd is the use and help of 'recall import claude-code'.
func newImportClaudeCodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "claude-code [PATH]",
		Short: "Import Claude Code transcripts (default ~/.claude/projects)",
		Long: `Import Claude Code transcripts. PATH is the projects folder (default
~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects), one project's folder, or
one transcript file.

Each transcript becomes one session, with the transcript's session ID, in the
project of the directory it was recorded in (the same project 'recall chat'
uses there, even when that directory does not exist on this machine), which
it records as 'recall chat' does, so resuming it runs its tools there. Text,
images, tool calls and results, and thinking become Responses items; the
title comes from /rename, else Claude Code's own title or summary; token
usage and times are kept; a /compact becomes a compaction; subagent
transcripts become subagent records ('recall show ID --subagents').
Bookkeeping lines, unknown kinds and a torn last line are skipped and
counted in the summary.

A progress bar is shown when stderr is a terminal. The command fails (exit 1)
only when nothing could be read.`,
		Example: `  recall import claude-code
  recall import claude-code ~/.claude/projects/-home-me-app --dry-run
  recall --store sqlite:///tmp/r.db import claude-code ~/.claude/projects/-home-me-app/5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61.jsonl`,
	}
}

// newImportCodexCmd is the use and help of 'recall import codex'.
func newImportCodexCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "codex [PATH]",
		Short: "Import Codex CLI rollouts (default ~/.codex/sessions and archived_sessions)",
		Long: `Import OpenAI Codex CLI rollouts. PATH is a folder searched for
rollout-*.jsonl and rollout-*.jsonl.zst files, or one rollout file; the
default is ~/.codex/sessions and ~/.codex/archived_sessions (under $CODEX_HOME
when it is set).

Each rollout becomes one session, with the Codex session ID, in the project of
the directory it was recorded in, which it records as 'recall chat' does. Its response items are kept byte for byte;
its compactions become compactions, its model is kept in the metadata. Events
that repeat response items, unknown kinds and a torn last line are skipped
and counted in the summary.

A progress bar is shown when stderr is a terminal. The command fails (exit 1)
only when nothing could be read.`,
		Example: `  recall import codex
  recall import codex ~/.codex/sessions/2025/10 --dry-run
  recall import codex rollout-2025-10-02T08-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl.zst --project ~/src/service`,
	}
}

// newImportToolCmd is 'recall import TOOL [PATH]': t's subcommand, which
// imports PATH, or else the tool's own folders, with t.imp.
func (a *app) newImportToolCmd(t importTool) *cobra.Command {
	var f importFlags
	cmd := t.cmd()
	cmd.Args = args(cobra.MaximumNArgs(1))
	cmd.RunE = func(cmd *cobra.Command, argv []string) error {
		paths, err := importPaths(argv, t.paths)
		if err != nil {
			return err
		}
		return a.runImport(cmd.Context(), f, func(ctx context.Context, st recall.Store, opts importer.Options) (importer.Summary, error) {
			return t.imp(ctx, st, paths, opts)
		})
	}
	f.register(cmd)
	return cmd
}

// importPaths returns the path an import command was given, absolute so
// that import.file names the file wherever recall runs, or else the
// tool's default paths.
func importPaths(argv []string, defaults func() ([]string, error)) ([]string, error) {
	if len(argv) == 0 {
		return defaults()
	}
	abs, err := filepath.Abs(argv[0])
	return []string{abs}, err
}

// one makes a tool's single default path a list.
func one(path func() (string, error)) func() ([]string, error) {
	return func() ([]string, error) {
		p, err := path()
		return []string{p}, err
	}
}

// firstPath makes the Import of a tool that reads a single path an
// importTool.imp: it imports the first of the paths, the only one that
// importPaths returns for a tool with one default path.
func firstPath(imp func(context.Context, recall.Store, string, importer.Options) (importer.Summary, error)) func(context.Context, recall.Store, []string, importer.Options) (importer.Summary, error) {
	return func(ctx context.Context, st recall.Store, paths []string, opts importer.Options) (importer.Summary, error) {
		return imp(ctx, st, paths[0], opts)
	}
}

// runImport runs one importer with the flags, a progress bar on a terminal,
// and prints the summary.
func (a *app) runImport(ctx context.Context, f importFlags, run func(context.Context, recall.Store, importer.Options) (importer.Summary, error)) error {
	opts := importer.Options{DryRun: f.dryRun}
	if f.project != "" {
		p, err := project(f.project)
		if err != nil {
			return err
		}
		opts.Project = p
	}
	st, rs, err := a.importStore(ctx, f.noRedact, f.dryRun)
	if err != nil {
		return err
	}
	var bar *progressbar.ProgressBar
	if isTerminal(a.stderr) {
		opts.Progress = func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total,
					progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetDescription("importing"),
					progressbar.OptionShowBytes(true),
					progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish(),
				)
			}
			_ = bar.Set64(done)
		}
	}
	sum, err := run(ctx, st, opts)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		if errors.Is(err, claudecode.ErrNoTranscripts) || errors.Is(err, codex.ErrNoRollouts) || errors.Is(err, gemini.ErrNoSessions) ||
			errors.Is(err, opencode.ErrNoSessions) || errors.Is(err, fs.ErrNotExist) {
			return withHint(err, "give the folder or file to import as PATH")
		}
		return err
	}
	if !f.dryRun {
		a.indexSearch(ctx, st)
	}
	var redacted secrets.Report
	if rs != nil {
		redacted = rs.Redacted()
	}
	if a.json {
		out := struct {
			importer.Summary
			Redacted secrets.Report `json:"redacted,omitempty"`
		}{sum, redacted}
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		writeSummary(a.stdout, sum)
		a.noteRedacted(redacted)
	}
	a.noteFailures("not imported: ", sum.Failures)
	if sum.Read == 0 {
		return withHint(fmt.Errorf("import %s: none of the %s could be read", sum.Tool, count(sum.Files, "file")),
			"check the path and the files' permissions")
	}
	return nil
}

// noteFailures lists the files and records an import failed on, one a
// line on stderr, each line starting with prefix.
func (a *app) noteFailures(prefix string, failures []importer.Failure) {
	for _, fl := range failures {
		where := fl.File
		if fl.Key != "" {
			where += " (" + fl.Key + ")"
		}
		a.notef("%s%s: %s\n", prefix, where, fl.Err)
	}
}

// indexSearch brings the store's search index up to date after an import,
// when the store keeps one, so that the next search does not build it in
// silence. On a terminal it says on stderr how many sessions it indexes,
// with a progress bar. The import is done already: a failure is a warning.
func (a *app) indexSearch(ctx context.Context, st recall.Store) {
	ix, ok := recall.As[search.Indexer](st)
	if !ok {
		return
	}
	var progress func(done, total int)
	var bar *progressbar.ProgressBar
	if isTerminal(a.stderr) {
		progress = func(done, total int) {
			if bar == nil {
				a.notef("indexing %s for search…\n", count(total, "session"))
				bar = progressbar.NewOptions(total,
					progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetDescription("indexing"),
					progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish(),
				)
			}
			_ = bar.Set(done)
		}
	}
	err := ix.IndexSearch(ctx, progress)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		a.notef("warning: search index not updated (the next search builds it): %s\n", err)
	}
}

// writeSummary prints what an import did, for people.
func writeSummary(w io.Writer, s importer.Summary) {
	verb, wrote := "imported", "written"
	if s.DryRun {
		verb, wrote = "would import", "to write"
	}
	fmt.Fprintf(w, "%s: %d of %s read (%s)", s.Tool, s.Read, count(s.Files, "file"), sizeText(s.Bytes))
	if s.Empty > 0 {
		fmt.Fprintf(w, ", %d without conversation", s.Empty)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "sessions %s: %d new, %d updated, %d unchanged\n", verb, s.Sessions.New, s.Sessions.Updated, s.Sessions.Unchanged)
	if s.Subagents != (importer.Counts{}) {
		fmt.Fprintf(w, "subagent records: %d new, %d updated, %d unchanged\n", s.Subagents.New, s.Subagents.Updated, s.Subagents.Unchanged)
	}
	fmt.Fprintf(w, "%s %s (%d log entries)\n", count(s.Items, "item"), wrote, s.Entries)
	if len(s.Skipped) > 0 {
		var parts []string
		total := 0
		for _, k := range s.SkippedKinds() {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Skipped[k]))
			total += s.Skipped[k]
		}
		fmt.Fprintf(w, "%s of %d skipped: %s\n", count(total, "line"), s.Lines, strings.Join(parts, ", "))
	}
	if n := len(s.Failures); n > 0 {
		fmt.Fprintf(w, "%s failed (listed on stderr)\n", count(n, "file or record"))
	}
}

// sizeText renders a byte count: "512 B", "3.4 MB".
func sizeText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}
