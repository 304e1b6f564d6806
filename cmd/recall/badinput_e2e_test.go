package main

// Bad input, exit codes and what a person sees: every command's bad input
// is one line on stderr and the right exit code (0 ok, 1 failed, 2 bad
// usage, 130 interrupted); deleting asks; titles cannot drive the
// terminal; read-only commands create nothing; --json listings have one
// stable shape; --version and shell completion work.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// oneLine checks that r failed with code and said so in exactly one line
// on stderr: "recall: ...want...; hint: ...", without raw library text.
func oneLine(t *testing.T, r result, code int, want string, args []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("recall %q: exit %d, want %d\nstderr: %s", args, r.code, code, r.stderr)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	switch {
	case strings.Contains(line, "\n"):
		t.Errorf("recall %q: stderr is more than one line:\n%s", args, r.stderr)
	case !strings.HasPrefix(line, "recall: ") || !strings.Contains(line, "; hint: "):
		t.Errorf("recall %q: stderr %q, want \"recall: ...; hint: ...\"", args, line)
	case !strings.Contains(line, want):
		t.Errorf("recall %q: stderr %q, want it to hold %q", args, line, want)
	}
	if repeatedRecall.MatchString(line) {
		t.Errorf("recall %q: stderr %q says \"recall:\" more than once", args, line)
	}
	for _, raw := range []string{"recall: recall:", "strconv.", "pool.go", "may or may not have been applied", "goroutine "} {
		if strings.Contains(r.stderr, raw) {
			t.Errorf("recall %q: stderr shows %q:\n%s", args, raw, r.stderr)
		}
	}
}

// TestBadInputEveryCommand runs the binary over every command's bad input.
func TestBadInputEveryCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello")
	id, last := e.ls()[0].Key.Session, e.ls()[0].LastSeq
	tests := []struct {
		code int
		want string
		args []string
	}{
		// flags with a value of the wrong type: no strconv text
		{2, `--limit takes a whole number, not "x"`, []string{"ls", "--limit", "x"}},
		{2, "--limit must not be negative", []string{"ls", "--limit", "-1"}},
		{2, `--at takes a whole number, not "abc"`, []string{"fork", id, "--at", "abc"}},
		{2, "--at must not be negative", []string{"fork", id, "--at", "-1"}},
		{2, `--keep takes a whole number, not "many"`, []string{"compact", id, "--keep", "many"}},
		{2, `--history takes a whole number, not "lots"`, []string{"chat", "--history", "lots", "-p", "x"}},
		{2, `--archived takes true or false, not "maybe"`, []string{"ls", "--archived=maybe"}},
		{2, "unknown flag: --bogus", []string{"ls", "--bogus"}},
		{2, "unknown flag: --nope", []string{"gc", "--nope"}},
		// an empty reference: exit 2, "recall:" said once
		{2, "invalid key", []string{"show", ""}},
		{2, "invalid key", []string{"fork", ""}},
		{2, "invalid key", []string{"rename", "", "t"}},
		{2, "invalid key", []string{"rm", ""}},
		{2, "invalid key", []string{"pin", ""}},
		{2, "invalid key", []string{"archive", ""}},
		{2, "invalid key", []string{"export", ""}},
		// a reference that names nothing: failed, exit 1
		{1, `no session matches "nosuch"`, []string{"show", "nosuch"}},
		{1, `no session matches "nosuch"`, []string{"rm", "nosuch"}},
		{1, `no session matches "nosuch"`, []string{"compact", "nosuch", "--purge"}},
		// ages
		{2, `bad age "-1d": an age cannot be negative`, []string{"gc", "--older-than", "-1d"}},
		{2, `bad age "999999d": longer than 100 years`, []string{"gc", "--older-than", "999999d"}},
		{2, `bad age "101y": longer than 100 years`, []string{"gc", "--older-than", "101y"}},
		{2, `bad age "soon"`, []string{"gc", "--older-than", "soon"}},
		{2, "must be more than zero", []string{"gc", "--older-than", "0d"}},
		{2, `bad age "-2h"`, []string{"search", "x", "--since", "-2h"}},
		// unknown wire API: exit 2 offline as with a key
		{2, `unknown wire API "soap"`, []string{"chat", "--api", "soap", "-p", "hi"}},
		{2, "--all and --project both choose the projects", []string{"gc", "--all", "--project", "."}},
		// formats, stores, commands
		{2, `unknown format "pdf"`, []string{"show", id, "--format", "pdf"}},
		{2, "unknown scheme", []string{"--store", "soap://x", "ls"}},
		{2, `unknown command "bogus"`, []string{"bogus"}},
		{2, "usage: recall show ID", []string{"show"}},
		// bad flag values: exit 2, saying which and why
		{2, `bad list cursor "garbage"; hint: the --cursor value is invalid`, []string{"ls", "--cursor", "garbage"}},
		{2, `bad search cursor "bogus"; hint: the --cursor value is invalid`, []string{"search", "x", "--cursor", "bogus"}},
		{2, "no database path", []string{"--store", "sqlite://", "ls"}},
		{2, "invalid URL escape", []string{"--store", "postgres://%zz", "ls"}},
		{2, "sslmode is invalid", []string{"--store", "postgres://u@127.0.0.1:1/db?sslmode=bogus", "ls"}},
		{2, "99999: invalid port; hint: --addr takes HOST:PORT", []string{"serve", "--addr", "127.0.0.1:99999"}},
		{2, `no completion for shell "tcsh": recall completes bash, fish, powershell and zsh`, []string{"completion", "tcsh"}},
		{2, "--at 0 names no entry", []string{"fork", id, "--at", "0"}},
		{1, fmt.Sprintf("seq 999 not found: it is past the session's end, whose last seq is %d; hint: the session ends at seq %d", last, last), []string{"fork", id, "--at", "999"}},
	}
	for _, tt := range tests {
		oneLine(t, e.run("", tt.args...), tt.code, tt.want, tt.args)
	}
	// With a key the wire API is checked the same way.
	e.vars = []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=http://127.0.0.1:1/v1"}
	args := []string{"chat", "--api", "soap", "-p", "hi"}
	oneLine(t, e.run("", args...), 2, `unknown wire API "soap"`, args)
}

