// Package watch imports the transcripts of other tools as they are
// written: it follows the tools' folders and, when a transcript grows,
// imports its new lines through importer.Run, within a second of their
// write.
//
// The watcher keeps nothing of its own. Every import is importer's
// idempotent one: a record keeps the offset and digest of the transcript
// bytes it consumed (see package importer), so a watcher killed at any
// instant, or several watchers at once, neither lose nor repeat a line,
// and a new watcher resumes from what the store holds. A transcript that
// was rewritten rather than appended to is reported and left alone
// (importer.ErrChanged), never merged.
//
// Two mechanisms find the changes, each enough alone:
//
//   - file system events (fsnotify: inotify, kqueue,
//     ReadDirectoryChangesW) on every folder below the roots, a new
//     folder included as it appears (the events are not recursive);
//     the events of one file are debounced, so a burst of writes is one
//     import;
//   - a rescan of every root at an interval, which imports each
//     transcript whose size or modification time moved since its last
//     import: for file systems that drop or never send events (network
//     mounts), for an event queue that overflowed, for folders past the
//     system's watch limit, for roots that did not exist yet, and after
//     the machine slept (a rescan follows the wake at once).
package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// Source is one tool whose transcripts a watcher follows.
type Source struct {
	// Tool names the tool as importer.Run takes it ("claude-code").
	Tool string
	// Roots are the folders followed, with every folder below them. A
	// root that does not exist yet is looked for again at each rescan.
	Roots []string
	// Find returns the transcripts below a folder (claudecode.Find).
	Find func(dir string) ([]string, error)
	// Mapper returns the importer.Mapper of one transcript
	// (claudecode.NewMapper), which importer.Run reads.
	Mapper func(path string) importer.Mapper
	// Import, for a tool whose transcripts are not files read line by
	// line (opencode's database), imports what one path Find returned
	// holds (opencode.Follower). Exactly one of Mapper and Import is
	// set. A failure it reports does not stop the watcher following the
	// path: Import reads again what failed.
	Import func(ctx context.Context, st recall.Store, path string) (importer.Summary, error)
}

// The defaults of Options.
const (
	DefaultDebounce = 250 * time.Millisecond
	DefaultMaxDelay = time.Second
	DefaultRescan   = 30 * time.Second
)

// wakeCheck is how often the watcher looks at the clocks for a sleep it
// woke from, when the rescan interval is longer.
const wakeCheck = 5 * time.Second

// Options configure Run. The zero value follows the folders with events,
// debounced by DefaultDebounce, and rescans every DefaultRescan.
type Options struct {
	// Debounce is how long a transcript must stay unchanged after a
	// change before it is imported, so that a burst of writes is one
	// import. Default: DefaultDebounce.
	Debounce time.Duration
	// MaxDelay bounds the wait of a transcript written without pause: it
	// is imported at the latest MaxDelay after its first unimported
	// change. Default: DefaultMaxDelay.
	MaxDelay time.Duration
	// Rescan is the interval of the rescans. Default: DefaultRescan.
	Rescan time.Duration
	// NoEvents follows the folders by rescans alone, without file system
	// events: for a file system that sends none. Default: false.
	NoEvents bool
	// Report, when set, is called with what the watcher did, from the
	// goroutine that called Run. Default: nil.
	Report func(Report)

	// handled, set by tests, is called after each event is handled.
	handled func(fsnotify.Event)
}

func (o Options) withDefaults() Options {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.Rescan <= 0 {
		o.Rescan = DefaultRescan
	}
	return o
}

// Report is one thing a watcher tells its caller: the import of one
// transcript that wrote entries or failed, a problem of the watching, or
// that the watching has begun.
type Report struct {
	Time time.Time `json:"time"`
	Tool string    `json:"tool,omitempty"`
	// File and Summary report one import of a transcript: one that wrote
	// entries, one that failed (Summary.Failures; the transcript is then
	// left alone until it changes again and a rescan finds it), or the
	// first success after a failure.
	File    string            `json:"file,omitempty"`
	Summary *importer.Summary `json:"summary,omitempty"`
	// Problem is a problem of the watching itself (a folder that cannot
	// be followed, events lost); the watcher goes on with rescans.
	Problem string `json:"problem,omitempty"`
	// Watching, in the report that comes once the roots are under watch
	// and the transcripts found at the start are imported, lists the
	// roots.
	Watching []string `json:"watching,omitempty"`
}

