package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/watch"
	"github.com/recallkit/recall/internal/testkit"
)

// watcher is a running recall import --watch.
type watcher struct {
	cmd            *exec.Cmd
	stdout, stderr testkit.SyncBuffer
}

// startWatch starts recall import --watch claude-code over e's store and
// waits until it says it is watching: the folders are under watch and
// what was there is imported.
func (e *env) startWatch() *watcher {
	e.t.Helper()
	w := &watcher{cmd: exec.Command(e.bin, "import", "--watch", "claude-code")}
	w.cmd.Env = e.serveEnviron()
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	if err := w.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
		if e.t.Failed() {
			e.t.Logf("watcher's stdout:\n%s\nstderr:\n%s", w.stdout.String(), w.stderr.String())
		}
	})
	testkit.Eventually(e.t, time.Minute, "the watcher's watching line", func() bool {
		return strings.Contains(w.stderr.String(), " watching claude-code: ")
	})
	return w
}

// TestImportWatchLive writes a Claude Code transcript line by line while
// recall import --watch claude-code runs, kills the watcher with SIGKILL
// half-way, writes on while it is down, starts it again, and finds every
// line imported exactly once; each line written while a watcher ran is
// in the store within 2 s on average (waited for by polling the store).
func TestImportWatchLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	projects := filepath.Join(e.home, "user", ".claude", "projects")
	if err := os.MkdirAll(projects, 0o755); err != nil {
		t.Fatal(err)
	}
	const sid = "0f1e2d3c-4b5a-4978-8675-a4b3c2d1e0f9"
	// The project's folder does not exist yet: the watcher finds it.
	path := filepath.Join(projects, "-home-dev-live", sid+".jsonl")
	proj, err := importer.ProjectKey("/home/dev/live")
	if err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: proj, Session: sid}
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	items := func() []recall.LiveItem {
		its, _, err := st.Items(context.Background(), key, 0)
		if err != nil {
			return nil // not there yet
		}
		return its
	}

	// write appends line n in two writes, as a writer at work may, to
	// the transcript it holds open (made with the first line), and
	// returns the time the line was complete.
	var transcript *os.File
	t.Cleanup(func() {
		if transcript != nil {
			transcript.Close()
		}
	})
	write := func(n int) time.Time {
		role := []string{"user", "assistant"}[n%2]
		b, _ := json.Marshal(map[string]any{
			"type": role, "cwd": "/home/dev/live", "sessionId": sid, "uuid": fmt.Sprintf("u%d", n),
			"timestamp": fmt.Sprintf("2025-10-01T09:%02d:%02d.000Z", n/60, n%60),
			"message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "role": role,
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("line %d", n)}}},
		})
		b = append(b, '\n')
		if transcript == nil {
			if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if transcript, err = os.Create(path); err != nil {
				t.Fatal(err)
			}
		}
		for _, part := range [][]byte{b[:len(b)/2], b[len(b)/2:]} {
			if _, err := transcript.Write(part); err != nil {
				t.Fatal(err)
			}
		}
		return time.Now()
	}
	var delays []time.Duration
	// live writes lines from+1 to to, each waited for in the store.
	live := func(from, to int) {
		for n := from + 1; n <= to; n++ {
			at := write(n)
			testkit.Eventually(t, time.Minute, fmt.Sprintf("line %d in the store", n), func() bool { return len(items()) >= n })
			delays = append(delays, time.Since(at))
		}
	}

	const half, down, total = 12, 5, 30
	w := e.startWatch()
	live(0, half)
	// Killed right after a write, before or while it imports it; lines
	// are written while no watcher runs.
	write(half + 1)
	if err := w.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = w.cmd.Wait()
	for n := half + 2; n <= half+1+down; n++ {
		write(n)
	}
	w = e.startWatch()
	testkit.Eventually(t, time.Minute, "the lines written while no watcher ran", func() bool { return len(items()) >= half+1+down })
	live(half+1+down, total)

	got := items()
	if len(got) != total {
		t.Fatalf("%d items, want %d", len(got), total)
	}
	for i, it := range got {
		if want := fmt.Sprintf("line %d", i+1); it.Item.Text() != want {
			t.Fatalf("item %d is %q, want %q: a line lost or imported twice", i, it.Item.Text(), want)
		}
	}

	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
	contains(t, "the watcher's stderr", w.stderr.String(), "stopped")

	var sum time.Duration
	for _, d := range delays {
		sum += d
	}
	mean := sum / time.Duration(len(delays))
	slowest := slices.Max(delays)
	// The floor is the debounce, which the watcher waits on purpose.
	t.Logf("from a line's write to the store: mean %v (%.2f× the debounce of %v), slowest %v, over %d lines",
		mean.Round(time.Millisecond), float64(mean)/float64(watch.DefaultDebounce), watch.DefaultDebounce, slowest.Round(time.Millisecond), len(delays))
	if mean >= 2*time.Second {
		t.Errorf("mean delay %v, want under 2s", mean)
	}
}

// TestImportWatchInstall writes the systemd user unit into a temporary
// home and checks it runs this binary on this store.
func TestImportWatchInstall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the systemd unit is Linux's; importer/watch tests the launchd agent")
	}
	t.Parallel()
	e := newEnv(t)
	xdg := filepath.Join(e.home, "user", "config")
	e.vars = append(e.vars, "XDG_CONFIG_HOME="+xdg, "CLAUDE_CONFIG_DIR="+filepath.Join(e.home, "user", "claude"))
	r := e.ok("", "import", "--watch", "claude-code", "--install")
	unit := filepath.Join(xdg, "systemd", "user", "recall-watch-claude-code.service")
	contains(t, "stdout", r.stdout, "wrote "+unit)
	contains(t, "stdout", r.stdout, "systemctl --user enable --now recall-watch-claude-code.service")
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ExecStart=" + e.bin + " import --watch claude-code\n",
		"Environment=RECALL_HOME=" + e.home + "\n",
		"Environment=CLAUDE_CONFIG_DIR=" + filepath.Join(e.home, "user", "claude") + "\n",
		"Restart=on-failure\n",
		"WantedBy=default.target\n",
	} {
		contains(t, unit, string(b), want)
	}

	e.fails(exitUsage, `unknown tool "nope"`, "import", "--watch", "nope")
	e.fails(exitUsage, "go with --watch", "import", "--install")
}