// TestStoreThatCannotBeReachedIsOneLine: go-redis's own log lines do not
// reach the terminal, and a PostgreSQL that does not answer is not
// reported as a write that may have been applied. The runs go at once:
// each Redis one spends almost two seconds in go-redis's retries.
func TestStoreThatCannotBeReachedIsOneLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var wg sync.WaitGroup
	for _, tt := range []struct{ url, want string }{
		{"redis://127.0.0.1:1/0", "connection refused"},
		{"postgres://root@127.0.0.1:1/test", "cannot connect to PostgreSQL"},
	} {
		for _, cmd := range [][]string{{"ls"}, {"chat", "-p", "hi"}} {
			args := append([]string{"--store", tt.url}, cmd...)
			wg.Go(func() {
				r := e.run("", args...)
				oneLine(t, r, 1, tt.want, args)
				// pgx tries with TLS, then without: one failure, said once
				if n := strings.Count(r.stderr, "connection refused"); n != 1 {
					t.Errorf("recall %q says \"connection refused\" %d times: %s", args, n, r.stderr)
				}
			})
		}
	}
	wg.Wait()
}

// TestInterruptedPromptExits130: Ctrl-C (SIGINT) while chat -p waits for
// the model ends recall with 130, the status of a process ended by SIGINT.
func TestInterruptedPromptExits130(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // a model that never answers
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	cmd := exec.Command(e.bin, "chat", "-p", "hello")
	cmd.Dir = e.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "RECALL_HOME=" + e.home, "GORACE=atexit_sleep_ms=0",
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=http://" + ln.Addr().String() + "/v1", "RECALL_API=chat"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("recall never called the model")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("recall did not stop on SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130; stderr: %s", code, stderr.String())
	}
	// One error line, after the status line of the session.
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "recall: interrupted") || strings.Count(stderr.String(), "recall: ") != 1 {
		t.Errorf("stderr after Ctrl-C: %q", stderr.String())
	}
}