// ErrNoSources reports a Run given nothing to watch.
var ErrNoSources = errors.New("watch: no source to watch")

// Run follows sources' roots and imports their transcripts into st as
// they grow (see the package doc) until ctx ends; then it returns nil.
// Transcripts already there are imported first. It returns an error only
// for sources it cannot use.
func Run(ctx context.Context, st recall.Store, sources []Source, opts Options) error {
	if len(sources) == 0 {
		return ErrNoSources
	}
	for _, s := range sources {
		if s.Tool == "" || len(s.Roots) == 0 || s.Find == nil || (s.Mapper == nil) == (s.Import == nil) {
			return fmt.Errorf("watch: source %q needs a tool, roots, Find, and a Mapper or an Import", s.Tool)
		}
	}
	w := &watcher{
		st: st, sources: sources, opts: opts.withDefaults(),
		files: map[string]*file{}, pending: map[string]*file{},
		dirs: map[string]bool{}, ignored: map[string]bool{}, said: map[string]string{},
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if !w.opts.NoEvents {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			w.problem("events", fmt.Sprintf("no file system events (%v): following the folders by rescans every %s", err, w.opts.Rescan))
		} else {
			defer fsw.Close()
			w.fsw, events, errs = fsw, fsw.Events, fsw.Errors
		}
	}
	return w.loop(ctx, events, errs)
}

// watcher is the state of one Run. Only Run's goroutine touches it.
type watcher struct {
	st      recall.Store
	sources []Source
	opts    Options
	fsw     *fsnotify.Watcher // nil: rescans only
	roots   []root            // the roots that exist, resolved
	files   map[string]*file  // the transcripts known, by path
	pending map[string]*file  // those with a change to import
	dirs    map[string]bool   // the folders under watch
	// ignored holds files of events that Find does not return, until the
	// next rescan, so their events cost no Find.
	ignored map[string]bool
	// said holds the last message of each kind of problem reported, so a
	// problem that persists is reported once.
	said map[string]string
}

// root is a root of a source, resolved to the path events name.
type root struct {
	path string
	src  *Source
}

// file is one transcript the watcher knows.
type file struct {
	src *Source
	// size and mod are the file's as its last import began; imported
	// tells that there was one.
	size     int64
	mod      time.Time
	imported bool
	// first and due time the pending change: first is its first event,
	// due when it is to be imported.
	first, due time.Time
	// failed is the failure of the last import, "" after a success.
	failed string
}

// loop is Run's: it imports what is there, then follows events, timers
// and rescans until ctx ends.
func (w *watcher) loop(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error) error {
	var lastRescan time.Time
	rescan := func() {
		lastRescan = time.Now()
		w.rescan(lastRescan)
		w.importDue(ctx, lastRescan)
	}
	rescan()
	if ctx.Err() != nil {
		return nil
	}
	w.report(Report{Watching: w.rootPaths()})

	tick := time.NewTicker(min(w.opts.Rescan, wakeCheck))
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastTick := time.Now()
	for {
		w.arm(timer)
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				w.problem("events", "file system events stopped: following the folders by rescans")
				continue
			}
			w.event(ev, time.Now())
			if w.opts.handled != nil {
				w.opts.handled(ev)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.eventError(err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				rescan() // events were lost
			}
		case <-timer.C:
			w.importDue(ctx, time.Now())
		case now := <-tick.C:
			wake := slept(now.Round(0).Sub(lastTick.Round(0)), now.Sub(lastTick))
			lastTick = now
			if wake || now.Sub(lastRescan) >= w.opts.Rescan {
				rescan()
			}
		}
	}
}

// slept reports whether the wall clock moved further than the monotonic
// clock between two ticks: the machine was suspended (the monotonic clock
// stops while it sleeps) or the clock was set forward. Either way a
// rescan is due.
func slept(wall, mono time.Duration) bool {
	return wall-mono > 2*time.Second
}

