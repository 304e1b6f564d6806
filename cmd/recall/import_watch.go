package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer/watch"
	"github.com/recallkit/recall/secrets"
)

// watchFlags are the flags of recall import that follow the tools'
// folders.
type watchFlags struct {
	tool     string        // --watch TOOL
	install  bool          // --install
	rescan   time.Duration // --rescan
	noRedact bool          // --no-redact
}

func (f *watchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.tool, "watch", "", "follow the folders of `TOOL` ("+watchToolNames()+") and import its transcripts as they are written, until SIGINT or SIGTERM")
	fl.BoolVar(&f.install, "install", false, "with --watch: write a user service (systemd on Linux, launchd on macOS) that runs the watcher at login, and print how to enable it")
	fl.DurationVar(&f.rescan, "rescan", watch.DefaultRescan, "with --watch: rescan the folders this often, for changes no event reported")
	registerNoRedact(fl, &f.noRedact)
}

// set reports whether any watch flag is on the command line.
func (f *watchFlags) set(cmd *cobra.Command) bool {
	fl := cmd.Flags()
	return fl.Changed("watch") || fl.Changed("install") || fl.Changed("rescan")
}

// watchToolNames lists the values --watch takes.
func watchToolNames() string {
	var names []string
	for _, t := range importTools {
		names = append(names, t.name)
	}
	return strings.Join(append(names, "all"), ", ")
}

// watchedTools returns the tools --watch names.
func watchedTools(name string) ([]importTool, error) {
	if name == "all" {
		return importTools, nil
	}
	for _, t := range importTools {
		if t.name == name {
			return []importTool{t}, nil
		}
	}
	return nil, usageError("--watch takes "+watchToolNames(), "unknown tool %q", name)
}

// runWatch is recall import --watch: it follows the tools' folders until
// SIGINT or SIGTERM, or with --install writes the service that does.
func (a *app) runWatch(cmd *cobra.Command, f watchFlags) error {
	if f.tool == "" {
		return usageError("name the tool: --watch "+watchToolNames(), "--install and --rescan go with --watch")
	}
	if f.rescan <= 0 {
		return usageError("give a duration such as 30s", "--rescan must be positive")
	}
	tools, err := watchedTools(f.tool)
	if err != nil {
		return err
	}
	if f.install {
		return a.installWatch(f, tools)
	}
	var sources []watch.Source
	for _, t := range tools {
		roots, err := t.paths()
		if err != nil {
			return err
		}
		src := watch.Source{Tool: t.name, Roots: roots, Find: t.find, Mapper: t.mapper}
		if t.follow != nil {
			src.Import = t.follow()
		}
		sources = append(sources, src)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, rs, err := a.importStore(ctx, f.noRedact, false)
	if err != nil {
		return err
	}
	var redacted secrets.Report // what the reports printed so far counted
	if err := watch.Run(ctx, st, sources, watch.Options{
		Rescan: f.rescan,
		Report: func(r watch.Report) {
			a.printWatchReport(r, f.rescan)
			if rs != nil && !a.json {
				redacted = a.noteRedactedSince(rs, redacted)
			}
		},
	}); err != nil {
		return err
	}
	a.notef("stopped\n")
	return nil
}

// printWatchReport prints one report of the watcher: imports on stdout,
// failures and problems on stderr; with --json every report is one JSON
// line on stdout.
func (a *app) printWatchReport(r watch.Report, rescan time.Duration) {
	if a.json {
		_ = json.NewEncoder(a.stdout).Encode(r)
		return
	}
	at := r.Time.Format(time.DateTime)
	switch {
	case r.Watching != nil:
		a.notef("%s watching %s (a rescan every %s)\n", at, strings.Join(r.Watching, ", "), rescan)
	case r.Problem != "":
		a.notef("%s %s\n", at, r.Problem)
	case len(r.Summary.Failures) > 0:
		a.noteFailures(at+" not imported (left alone until it changes): ", r.Summary.Failures)
	default:
		a.printf("%s %s: %s: %s written (%d log entries)\n", at, r.Tool, r.File, count(r.Summary.Items, "item"), r.Summary.Entries)
	}
}

// installWatch writes the user service that runs recall import --watch
// at login, with the store and the folders this command uses.
func (a *app) installWatch(f watchFlags, tools []importTool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{exe}
	if a.home != "" {
		home, err := filepath.Abs(a.home)
		if err != nil {
			return err
		}
		args = append(args, "--home", home)
	}
	if a.storeURL != "" {
		args = append(args, "--store", a.storeURL)
	}
	if a.redact {
		args = append(args, "--redact")
	}
	for _, p := range a.redactPatterns {
		args = append(args, "--redact-pattern", p)
	}
	args = append(args, "import", "--watch", f.tool)
	if f.rescan != watch.DefaultRescan {
		args = append(args, "--rescan", f.rescan.String())
	}
	if f.noRedact {
		args = append(args, "--no-redact")
	}
	// A service does not inherit this shell's variables: those that name
	// the store and the tools' folders go into it, folders made absolute.
	var env []string
	names := []string{"RECALL_STORE", "RECALL_HOME", envRedact}
	for _, t := range tools {
		names = append(names, t.env...)
	}
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			continue
		}
		if n != "RECALL_STORE" && n != envRedact {
			if abs, err := filepath.Abs(v); err == nil {
				v = abs
			}
		}
		env = append(env, n+"="+v)
	}
	svc := watch.Service{
		Name:        "recall-watch-" + f.tool,
		Description: "recall: import " + f.tool + " transcripts as they are written",
		Args:        args,
		Env:         env,
	}
	path, enable, err := watch.Install(runtime.GOOS, svc)
	if errors.Is(err, recall.ErrUnsupported) {
		hint := "run 'recall import --watch " + f.tool + "' from the system's service manager"
		if runtime.GOOS == "windows" {
			hint = "register it with the Task Scheduler: " + watch.TaskCommand(svc)
		}
		return withHint(err, hint)
	}
	if err != nil {
		return err
	}
	a.printf("wrote %s\nenable and start it with:\n  %s\n", path, enable)
	return nil
}
