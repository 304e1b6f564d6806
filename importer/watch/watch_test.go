package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/claudecode"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// cwd is the folder the test transcripts were recorded in.
const cwd = "/home/dev/live"

// line returns one user line of a Claude Code transcript (the format of
// importer/claudecode/testdata).
func line(sid string, n int, text string) string {
	b, _ := json.Marshal(map[string]any{
		"type": "user", "cwd": cwd, "sessionId": sid, "uuid": fmt.Sprintf("u%d", n),
		"timestamp": fmt.Sprintf("2025-10-01T09:00:%02d.000Z", n%60),
		"message":   map[string]any{"role": "user", "content": text},
	})
	return string(b) + "\n"
}

// appendTo appends s to path, creating it, in one write.
func appendTo(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// harness runs a watcher over one Claude Code projects folder and keeps
// what it reports.
type harness struct {
	t    *testing.T
	st   recall.Store
	root string
	done chan error

	mu      sync.Mutex
	reports []Report
}

func start(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, st: memstore.New(memstore.Options{}), root: filepath.Join(t.TempDir(), "projects"), done: make(chan error, 1)}
	if err := os.MkdirAll(h.root, 0o755); err != nil {
		t.Fatal(err)
	}
	opts.Report = func(r Report) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reports = append(h.reports, r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	src := Source{Tool: claudecode.Tool, Roots: []string{h.root}, Find: claudecode.Find, Mapper: claudecode.NewMapper}
	go func() { h.done <- Run(ctx, h.st, []Source{src}, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testkit.Eventually(t, 10*time.Second, "the watching report", func() bool {
		return len(h.find(func(r Report) bool { return r.Watching != nil })) > 0
	})
	return h
}

// find returns the reports so far that match.
func (h *harness) find(match func(Report) bool) []Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Report
	for _, r := range h.reports {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// imports returns the reports of imports of path that wrote entries.
func (h *harness) imports(path string) []Report {
	return h.find(func(r Report) bool { return r.File == path && r.Summary != nil && r.Summary.Entries > 0 })
}

// texts returns the texts of the items of session sid.
func (h *harness) texts(sid string) []string {
	proj, err := importer.ProjectKey(cwd)
	if err != nil {
		h.t.Fatal(err)
	}
	items, _, err := h.st.Items(context.Background(), recall.Key{Project: proj, Session: sid}, 0)
	if errors.Is(err, recall.ErrNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Item.Text()
	}
	return out
}

// waitItems waits until session sid holds n items.
func (h *harness) waitItems(sid string, n int) {
	h.t.Helper()
	testkit.Eventually(h.t, 20*time.Second, fmt.Sprintf("%d items in %s", n, sid), func() bool { return len(h.texts(sid)) >= n })
	if got := h.texts(sid); len(got) != n {
		h.t.Fatalf("%s holds %d items, want %d: %q", sid, len(got), n, got)
	}
}

const (
	sidA = "3c1e2d4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	sidB = "7d2e3f40-1a2b-4c3d-9e4f-5a6b7c8d9e0f"
)

// TestFollowsNewFolderAndLines: with events alone (the rescan an hour
// away), a transcript in a folder created after the start is imported
// line by line as it grows.
func TestFollowsNewFolderAndLines(t *testing.T) {
	t.Parallel()
	h := start(t, Options{Rescan: time.Hour, Debounce: 20 * time.Millisecond})
	path := filepath.Join(h.root, "-home-dev-live", sidA+".jsonl")
	for i := 1; i <= 5; i++ {
		appendTo(t, path, line(sidA, i, fmt.Sprintf("line %d", i)))
		h.waitItems(sidA, i)
	}
	// A torn last line waits for its end.
	full := line(sidA, 6, "line 6")
	appendTo(t, path, full[:20])
	appendTo(t, path, full[20:])
	h.waitItems(sidA, 6)
	if got := h.texts(sidA); got[5] != "line 6" {
		t.Errorf("items %q", got)
	}
}

// TestDebounce: a burst of writes is one import; a transcript written
// without pause is imported no later than MaxDelay.
func TestDebounce(t *testing.T) {
	t.Parallel()
	t.Run("burst", func(t *testing.T) {
		t.Parallel()
		// Each write is followed by the watcher handling an event of
		// the file, so without the debounce each would be one import.
		var events, folder atomic.Int64
		h := start(t, Options{Rescan: time.Hour, Debounce: time.Second, MaxDelay: time.Hour,
			handled: func(ev fsnotify.Event) {
				switch filepath.Base(ev.Name) {
				case sidA + ".jsonl":
					events.Add(1)
				case "-home-dev-live":
					folder.Add(1)
				}
			}})
		path := filepath.Join(h.root, "-home-dev-live", sidA+".jsonl")
		if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, "the new folder watched", func() bool { return folder.Load() > 0 })
		for i := 1; i <= 20; i++ {
			before := events.Load()
			appendTo(t, path, line(sidA, i, fmt.Sprintf("line %d", i)))
			testkit.Eventually(t, 10*time.Second, "the write's event handled", func() bool { return events.Load() > before })
		}
		h.waitItems(sidA, 20)
		// The report of an import follows its write to the store.
		testkit.Eventually(t, 10*time.Second, "the import reported", func() bool { return len(h.imports(path)) > 0 })
		if n := len(h.imports(path)); n != 1 {
			t.Errorf("%d imports of a burst of 20 writes, want 1", n)
		}
	})
	t.Run("max delay", func(t *testing.T) {
		t.Parallel()
		// Debounced by an hour, the file is imported at MaxDelay.
		h := start(t, Options{Rescan: time.Hour, Debounce: time.Hour, MaxDelay: 100 * time.Millisecond})
		path := filepath.Join(h.root, "-home-dev-live", sidA+".jsonl")
		appendTo(t, path, line(sidA, 1, "line 1"))
		h.waitItems(sidA, 1)
	})
}

// TestRescanWithoutEvents: with events off, the rescans alone find a new
// folder, a new transcript and its new lines.
func TestRescanWithoutEvents(t *testing.T) {
	t.Parallel()
	h := start(t, Options{NoEvents: true, Rescan: 30 * time.Millisecond})
	if p := h.find(func(r Report) bool { return r.Problem != "" }); p != nil {
		t.Errorf("problems reported: %+v", p)
	}
	path := filepath.Join(h.root, "-home-dev-live", sidA+".jsonl")
	for i := 1; i <= 3; i++ {
		appendTo(t, path, line(sidA, i, fmt.Sprintf("line %d", i)))
		h.waitItems(sidA, i)
	}
}

// TestRewrittenFileIsReportedAndSkipped: a transcript rewritten after its
// import is reported once, its session keeps what was imported, and the
// watcher goes on with the other transcripts.
func TestRewrittenFileIsReportedAndSkipped(t *testing.T) {
	t.Parallel()
	// Rescans alone, so that one rescan sees both changes below, in
	// path order.
	h := start(t, Options{NoEvents: true, Rescan: 30 * time.Millisecond})
	dir := filepath.Join(h.root, "-home-dev-live")
	a, b := filepath.Join(dir, sidA+".jsonl"), filepath.Join(dir, sidB+".jsonl")
	appendTo(t, a, line(sidA, 1, "original 1")+line(sidA, 2, "original 2"))
	h.waitItems(sidA, 2)

	// Replaced at once (a rescan between a truncation and the write
	// would see two different rewrites).
	tmp := filepath.Join(t.TempDir(), "rewrite")
	if err := os.WriteFile(tmp, []byte(line(sidA, 1, "rewritten 1")+line(sidA, 2, "rewritten 2")+line(sidA, 3, "new 3")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	failed := func(r Report) bool {
		return r.File == a && r.Summary != nil && len(r.Summary.Failures) > 0
	}
	testkit.Eventually(t, 20*time.Second, "the rewrite reported", func() bool { return len(h.find(failed)) > 0 })
	if r := h.find(failed)[0]; !strings.Contains(r.Summary.Failures[0].Err, importer.ErrChanged.Error()) {
		t.Errorf("failure %+v, want %v", r.Summary.Failures, importer.ErrChanged)
	}

	// It grows again, and another transcript is written after it: the
	// rescan that imports b has tried a again.
	appendTo(t, a, line(sidA, 4, "new 4"))
	appendTo(t, b, line(sidB, 1, "other 1"))
	h.waitItems(sidB, 1)
	if got := h.texts(sidA); len(got) != 2 || got[0] != "original 1" || got[1] != "original 2" {
		t.Errorf("the rewritten transcript's session holds %q, want what was imported before", got)
	}
	if n := len(h.find(failed)); n != 1 {
		t.Errorf("the same failure reported %d times, want once", n)
	}
}

// TestRemovedFileIsForgotten: a transcript removed and written again is
// imported again as new lines come.
func TestRemovedFileIsForgotten(t *testing.T) {
	t.Parallel()
	h := start(t, Options{Rescan: time.Hour, Debounce: 20 * time.Millisecond})
	path := filepath.Join(h.root, "-home-dev-live", sidA+".jsonl")
	appendTo(t, path, line(sidA, 1, "line 1"))
	h.waitItems(sidA, 1)
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	// The folder again, and the transcript as it was with one line more.
	appendTo(t, path, line(sidA, 1, "line 1")+line(sidA, 2, "line 2"))
	h.waitItems(sidA, 2)
}

func TestRunRefusesBadSources(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	if err := Run(context.Background(), st, nil, Options{}); !errors.Is(err, ErrNoSources) {
		t.Errorf("no sources: %v", err)
	}
	if err := Run(context.Background(), st, []Source{{Tool: "x"}}, Options{}); err == nil {
		t.Error("a source without roots: no error")
	}
}

func TestSlept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		wall, mono time.Duration
		want       bool
	}{
		{5 * time.Second, 5 * time.Second, false},
		{5*time.Second + 100*time.Millisecond, 5 * time.Second, false}, // a clock adjusted a little
		{time.Hour, 5 * time.Second, true},                             // an hour asleep
		{time.Second, 5 * time.Second, false},                          // the clock set back
	} {
		if got := slept(c.wall, c.mono); got != c.want {
			t.Errorf("slept(%v, %v) = %v", c.wall, c.mono, got)
		}
	}
}