// arm sets timer to fire when the earliest pending change is due.
func (w *watcher) arm(timer *time.Timer) {
	var next time.Time
	for _, f := range w.pending {
		if next.IsZero() || f.due.Before(next) {
			next = f.due
		}
	}
	if next.IsZero() {
		timer.Stop()
		return
	}
	timer.Reset(max(time.Until(next), 0))
}

// touch records a change of f at now: it is due once it has been quiet
// for Debounce, and no later than MaxDelay after its first change.
func (w *watcher) touch(path string, f *file, now time.Time) {
	if f.due.IsZero() {
		f.first = now
	}
	f.due = now.Add(w.opts.Debounce)
	if limit := f.first.Add(w.opts.MaxDelay); f.due.After(limit) {
		f.due = limit
	}
	w.pending[path] = f
}

// importDue imports the pending transcripts that are due, in path order
// (a Claude Code session before its subagents' folder).
func (w *watcher) importDue(ctx context.Context, now time.Time) {
	var due []string
	for p, f := range w.pending {
		if !f.due.After(now) {
			due = append(due, p)
		}
	}
	sort.Strings(due)
	for _, p := range due {
		if ctx.Err() != nil {
			return
		}
		f := w.pending[p]
		delete(w.pending, p)
		f.first, f.due = time.Time{}, time.Time{}
		w.importFile(ctx, p, f)
	}
}

// importFile imports one transcript and reports what it wrote or why it
// failed. A failure is reported once while it stays the same.
func (w *watcher) importFile(ctx context.Context, path string, f *file) {
	fi, err := os.Stat(path)
	if err != nil {
		delete(w.files, path) // removed or renamed away
		return
	}
	// Stated before the read: a write during the import moves them, and
	// the next rescan imports again.
	f.size, f.mod, f.imported = fi.Size(), fi.ModTime(), true
	sum, err := w.importPath(ctx, f.src, path)
	if ctx.Err() != nil {
		return
	}
	if err != nil { // nothing could be read: a failure of the file
		sum.Failures = append(sum.Failures, importer.Failure{File: path, Err: err.Error()})
	}
	if len(sum.Failures) > 0 {
		msg := failureText(sum.Failures)
		if msg != f.failed {
			f.failed = msg
			w.report(Report{Tool: f.src.Tool, File: path, Summary: &sum})
		}
		return
	}
	recovered := f.failed != ""
	f.failed = ""
	if sum.Entries > 0 || recovered {
		w.report(Report{Tool: f.src.Tool, File: path, Summary: &sum})
	}
}

// importPath imports one transcript of src. importer.Run fails only when
// ctx ends; an Import may fail for a file it cannot read at all.
func (w *watcher) importPath(ctx context.Context, src *Source, path string) (importer.Summary, error) {
	if src.Import != nil {
		return src.Import(ctx, w.st, path)
	}
	return importer.Run(ctx, w.st, src.Tool, []string{path}, src.Mapper, importer.Options{})
}

// failureText is the failures of one file's import as one comparable
// string.
func failureText(fs []importer.Failure) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Key + ": " + f.Err
	}
	return strings.Join(parts, "; ")
}

// report passes r to Options.Report, stamped with the time.
func (w *watcher) report(r Report) {
	if w.opts.Report == nil {
		return
	}
	r.Time = time.Now()
	w.opts.Report(r)
}

// problem reports a problem of kind unless the last one of that kind
// said the same.
func (w *watcher) problem(kind, msg string) {
	if w.said[kind] == msg {
		return
	}
	w.said[kind] = msg
	w.report(Report{Problem: msg})
}

func (w *watcher) rootPaths() []string {
	var out []string
	for _, s := range w.sources {
		for _, r := range s.Roots {
			out = append(out, s.Tool+": "+r)
		}
	}
	return out
}

// sourceOf returns the source whose root holds path, or nil.
func (w *watcher) sourceOf(path string) *Source {
	for _, r := range w.roots {
		if rel, err := filepath.Rel(r.path, path); err == nil && filepath.IsLocal(rel) {
			return r.src
		}
	}
	return nil
}