// TestGcAndRmAsk: gc covers this project unless --all; without a terminal
// deleting needs --yes; in a terminal gc and a multi-session rm list what
// would go and ask (y/N); a pinned session needs --force; the service's
// _server.* projects are never listed or collected by --all.
func TestGcAndRmAsk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proj, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	importOld(t, e.home, proj, "old-here", 45*24*time.Hour, false)
	importOld(t, e.home, "-elsewhere", "old-there", 45*24*time.Hour, false)
	importOld(t, e.home, "_server.tokens", "tok", 400*24*time.Hour, false)

	// --all lists and collects neither _server.* sessions nor projects.
	for _, m := range e.ls("--all") {
		if strings.HasPrefix(m.Key.Project, "_server.") {
			t.Errorf("ls --all shows %s", m.Key)
		}
	}
	if r := e.ok("", "projects"); strings.Contains(r.stdout, "_server.") {
		t.Errorf("projects shows the service's projects:\n%s", r.stdout)
	}

	// No terminal, no --yes: nothing deleted, exit 2.
	oneLine(t, e.run("", "gc"), 2, "pass --yes", []string{"gc"})
	if n := len(e.ls("--all")); n != 2 {
		t.Fatalf("gc without --yes deleted: %d left", n)
	}

	// In a terminal gc asks; "n" keeps everything.
	p := e.startPty("gc")
	p.expect("old-here", "Move 1 session to the trash? [y/N]")
	p.send("n\r")
	if code, out := p.wait(); code != 0 || !strings.Contains(out, "nothing deleted") {
		t.Fatalf("gc answered n: exit %d\n%s", code, out)
	}
	if n := len(e.ls("--all")); n != 2 {
		t.Fatalf("gc answered n deleted: %d left", n)
	}
	// "y" deletes this project's old session only.
	p = e.startPty("gc")
	p.expect("Move 1 session to the trash? [y/N]")
	p.send("y\r")
	if code, out := p.wait(); code != 0 || !strings.Contains(out, "moved to the trash 1 session in this project") {
		t.Fatalf("gc answered y: exit %d\n%s", code, out)
	}
	left := e.ls("--all")
	if len(left) != 1 || left[0].Key.Session != "old-there" {
		t.Fatalf("after gc in this project: %+v", left)
	}
	// --all --yes takes the other project, never _server.*.
	e.ok("", "gc", "--all", "--yes")
	if n := len(e.ls("--all")); n != 0 {
		t.Fatalf("gc --all left %d", n)
	}
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(context.Background(), recall.Key{Project: "_server.tokens", Session: "tok"}); err != nil {
		t.Errorf("gc --all touched the service's session: %v", err)
	}
	st.Close()

	// rm: one session goes at once; several ask; pinned needs --force.
	e.ok("", "chat", "-p", "one")
	e.ok("", "chat", "-p", "two")
	e.ok("", "chat", "-p", "three")
	ms := e.ls()
	oneLine(t, e.run("", "rm", ms[0].Key.Session, ms[1].Key.Session), 2, "pass --yes", []string{"rm", "a", "b"})
	p = e.startPty("rm", ms[0].Key.Session, ms[1].Key.Session)
	p.expect("Move 2 sessions to the trash? [y/N]")
	p.send("\r")
	if code, _ := p.wait(); code != 0 || len(e.ls()) != 3 {
		t.Fatalf("rm answered with Enter: exit %d, %d left", code, len(e.ls()))
	}
	p = e.startPty("rm", "--purge", ms[0].Key.Session, ms[1].Key.Session)
	p.expect("Delete 2 sessions for good? [y/N]")
	p.send("\r")
	if code, _ := p.wait(); code != 0 || len(e.ls()) != 3 {
		t.Fatalf("rm answered with Enter: exit %d, %d left", code, len(e.ls()))
	}
	e.ok("", "pin", ms[2].Key.Session)
	oneLine(t, e.run("", "rm", ms[2].Key.Session), 2, "is pinned", []string{"rm", "pinned"})
	if len(e.ls()) != 3 {
		t.Fatal("rm of a pinned session deleted it")
	}
	e.ok("", "rm", ms[2].Key.Session, "--force")
	e.ok("", "rm", ms[0].Key.Session)
	if got := e.ls(); len(got) != 1 || got[0].Key.Session != ms[1].Key.Session {
		t.Fatalf("after rm: %+v", got)
	}
}

// TestTitlesCannotDriveTheTerminal: control characters in a title are
// stored on one line and shown escaped by every human-readable output.
func TestTitlesCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello \x1b[2J\x07 there")
	id := e.ls()[0].Key.Session
	e.ok("", "rename", id, "  \x1b[31mred\x07\nline two  ")
	m, _ := e.show(id)
	if m.Title != "\x1b[31mred\x07 line two" {
		t.Errorf("stored title %q, want it trimmed and on one line", m.Title)
	}
	for _, args := range [][]string{{"ls"}, {"ls", "--all"}, {"show", id}, {"pin", id}, {"archive", id}, {"unarchive", id}, {"search", "hello"}} {
		r := e.ok("", args...)
		out := r.stdout + r.stderr
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("recall %q prints raw control characters: %q", args, out)
		}
		if args[0] != "search" && args[0] != "show" && !strings.Contains(out, `\x1b[31mred\a line two`) {
			t.Errorf("recall %q: want the title escaped, got %q", args, out)
		}
	}
}

