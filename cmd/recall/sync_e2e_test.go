package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/remotestore"
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

// storeTexts returns the text of every item entry of every session in
// st, by session ID: everything acknowledged there, whatever a view
// shows now.
func storeTexts(t *testing.T, st recall.Store) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for _, m := range allSessions(t, st) {
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

// allSessions lists every main session of st, those in the trash too.
func allSessions(t *testing.T, st recall.Store) []recall.Meta {
	t.Helper()
	var out []recall.Meta
	for _, trashed := range []bool{false, true} {
		p, err := st.List(context.Background(), "", recall.ListOptions{Limit: -1, IncludeArchived: true, Trashed: trashed})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Sessions...)
	}
	return out
}

// fileStoreOf opens the file store of a home, closed when the test ends.
func fileStoreOf(t *testing.T, home string) recall.Store {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// syncKilled starts recall sync with args in e, SIGKILLs it once moved
// reports more than it did before the start, and returns whether the kill
// came before the sync ended.
func syncKilled(t *testing.T, e *env, moved func() int, args ...string) bool {
	t.Helper()
	before := moved()
	cmd := exec.Command(e.bin, append([]string{"sync"}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = e.serveEnviron()
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
		return moved() > before
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
		if i == 0 { // a subagent record, synced with its session
			k.Subpath = "subagents/agent-1"
			if _, err := st.Append(ctx, k, recall.Guard{}, recall.Item(fmt.Sprintf(`{"type":"message","role":"user","content":"%s sub"}`, tag)).Entry()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// syncServer is the server of the two-homes test, as its user sees it.
type syncServer struct {
	// url is the URL the homes sync with.
	url string
	// store reads what the server holds for the homes' user.
	store recall.Store
	// login readies a home to sync with url; it returns the arguments of
	// recall sync that name the server after it ("": login made it the
	// default).
	login func(e *env) []string
	// moved counts what the server holds, for syncKilled.
	moved func() int
}

// fileSyncServer is a plain file store URL.
func fileSyncServer(t *testing.T) syncServer {
	dir := t.TempDir()
	st, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return syncServer{
		url:   "file://" + dir,
		store: st,
		login: func(*env) []string { return []string{"file://" + dir} },
		moved: func() int { return countLogs(dir) },
	}
}

// serveSyncServer is recall serve over PostgreSQL with a user ann, whose
// homes log in with a token each, and a user bob, whose namespace must
// stay empty.
func serveSyncServer(t *testing.T) syncServer {
	url := postgresStore(t)
	srv := newEnv(t)
	srv.store = url
	tokens := []string{srv.createToken("ann"), srv.createToken("ann")}
	bob := srv.createToken("bob")
	s := srv.serve("--rate-limit", "0")
	open := func(token string) recall.Store {
		st, err := remotestore.Open(context.Background(), s.URL, remotestore.Options{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	ann := open(tokens[0])
	t.Cleanup(func() {
		p, err := open(bob).List(context.Background(), "", recall.ListOptions{Limit: -1, IncludeArchived: true})
		if err != nil || len(p.Sessions) != 0 {
			t.Errorf("bob's namespace: %d sessions, %v; want none", len(p.Sessions), err)
		}
	})
	logins := 0
	return syncServer{
		url:   s.URL,
		store: ann,
		login: func(e *env) []string {
			e.ok("", "login", s.URL, "--token", tokens[logins%len(tokens)])
			logins++
			return nil
		},
		moved: func() int {
			p, err := ann.List(context.Background(), "", recall.ListOptions{Limit: -1, IncludeArchived: true})
			if err != nil {
				t.Errorf("list the server: %v", err)
			}
			return len(p.Sessions)
		},
	}
}

// TestSyncTwoHomesWithKills is the test: two homes, one server
// (a plain store URL, and recall serve over PostgreSQL that both homes
// log in to), the same repository checked out at different paths; syncs
// both ways with SIGKILLs of recall sync in between; one session
// continued on both; after a last sync, every acknowledged item of both
// machines is on both homes and on the server, and the divergent
// continuation is a fork of the session on all three.
func TestSyncTwoHomesWithKills(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct {
		name   string
		server func(t *testing.T) syncServer
	}{
		{"file", fileSyncServer},
		{"serve", serveSyncServer},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			testSyncTwoHomes(t, kind.server(t))
		})
	}
}

func testSyncTwoHomes(t *testing.T, srv syncServer) {
	n := testkit.Size(8, 40)
	a, b := newEnv(t), newEnv(t)
	a.dir, b.dir = filepath.Join(t.TempDir(), "ann", "src", "app"), filepath.Join(t.TempDir(), "Users", "ann", "app")
	checkout(t, a.dir, "git@github.com:ann/app.git")
	checkout(t, b.dir, "https://github.com/ann/app")
	urlA, urlB := srv.login(a), srv.login(b)
	sync := func(e *env, url []string, args ...string) result {
		t.Helper()
		return e.ok("", append(append([]string{"sync"}, url...), args...)...)
	}

	a.ok("", "chat", "-p", "shared start")
	fill(t, a.home, a.dir, "github.com/ann/app", "a", n)
	fill(t, b.home, b.dir, "github.com/ann/app", "b", n)
	b.ok("", "rm", "b-01") // to the trash, where it stays on every side
	plan := sync(a, urlA, "--dry-run").stdout
	// n, the shared one, and a-00's subagent record (a session record too)
	if want := fmt.Sprintf("would push %d sessions", n+2); !strings.Contains(plan, want) {
		t.Fatalf("dry run: %s, want %q", plan, want)
	}
	a.fails(exitUsage, "asks first", append([]string{"sync"}, urlA...)...)

	killedA := syncKilled(t, a, srv.moved, append(urlA, "--all", "--yes")...)
	sync(a, urlA, "--all", "--yes")
	killedB := syncKilled(t, b, func() int { return countLogs(b.home) }, append(urlB, "--all", "--yes")...)
	sync(b, urlB, "--all", "--yes")
	sync(a, urlA, "--all")
	t.Logf("killed: a %v, b %v", killedA, killedB)
	if !killedA && !killedB {
		t.Log("both syncs ended before their kill; the test still checks the result")
	}

	// The session started on a is continued on both machines: a reaches
	// the server first, b second.
	a.ok("", "chat", "-c", "-p", "continued on a")
	b.ok("", "chat", "-c", "-p", "continued on b")
	sync(a, urlA)
	if out := sync(b, urlB).stdout; !strings.Contains(out, "this machine's continuation is") {
		t.Fatalf("b's sync did not report a fork: %s", out)
	}
	sync(a, urlA)

	sides := map[string]recall.Store{"home a": fileStoreOf(t, a.home), "home b": fileStoreOf(t, b.home), "the server": srv.store}
	texts := map[string]map[string][]string{}
	for name, st := range sides {
		texts[name] = storeTexts(t, st)
		for _, want := range []string{"continued on a", "continued on b", fmt.Sprintf("a %d 2", n-1), fmt.Sprintf("b %d 2", n-1), "shared start"} {
			found := false
			for _, xs := range texts[name] {
				found = found || slices.Contains(xs, want)
			}
			if !found {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		if len(texts[name]) != 2*n+2 {
			t.Errorf("%s holds %d sessions; want %d (%d, the shared one and its fork)", name, len(texts[name]), 2*n+2, 2*n)
		}
		shared := "" // the session continued on both: a's continuation is its
		for id, xs := range texts[name] {
			if slices.Contains(xs, "continued on a") {
				shared = id
			}
		}
		checkSyncFork(t, name, st, texts[name], shared)
		checkSyncExtras(t, name, st)
	}
	ls := b.ok("", "ls").stdout
	if !strings.Contains(ls, "(from ") {
		t.Errorf("the fork's title does not say where it came from:\n%s", ls)
	}
}

// checkSyncFork checks that st, one side of the two-homes test, holds
// one fork, of b's continuation, whose forked_from names the shared
// session as st keys it.
func checkSyncFork(t *testing.T, name string, st recall.Store, texts map[string][]string, shared string) {
	t.Helper()
	ctx := context.Background()
	var forks int
	for _, m := range allSessions(t, st) {
		if m.ForkedFrom == nil {
			continue
		}
		forks++
		if xs := texts[m.Key.Session]; !slices.Contains(xs, "continued on b") || slices.Contains(xs, "continued on a") {
			t.Errorf("%s: the fork %s holds %q, want b's continuation", name, m.Key, xs)
		}
		f := m.ForkedFrom
		if f == nil {
			t.Errorf("%s: the fork %s has no forked_from", name, m.Key)
			continue
		}
		origin, err := st.Stat(ctx, f.Key)
		if err != nil || f.Key.Session != shared {
			t.Errorf("%s: the fork %s is forked from %s (%v), want its session on this side", name, m.Key, f.Key, err)
		} else if origin.Key.Project != m.Key.Project {
			t.Errorf("%s: the fork %s names %s, another project", name, m.Key, origin.Key)
		}
	}
	if forks != 1 {
		t.Errorf("%s: %d forks, want 1", name, forks)
	}
}

// checkSyncExtras checks that st, one side of the two-homes test, holds
// the subagent records of both homes and b's trashed session, in the
// trash.
func checkSyncExtras(t *testing.T, name string, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	seen := 0
	for _, m := range allSessions(t, st) {
		switch m.Key.Session {
		case "a-00", "b-00":
			seen++
			sub := m.Key
			sub.Subpath = "subagents/agent-1"
			items, _, err := st.Items(ctx, sub, 0)
			if err != nil || len(items) != 1 || items[0].Item.Text() != m.Key.Session[:1]+" sub" {
				t.Errorf("%s: the subagent record %s: %v, %v", name, sub, items, err)
			}
		case "b-01":
			seen++
			if m.Trashed.IsZero() {
				t.Errorf("%s: %s is not in the trash", name, m.Key)
			}
		}
	}
	if seen != 3 {
		t.Errorf("%s: %d of a-00, b-00 and b-01", name, seen)
	}
}
