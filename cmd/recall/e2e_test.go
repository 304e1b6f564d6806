package main

// End-to-end tests: they build the recall binary once and drive it the way
// a person does, each test with its own RECALL_HOME and project directory,
// and with the offline model (no OPENAI_API_KEY), so they need no network.
// Sharing nothing, they run in parallel (t.Parallel); the in-process tests
// that change the test process's environment or working directory
// (t.Setenv, t.Chdir) do not.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// raceBinary reports whether the binary is built with -race: only in the
// long tier, when the tests run with -race and RECALL_LONG=1.
//
// The fast tier (go test -short -race) checks this package's own code
// under the race detector but runs a binary built without it: the tests
// start the binary hundreds of times, and a -race binary is several times
// slower at each. The long tier builds it with -race too, so the races of
// recall chat and recall serve in their own processes are looked for
// there (a race they find makes them exit 66, which fails the test).
func raceBinary() bool {
	return raceEnabled && os.Getenv("RECALL_LONG") == "1"
}

// recallBinary builds the binary on first use (with -race when raceBinary
// says so) and returns its path. It is built once per test process: every
// test, and every helper that runs the CLI, runs this one binary.
func recallBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "recall-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "recall")
		args := []string{"build", "-o", binPath}
		if raceBinary() {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// env is one user's world: a recall home, a project directory to run in,
// and environment variables.
type env struct {
	t    *testing.T
	bin  string
	home string // RECALL_HOME
	dir  string // working directory: the project
	// store, when set, is RECALL_STORE: the store every run uses.
	store string
	vars  []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, bin: recallBinary(t), home: filepath.Join(t.TempDir(), "home"), dir: t.TempDir()}
	// Every test leaves a store that passes the consistency checker.
	t.Cleanup(func() {
		if _, err := os.Stat(e.home); err != nil && e.store == "" {
			return // the test never created the store
		}
		if r := e.run("", "check"); r.code != 0 {
			t.Errorf("recall check after the test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	return e
}

// commandContext bounds one run of recall, a guard against a hang: until
// shortly before the test binary's own deadline (go test -timeout), so
// that a large command on a loaded machine (a -race binary importing
// 20 MB) is never cut short while the failure of a hung one is still
// reported; two minutes when the test has no deadline.
func commandContext(t *testing.T) (context.Context, context.CancelFunc) {
	if d, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), d.Add(-30*time.Second))
	}
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs recall in the project directory with stdin as its input ("":
// /dev/null, which is not a terminal).
func (e *env) run(stdin string, args ...string) result {
	return e.runIn(e.dir, stdin, args...)
}

func (e *env) runIn(dir, stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := commandContext(e.t)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = dir
	// A clean environment: no API key (the offline model answers), no
	// store settings but ours, and a HOME that is not the real one.
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(e.home, "user"),
		"RECALL_HOME=" + e.home,
		"TERM=dumb",
		// A -race binary (the long tier's, see raceBinary) sleeps a
		// second at exit by default; a race it finds still makes it exit
		// 66, which fails the test.
		"GORACE=atexit_sleep_ms=0",
	}, e.vars...)
	if e.store != "" {
		cmd.Env = append(cmd.Env, "RECALL_STORE="+e.store)
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			// Errorf, not Fatalf: runs may come from other goroutines.
			e.t.Errorf("recall %q did not run: %v", args, err)
			return result{code: -1}
		}
		code = ee.ExitCode()
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// ok runs recall and fails the test unless it exits 0.
func (e *env) ok(stdin string, args ...string) result {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != 0 {
		e.t.Fatalf("recall %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// fails runs recall and checks that it exits with code and reports one
// error line, holding want, on stderr.
func (e *env) fails(code int, want string, args ...string) result {
	e.t.Helper()
	r := e.run("", args...)
	e.t.Helper()
	checkFailure(e.t, r, code, want, args)
	return r
}

func checkFailure(t *testing.T, r result, code int, want string, args []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("recall %q: exit %d, want %d\nstderr: %s", args, r.code, code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "recall: ") || !strings.Contains(last, want) || !strings.Contains(last, "hint: ") {
		t.Errorf("recall %q: error line %q, want \"recall: ...%s...; hint: ...\"", args, last, want)
	}
	if repeatedRecall.MatchString(last) {
		t.Errorf("recall %q: error line %q says \"recall:\" more than once", args, last)
	}
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "recall: ") || strings.Contains(l, "goroutine ") || strings.Contains(l, "panic") {
			t.Errorf("recall %q: stderr holds more than one error line:\n%s", args, r.stderr)
		}
	}
}

// repeatedRecall matches a "recall:" said again after an error line's
// own prefix: a sentinel of the root package ("recall: not found") deep
// in the line, or the chat's agent, named recall, naming itself.
var repeatedRecall = regexp.MustCompile(`(: |; |agent )recall: `)

// ls returns the sessions "recall ls --json" lists.
func (e *env) ls(args ...string) []recall.Meta {
	e.t.Helper()
	r := e.ok("", append([]string{"ls", "--json"}, args...)...)
	var page struct {
		Sessions []recall.Meta `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Sessions == nil {
		e.t.Fatalf("ls --json: %v\n%s", err, r.stdout)
	}
	return page.Sessions
}

// show returns a session's metadata and items from "recall show --json".
func (e *env) show(ref string) (recall.Meta, []recall.Item) {
	e.t.Helper()
	r := e.ok("", "show", ref, "--json")
	var v struct {
		Session recall.Meta   `json:"session"`
		Items   []recall.Item `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		e.t.Fatalf("show --json: %v\n%s", err, r.stdout)
	}
	return v.Session, v.Items
}

// texts returns "role: text" for each message item.
func texts(items []recall.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Role()+": "+it.Text())
	}
	return out
}

func contains(t *testing.T, what, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Errorf("%s does not contain %q:\n%s", what, want, s)
	}
}

// shortIDs returns the first column of "recall ls" rows, newest first.
func (e *env) shortIDs(args ...string) []string {
	e.t.Helper()
	r := e.ok("", append([]string{"ls"}, args...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 1 || !strings.HasPrefix(lines[0], "ID ") {
		e.t.Fatalf("ls output has no header:\n%s", r.stdout)
	}
	var ids []string
	for _, l := range lines[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	return ids
}