// TestReadOnlyCommandsCreateNothing: on a home that does not exist, the
// commands that only read find nothing and create nothing; a SQLite
// database that does not exist is an error, and no folder appears.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := t.TempDir()
	e.home = filepath.Join(root, "home")
	e.vars = []string{"HOME=" + filepath.Join(root, "user")}
	for _, args := range [][]string{{"ls"}, {"ls", "--all"}, {"projects"}, {"check"}, {"search", "x"}, {"ls", "--json"}} {
		e.ok("", args...)
	}
	for _, args := range [][]string{{"show", "x"}, {"export", "x"}} {
		oneLine(t, e.run("", args...), 1, `no session matches "x"`, args)
	}
	e.run("", "__complete", "show", "")
	db := filepath.Join(root, "missing", "dir", "x.db")
	for _, args := range [][]string{{"ls"}, {"projects"}, {"check"}, {"show", "x"}, {"search", "x"}, {"export", "x"}} {
		full := append([]string{"--store", "sqlite://" + db}, args...)
		oneLine(t, e.run("", full...), 1, "no SQLite database at "+db, full)
	}
	var made []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if path != root {
			made = append(made, path)
		}
		return nil
	})
	if len(made) > 0 {
		t.Fatalf("read-only commands created %q", made)
	}
	// A command that writes does create the home.
	e.ok("", "chat", "-p", "hi")
	if _, err := os.Stat(e.home); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedDatabase: a SQLite store whose file is not a database is one
// line saying so, with a hint to restore it rather than to run 'recall
// check' (which would fail the same way), and the file is left as it was.
func TestDamagedDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := filepath.Join(t.TempDir(), "damaged.db")
	garbage := []byte(strings.Repeat("not a database ", 512))
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ls"}, {"check"}, {"search", "x"}, {"chat", "-p", "hi"}} {
		full := append([]string{"--store", "sqlite://" + db}, args...)
		r := e.run("", full...)
		oneLine(t, r, 1, "file is not a database", full)
		if !strings.Contains(r.stderr, "restore it from a backup") {
			t.Errorf("recall %q: stderr %q, want the hint to restore the database", full, r.stderr)
		}
	}
	if got, err := os.ReadFile(db); err != nil || !bytes.Equal(got, garbage) {
		t.Errorf("the damaged file changed (%v)", err)
	}
}

// TestJSONListings: every listing is {"sessions":[...],"next":"..."} (or
// "projects"), pages with --cursor, --limit 0 lists all, and every field
// is present even when false or empty.
func TestJSONListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"one", "two", "three"} {
		e.ok("", "chat", "-p", p)
	}
	type page struct {
		Sessions []map[string]any `json:"sessions"`
		Next     *string          `json:"next"`
	}
	get := func(args ...string) page {
		t.Helper()
		var p page
		r := e.ok("", args...)
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.Sessions == nil || p.Next == nil {
			t.Fatalf("recall %q: %v\n%s", args, err, r.stdout)
		}
		return p
	}
	first := get("ls", "--json", "--limit", "2")
	if len(first.Sessions) != 2 || *first.Next == "" {
		t.Fatalf("ls --limit 2 of 3: %d sessions, next %q", len(first.Sessions), *first.Next)
	}
	rest := get("ls", "--json", "--limit", "2", "--cursor", *first.Next)
	if len(rest.Sessions) != 1 || *rest.Next != "" {
		t.Fatalf("second page: %d sessions, next %q", len(rest.Sessions), *rest.Next)
	}
	if all := get("ls", "--json", "--limit", "0"); len(all.Sessions) != 3 {
		t.Fatalf("--limit 0: %d sessions", len(all.Sessions))
	}
	fields := []string{"key", "title", "title_source", "first_prompt", "created", "updated", "item_count", "last_seq",
		"archived", "pinned", "labels", "metadata", "source", "forked_from", "usage", "corrupt"}
	id := first.Sessions[0]["key"].(map[string]any)["session"].(string)
	// A session of this project last updated 45 days ago, for gc below
	// to list (dates set, not waited for).
	proj, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	importOld(t, e.home, proj, "old-session", 45*24*time.Hour, false)
	for _, args := range [][]string{{"ls", "--json"}, {"rename", id, "New name", "--json"}, {"pin", id, "--json"},
		{"archive", id, "--json"}, {"unarchive", id, "--json"}, {"fork", id, "--json"}, {"gc", "--dry-run", "--older-than", "30d", "--json"}} {
		p := get(args...)
		if len(p.Sessions) == 0 {
			t.Fatalf("recall %q: no sessions", args)
		}
		for _, f := range fields {
			if _, ok := p.Sessions[0][f]; !ok {
				t.Errorf("recall %q: field %q missing", args, f)
			}
		}
	}
	var ps struct {
		Projects []map[string]any `json:"projects"`
		Next     *string          `json:"next"`
	}
	if err := json.Unmarshal([]byte(e.ok("", "projects", "--json").stdout), &ps); err != nil || len(ps.Projects) != 1 || ps.Next == nil {
		t.Fatalf("projects --json: %+v, %v", ps, err)
	}
	r := e.ok("", "rm", id, "--force", "--json") // pinned above
	var removed page
	if err := json.Unmarshal([]byte(r.stdout), &removed); err != nil || len(removed.Sessions) != 1 {
		t.Fatalf("rm --json: %v\n%s", err, r.stdout)
	}
}

