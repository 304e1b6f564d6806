package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/testkit"
)

// checkout makes dir a git checkout whose origin is url, as far as recall
// looks (.git/config).
func checkout(t *testing.T, dir, url string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[remote \"origin\"]\n\turl = %s\n", url)
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// homeTexts returns the text of every item entry of every session in a
// home, by session ID: everything acknowledged there, whatever a view
// shows now.
func homeTexts(t *testing.T, home string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string][]string{}
	p, err := st.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Sessions {
		_, es, err := st.Load(ctx, m.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if it, ok := e.Item(); ok {
				out[m.Key.Session] = append(out[m.Key.Session], it.Text())
			}
		}
	}
	return out
}

// syncKilled starts recall sync in e, SIGKILLs it once dir holds a
// session log it did not, and returns whether the kill came before the
// sync ended.
func syncKilled(t *testing.T, e *env, url, watch string) bool {
	t.Helper()
	before := countLogs(watch)
	cmd := exec.Command(e.bin, "sync", url, "--all", "--yes")
	cmd.Dir = e.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(e.home, "user"), "RECALL_HOME=" + e.home, "GORACE=atexit_sleep_ms=0"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	testkit.Eventually(t, time.Minute, "the sync's first copy", func() bool {
		select {
		case <-done:
			return true
		default:
		}
		return countLogs(watch) > before
	})
	_ = cmd.Process.Kill() // SIGKILL
	<-done
	return !cmd.ProcessState.Success()
}

func countLogs(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".jsonl") {
			n++
		}
		return nil
	})
	return n
}

// fill writes n sessions of three items into the project of dir in home,
// recording dir and its git remote as recall chat does.
func fill(t *testing.T, home, dir, remote, tag string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := recall.ProjectKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := recall.Key{Project: p, Session: fmt.Sprintf("%s-%02d", tag, i)}
		_, err := recall.NewSession(st, k).Create(ctx, recall.CreateOptions{Metadata: map[string]string{importer.MetaCwd: dir, importer.MetaGitRemote: remote}})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, err := st.Append(ctx, k, recall.Guard{}, recall.Item(fmt.Sprintf(`{"type":"message","role":"user","content":"%s %d %d"}`, tag, i, j)).Entry()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSyncTwoHomesWithKills is the test: two homes, one server (a
// plain store URL), the same repository checked out at different paths;
// syncs both ways with SIGKILLs of recall sync in between; one session
// continued on both; after a last sync, every acknowledged item of both
// machines is on both homes, and the divergent continuation is a fork.
func TestSyncTwoHomesWithKills(t *testing.T) {
	server := t.TempDir()
	url := "file://" + server
	a, b := newEnv(t), newEnv(t)
	a.dir, b.dir = filepath.Join(t.TempDir(), "ann", "src", "app"), filepath.Join(t.TempDir(), "Users", "ann", "app")
	checkout(t, a.dir, "git@github.com:ann/app.git")
	checkout(t, b.dir, "https://github.com/ann/app")

	a.ok("", "chat", "-p", "shared start")
	fill(t, a.home, a.dir, "github.com/ann/app", "a", 40)
	fill(t, b.home, b.dir, "github.com/ann/app", "b", 40)
	plan := a.ok("", "sync", url, "--dry-run").stdout
	if !strings.Contains(plan, "would push 41 sessions") {
		t.Fatalf("dry run: %s", plan)
	}
	a.fails(exitUsage, "asks first", "sync", url)

	killedA := syncKilled(t, a, url, server)
	a.ok("", "sync", url, "--all", "--yes")
	killedB := syncKilled(t, b, url, b.home)
	b.ok("", "sync", url, "--all", "--yes")
	a.ok("", "sync", url, "--all")
	t.Logf("killed: a %v, b %v", killedA, killedB)
	if !killedA && !killedB {
		t.Log("both syncs ended before their kill; the test still checks the result")
	}

	// The session started on a is continued on both machines: a reaches
	// the server first, b second.
	a.ok("", "chat", "-c", "-p", "continued on a")
	b.ok("", "chat", "-c", "-p", "continued on b")
	a.ok("", "sync", url)
	out := b.ok("", "sync", url).stdout
	if !strings.Contains(out, "this machine's continuation is") {
		t.Fatalf("b's sync did not report a fork: %s", out)
	}
	a.ok("", "sync", url)

	ta, tb := homeTexts(t, a.home), homeTexts(t, b.home)
	for _, want := range []string{"continued on a", "continued on b", "a 39 2", "b 39 2", "shared start"} {
		for name, texts := range map[string]map[string][]string{"a": ta, "b": tb} {
			found := false
			for _, xs := range texts {
				for _, x := range xs {
					found = found || x == want
				}
			}
			if !found {
				t.Errorf("home %s lacks %q", name, want)
			}
		}
	}
	if len(ta) != len(tb) || len(ta) != 40+40+2 {
		t.Errorf("home a holds %d sessions, b %d; want 82 (80, the shared one and its fork)", len(ta), len(tb))
	}
	var forks int
	for id, xs := range tb {
		if strings.Contains(id, ".fork-") {
			forks++
			if strings.Join(xs, "|") == "" || xs[len(xs)-2] != "continued on b" && xs[len(xs)-1] != "continued on b" {
				t.Errorf("the fork %s holds %q, want b's continuation", id, xs)
			}
		}
	}
	if forks != 1 {
		t.Errorf("%d forks, want 1", forks)
	}
	ls := b.ok("", "ls").stdout
	if !strings.Contains(ls, "(from ") {
		t.Errorf("the fork's title does not say where it came from:\n%s", ls)
	}
}
