package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storeurl"
)

// runMirrorCmd runs `recall mirror args...` against the file store in home
// and returns stdout, stderr and the exit code.
func runMirrorCmd(t *testing.T, home string, jsonOut bool, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, home: home, json: jsonOut}
	cmd := newMirrorCmd(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	if cerr := a.close(); err == nil {
		err = cerr
	}
	if err != nil {
		errOut.WriteString(errorLine(err) + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

func TestMirrorStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	fs, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	keys := []recall.Key{{Project: "p", Session: "one"}, {Project: "p", Session: "two"}}
	for _, k := range keys {
		if _, err := fs.Append(ctx, k, recall.Guard{}, recall.Item(`{"role":"user","content":"hi"}`).Entry()); err != nil {
			t.Fatal(err)
		}
	}
	const url = "redis://user:secret@replica.example:6379/0"
	if _, err := mirror.Sync(ctx, fs, memstore.New(memstore.Options{}), mirror.SyncOptions{
		All: true, StateDir: mirror.StateDir(home, url), ReplicaName: storeurl.Redact(url),
	}); err != nil {
		t.Fatal(err)
	}
	// One session grows after the sync.
	if _, err := fs.Append(ctx, keys[1], recall.Guard{}, recall.Item(`{"role":"user","content":"more"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	fs.Close()

	// By default, one line a replica; --verbose lists the sessions behind.
	out, errOut, code := runMirrorCmd(t, home, false, "status")
	if code != 0 || strings.Count(out, "\n") != 1 ||
		!strings.HasPrefix(out, "mirror to redis://user:xxxxx@replica.example:6379/0: 2 sessions, 1 behind by 1 entry (positions saved ") ||
		strings.Contains(out, "p/two") {
		t.Fatalf("status: exit %d, want one summary line:\n%s%s", code, out, errOut)
	}
	out, errOut, code = runMirrorCmd(t, home, false, "status", "--verbose")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"mirror to redis://user:xxxxx@replica.example:6379/0", "2 sessions, 1 behind by 1 entry", "p/two"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") || strings.Contains(out, "p/one") {
		t.Errorf("status shows a password or a session that is not behind:\n%s", out)
	}

	out, _, code = runMirrorCmd(t, home, true, "status", "--all", "--to", url)
	if code != 0 {
		t.Fatalf("status --json: exit %d", code)
	}
	var reports []mirrorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(reports) != 1 || len(reports[0].Sessions) != 2 || reports[0].Summary.Lag != 1 {
		t.Fatalf("status --json: %+v", reports)
	}

	// The mirror that saved the positions saw an outage end and had not
	// checked p/one against the replica yet.
	cursor := filepath.Join(mirror.StateDir(home, url), "cursors.json")
	raw, err := os.ReadFile(cursor)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc["sessions"].([]any) {
		if s := s.(map[string]any); s["key"].(map[string]any)["session"] == "one" {
			s["recheck"] = true
		}
	}
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursor, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runMirrorCmd(t, home, false, "status", "-v")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"2 sessions, 1 behind by 1 entry, 1 to check against the replica after an outage", "p/one", "p/two"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	_, errOut, code = runMirrorCmd(t, t.TempDir(), false, "status")
	if code != 0 || !strings.Contains(errOut, "no mirror has run") {
		t.Fatalf("status of a home without a mirror: exit %d, %q", code, errOut)
	}
}

func TestMirrorUsageErrors(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"sync", "--all"},
		{"sync", "--to", "redis://x/0"},
		{"sync", "--to", "redis://x/0", "--all", "--project", "p"},
		{"sync", "--to", "redis://x/0", "--project", "no/such dir"},
		{"status", "--check"},
	} {
		_, errOut, code := runMirrorCmd(t, home, false, args...)
		if code != exitUsage || !strings.Contains(errOut, "hint:") {
			t.Errorf("mirror %v: exit %d, stderr %q; want a usage error with a hint", args, code, errOut)
		}
	}
}

func TestSyncProgress(t *testing.T) {
	var plain bytes.Buffer
	p := newProgress(&plain, false)
	for i := 1; i <= 20; i++ {
		p.update(i, 20, recall.Key{Project: "p", Session: "s"})
	}
	p.done()
	lines := strings.Split(strings.TrimSpace(plain.String()), "\n")
	if len(lines) != 11 || lines[len(lines)-1] != "synced 20/20 sessions" {
		t.Fatalf("plain progress:\n%s", plain.String())
	}
	var tty bytes.Buffer
	p = newProgress(&tty, true)
	p.update(1, 2, recall.Key{Project: "p", Session: "s"})
	p.update(2, 2, recall.Key{Project: "p", Session: "s"})
	p.done()
	if s := tty.String(); strings.Count(s, "\r") != 2 || !strings.HasSuffix(s, "\n") || !strings.Contains(s, "[==============================] 2/2") {
		t.Fatalf("terminal progress: %q", s)
	}
}

func TestMirrorSyncToSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	fs, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p", "q"} {
		for _, id := range []string{"a", "b"} {
			if _, err := fs.Append(ctx, recall.Key{Project: p, Session: id}, recall.Guard{}, recall.ItemEntries(recall.Item(`{"role":"user","content":"1"}`), recall.Item(`{"role":"user","content":"2"}`))...); err != nil {
				t.Fatal(err)
			}
		}
	}
	fs.Close()
	url := "sqlite://" + t.TempDir() + "/replica.db"

	out, errOut, code := runMirrorCmd(t, home, false, "sync", "--to", url, "--project", "p", "--dry-run")
	if code != 0 || !strings.Contains(out, "0 of 2 sessions up to date; 2 lack 4 entries") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runMirrorCmd(t, home, false, "sync", "--to", url, "--project", "p")
	if code != 0 || !strings.Contains(out, "copied 4 entries into 2 sessions") || !strings.Contains(errOut, "synced 2/2 sessions") {
		t.Fatalf("sync of p: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runMirrorCmd(t, home, false, "sync", "--to", url, "--all")
	if code != 0 || !strings.Contains(out, "copied 4 entries into 2 sessions; 2 already up to date") {
		t.Fatalf("sync --all after p: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runMirrorCmd(t, home, false, "status", "--to", url, "--check")
	if code != 0 || !strings.Contains(out, "4 sessions, all replicated") || !strings.Contains(out, "replica check: 4 of 4 sessions complete") {
		t.Fatalf("status --check: exit %d\n%s%s", code, out, errOut)
	}
}

// useMirror wraps the store of a command line in a mirror, and a replica
// that cannot be reached does not stop the command.
func TestUseMirror(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	url := "sqlite://" + t.TempDir() + "/replica.db"
	var stderr bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &stderr, home: home}
	if err := a.useMirror(ctx, url); err != nil {
		t.Fatal(err)
	}
	st, err := a.store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := st.Append(ctx, k, recall.Guard{}, recall.Item(`{"role":"user","content":"hi"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	// A command that runs as long as a chat does: the replica answers
	// meanwhile (one that has not answered by the exit is waited for a
	// fifth of the command's time alone; see TestExitWait).
	testkit.Eventually(t, 10*time.Second, "the replica confirms a write", func() bool {
		return !a.raw.(*mirror.Store).Summary(ctx).LastReplicated.IsZero()
	})
	if _, err := st.Append(ctx, k, recall.Guard{}, recall.Item(`{"role":"assistant","content":"hello"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	if err := a.close(); err != nil {
		t.Fatalf("close: %v (stderr %s)", err, stderr.String())
	}
	replica, err := openURL(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	if m, err := replica.Stat(ctx, k); err != nil || m.LastSeq != 2 {
		t.Fatalf("the replica after the command: %+v %v", m, err)
	}

	// A replica that is down: the command runs, and its end warns, in
	// one line.
	t.Setenv(envMirror, "redis://127.0.0.1:1/0")
	stderr.Reset()
	a = &app{stdout: &bytes.Buffer{}, stderr: &stderr, home: home}
	if err := a.useMirror(ctx, ""); err != nil {
		t.Fatalf("useMirror with the replica down: %v", err)
	}
	st, _ = a.store(ctx)
	if _, err := st.Append(ctx, k, recall.Guard{}, recall.Item(`{"role":"user","content":"again"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	if err := a.close(); err != nil {
		t.Fatalf("close with the replica down: %v", err)
	}
	if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "warning: the mirror redis://127.0.0.1:1/0 is 3 entries behind") {
		t.Fatalf("stderr: %s", s)
	}

	// A URL that can never work is a usage error.
	a = &app{stdout: &bytes.Buffer{}, stderr: &stderr, home: home}
	if err := a.useMirror(ctx, "bogus://x"); exitCode(err) != exitUsage {
		t.Fatalf("useMirror with a bad scheme: %v", err)
	}
}

// A replica that has confirmed nothing is waited for a fifth of the
// command's time at its exit, never more than firstAnswer: at most a
// fifth more time for any command.
func TestExitWait(t *testing.T) {
	for _, tc := range []struct{ ran, want time.Duration }{
		{0, 0},
		{-time.Second, 0}, // a clock set back
		{60 * time.Millisecond, 12 * time.Millisecond},
		{time.Second, 200 * time.Millisecond},
		{3 * time.Second, firstAnswer},
	} {
		if got := exitWait(tc.ran); got != tc.want {
			t.Errorf("exitWait(%s) = %s, want %s", tc.ran, got, tc.want)
		}
	}
}