// TestVersionAndCompletion: --version names the build; completion is a
// visible command for four shells, and completes session IDs with their
// titles and the values of --format.
func TestVersionAndCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("", "--version")
	if !strings.HasPrefix(r.stdout, "recall ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("--version: %q", r.stdout)
	}
	if !strings.Contains(e.ok("", "--help").stdout, "completion") {
		t.Error("completion is hidden from --help")
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if r := e.ok("", "completion", sh); len(r.stdout) < 100 {
			t.Errorf("completion %s: %q", sh, r.stdout)
		}
	}
	e.ok("", "chat", "-p", "hello")
	id := e.ls()[0].Key.Session
	e.ok("", "rename", id, "Parser rewrite")
	r = e.ok("", "__complete", "show", "")
	if !strings.Contains(r.stdout, id[:8]+"\tParser rewrite\n") {
		t.Errorf("completing show: %q", r.stdout)
	}
	r = e.ok("", "__complete", "rm", id[:4])
	if !strings.Contains(r.stdout, id[:8]+"\t") {
		t.Errorf("completing rm %s: %q", id[:4], r.stdout)
	}
	r = e.ok("", "__complete", "show", id, "--format", "")
	for _, f := range []string{"text\n", "markdown\n", "json\n", "jsonl\n"} {
		if !strings.Contains(r.stdout, f) {
			t.Errorf("completing --format: %q", r.stdout)
		}
	}
}

func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := describeBuild(info), "v1.2.3 commit abc123 (modified) 2026-12-01T10:00:00Z go1.26.0"; got != want {
		t.Errorf("describeBuild = %q, want %q", got, want)
	}
}

// TestPrintOutputFormats: chat -p --output-format json prints one result
// object with the reply and the session; stream-json one event per line,
// from init to result; a failed run still prints its result, is_error.
func TestPrintOutputFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("", "chat", "-p", "hello", "--output-format", "json")
	var res struct {
		Type, Subtype, Result string
		SessionID             string         `json:"session_id"`
		IsError               *bool          `json:"is_error"`
		DurationMS            *int64         `json:"duration_ms"`
		NumTurns              int            `json:"num_turns"`
		Usage                 map[string]any `json:"usage"`
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("json is more than one line:\n%s", r.stdout)
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	ms := e.ls()
	if res.Type != "result" || res.Subtype != "success" || res.IsError == nil || *res.IsError || res.DurationMS == nil ||
		res.NumTurns != 1 || !strings.Contains(res.Result, "You said: hello") || res.Usage == nil ||
		len(ms) != 1 || res.SessionID != ms[0].Key.Session {
		t.Fatalf("json result %+v; sessions %+v", res, ms)
	}

	r = e.ok("", "chat", "-c", "-p", "again", "--output-format", "stream-json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var types []string
	for _, l := range lines {
		var ev struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.SessionID != ms[0].Key.Session {
			t.Fatalf("stream-json line %q: %v", l, err)
		}
		types = append(types, ev.Type)
	}
	if len(types) < 4 || types[0] != "system" || types[1] != "stream_event" || types[len(types)-2] != "assistant" || types[len(types)-1] != "result" {
		t.Errorf("stream-json events %q", types)
	}

	oneLine(t, e.run("", "chat", "-p", "x", "--output-format", "xml"), 2, `unknown output format "xml"`, []string{"--output-format", "xml"})
	oneLine(t, e.run("", "chat", "--output-format", "json"), 2, "--output-format needs -p", []string{"--output-format"})

	// A model that cannot be reached: the result says so, and recall fails.
	e.vars = []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=http://127.0.0.1:1/v1", "RECALL_API=chat"}
	r = e.run("", "chat", "-p", "hi", "--output-format", "json")
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Subtype != "error" || !*res.IsError || res.SessionID == "" {
		t.Errorf("failed run: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
}
