package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/testkit"
)

const (
	claudeFixture = "../../importer/claudecode/testdata/projects"
	codexFixture  = "../../importer/codex/testdata"
	claudeSID     = "5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61"
	codexSID      = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	archivedSID   = "0199a000-1111-7222-8333-444455556666"
)

// copyTree copies a fixture folder to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// importSummary decodes the --json summary of recall import.
func importSummary(t *testing.T, r result) importer.Summary {
	t.Helper()
	var s importer.Summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	return s
}

func TestImportClaudeCodeDefaultPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// HOME is <home>/user in every run: ~/.claude/projects is there.
	copyTree(t, claudeFixture, filepath.Join(e.home, "user", ".claude", "projects"))

	r := e.ok("", "import", "claude-code")
	if r.stderr != "" {
		t.Errorf("stderr holds %q; nothing is shown off a terminal", r.stderr)
	}
	for _, want := range []string{
		"claude-code: 3 of 3 files read",
		"sessions imported: 1 new, 0 updated, 0 unchanged",
		"subagent records: 2 new, 0 updated, 0 unchanged",
		"16 items written",
		"torn 1", "unknown:hologram 1", "file-history-snapshot 1",
	} {
		contains(t, "import summary", r.stdout, want)
	}
	ms := e.ls("--all")
	if len(ms) != 1 || ms[0].Key.Session != claudeSID || ms[0].Title != "Go files tour" || ms[0].Key.Project != "-home-dev-app" {
		t.Fatalf("ls --all: %+v", ms)
	}
	m, items := e.show(claudeSID)
	if len(items) != 2 || items[1].Text() != "Ready to continue." || m.Metadata[importer.MetaSource] != "claude-code" {
		t.Errorf("show: %+v %v", m, items)
	}
	full := e.ok("", "show", claudeSID, "--subagents")
	contains(t, "show --subagents", full.stdout, "42 lines.")

	again := importSummary(t, e.ok("", "--json", "import", "claude-code"))
	if again.Sessions != (importer.Counts{Unchanged: 1}) || again.Entries != 0 {
		t.Errorf("second import: %+v", again)
	}
}

func TestImportCodexOnSQLite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store = "sqlite://" + filepath.Join(t.TempDir(), "recall.db")
	codexHome := filepath.Join(t.TempDir(), "codex")
	copyTree(t, codexFixture, codexHome)
	e.vars = append(e.vars, "CODEX_HOME="+codexHome)

	dry := importSummary(t, e.ok("", "--json", "import", "codex", "--dry-run"))
	if !dry.DryRun || dry.Sessions != (importer.Counts{New: 2}) || dry.Items != 12 {
		t.Errorf("dry run: %+v", dry)
	}
	if ms := e.ls("--all"); len(ms) != 0 {
		t.Fatalf("a dry run wrote %d sessions", len(ms))
	}
	sum := importSummary(t, e.ok("", "--json", "import", "codex"))
	if sum.Sessions != (importer.Counts{New: 2}) || sum.Items != dry.Items || sum.Entries != dry.Entries {
		t.Errorf("import: %+v (dry run %+v)", sum, dry)
	}
	ids := map[string]string{}
	for _, m := range e.ls("--all") {
		ids[m.Key.Session] = m.Key.Project
	}
	if ids[codexSID] != "-home-dev-service" || ids[archivedSID] != "-home-dev-old" {
		t.Errorf("sessions %v", ids)
	}
}

// An imported session records the folder its transcript was recorded in,
// as recall chat records its own: resumed from another folder, its tools
// run in that folder instead of being turned off.
func TestImportedSessionResumesWithTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.folder()
	for _, c := range []struct{ source, fixture, cwd, sid string }{
		{"claude-code", claudeFixture + "/-home-dev-app/" + claudeSID + ".jsonl", "/home/dev/app", claudeSID},
		{"codex", codexFixture + "/sessions/2025/10/02/rollout-2025-10-02T08-00-00-" + codexSID + ".jsonl", "/home/dev/service", codexSID},
	} {
		data, err := os.ReadFile(c.fixture)
		if err != nil {
			t.Fatal(err)
		}
		// The transcript as it is when recorded in the project's folder.
		file := filepath.Join(t.TempDir(), filepath.Base(c.fixture))
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(data), c.cwd, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		e.ok("", "import", c.source, file)
		if m, _ := e.show(c.sid); m.Metadata[cwdKey] != dir {
			t.Errorf("%s: the imported session records folder %q, want %q", c.source, m.Metadata[cwdKey], dir)
		}
		r := e.runIn(t.TempDir(), "", "chat", "--resume", c.sid, "-p", "go on")
		if r.code != 0 {
			t.Fatalf("%s: resume from another folder: exit %d\n%s", c.source, r.code, r.stderr)
		}
		contains(t, "stderr", r.stderr, "workspace: "+dir)
		if strings.Contains(r.stderr, "tools are off") {
			t.Errorf("%s: resumed with its tools off:\n%s", c.source, r.stderr)
		}
	}
}

func TestImportProjectFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file, err := filepath.Abs(filepath.Join(codexFixture, "sessions/2025/10/02/rollout-2025-10-02T08-00-00-"+codexSID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e.ok("", "import", "codex", file, "--project", e.dir)
	key, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	ms := e.ls() // the current project: e.dir
	if len(ms) != 1 || ms[0].Key != (recall.Key{Project: key, Session: codexSID}) {
		t.Errorf("ls in the --project directory: %+v", ms)
	}
	e.fails(1, "project directory", "import", "codex", file, "--project", filepath.Join(e.dir, "missing"))
}

func TestImportNothingReadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(1, "no such file", "import", "claude-code", filepath.Join(e.dir, "missing"))
	e.fails(1, "no rollouts found", "import", "codex", e.dir)
	// a transcript that cannot be read: a dangling link
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "x.jsonl")); err != nil {
		t.Fatal(err)
	}
	r := e.fails(1, "none of the 1 file could be read", "import", "claude-code", dir)
	contains(t, "stderr", r.stderr, "not imported: "+filepath.Join(dir, "x.jsonl"))
	e.fails(2, "unknown import source", "import", "cursor")
	e.fails(2, "accepts at most 1 arg", "import", "codex", "a", "b")
}

// TestImportFailuresAreNotFatal: one unreadable transcript beside good
// ones is reported, and the command succeeds.
func TestImportFailuresAreNotFatal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects")
	copyTree(t, claudeFixture, dir)
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "-home-dev-app", "dangling.jsonl")); err != nil {
		t.Fatal(err)
	}
	r := e.ok("", "import", "claude-code", dir)
	contains(t, "stdout", r.stdout, "1 file or record failed")
	contains(t, "stderr", r.stderr, "dangling.jsonl")
}

// TestImportProgressOnTerminal runs the import on a pseudo-terminal
// (pty_test.go), where the progress bar shows. The driver answers the
// terminal's queries as a terminal emulator does; script(1), which this
// test used before, left them unanswered, and the import waited 5 s for
// them to time out.
func TestImportProgressOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects")
	copyTree(t, claudeFixture, dir)
	p := e.startPty("import", "claude-code", dir)
	code, out := p.wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// the bar is drawn, then cleared before the summary
	if !strings.Contains(out, "importing") || !strings.Contains(out, "% |") {
		t.Errorf("no progress bar on a terminal:\n%q", out)
	}
	contains(t, "import summary", out, "sessions imported: 1 new")
	// then the search index is brought up to date, and said so
	contains(t, "import on a terminal", out, "indexing 1 session for search")
}

// TestImportBuildsSearchIndex checks that an import brings the file
// store's search index up to date, so the first search after it does not
// build the index in silence: the index file exists once the import is
// done, before any search, and nothing is said off a terminal (on one,
// see TestImportProgressOnTerminal).
func TestImportBuildsSearchIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects")
	copyTree(t, claudeFixture, dir)
	r := e.ok("", "import", "claude-code", dir)
	if r.stderr != "" {
		t.Errorf("stderr holds %q; nothing is shown off a terminal", r.stderr)
	}
	if st, err := os.Stat(filepath.Join(e.home, "#search-v1.db")); err != nil || st.Size() == 0 {
		t.Fatalf("no search index after the import: %v", err)
	}
	contains(t, "search after the import", e.ok("", "search", "--all", "continue").stdout, claudeSID[:8])
}

// TestImportKilledMidway kills an import of a large transcript with
// SIGKILL once its first batch is on disk, and imports again: the session
// ends with every item exactly once.
func TestImportKilledMidway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects", "-home-dev-crash")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const sid = "3c1e2d4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	var b strings.Builder
	rounds := 0
	// 20 MB, 18 batches (4 MB, 4 batches, under -short): the kill comes
	// after the first.
	for size := testkit.Size(4<<20, 20<<20); b.Len() < size; rounds++ {
		for _, role := range []string{"user", "assistant"} {
			line, _ := json.Marshal(map[string]any{
				"type": role, "cwd": "/home/dev/crash", "sessionId": sid, "uuid": fmt.Sprintf("%s-%d", role, rounds),
				"timestamp": fmt.Sprintf("2025-10-01T09:%02d:%02d.%03dZ", rounds/60000%60, rounds/1000%60, rounds%1000),
				"message": map[string]any{"id": fmt.Sprintf("msg_%d", rounds), "role": role,
					"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("turn %d: %s", rounds, strings.Repeat("words ", 60))}}},
			})
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	path := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(e.bin, "import", "claude-code", path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(e.home, "user"), "RECALL_HOME=" + e.home, "GORACE=atexit_sleep_ms=0"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	log := filepath.Join(e.home, "projects", "-home-dev-crash", sid+".jsonl")
	testkit.Eventually(t, time.Minute, "the import's first batch on disk", func() bool {
		fi, err := os.Stat(log)
		return err == nil && fi.Size() > 0
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := !cmd.ProcessState.Success()

	sum := importSummary(t, e.ok("", "--json", "import", "claude-code", path))
	m, items := e.show(sid)
	if len(items) != 2*rounds || m.ItemCount != 2*rounds {
		t.Fatalf("after the kill (killed: %v) and a second import: %d items, want %d", killed, len(items), 2*rounds)
	}
	for i, it := range items {
		if want := fmt.Sprintf("turn %d: ", i/2); !strings.HasPrefix(it.Text(), want) {
			t.Fatalf("item %d is %.20q, want %q...: a line lost or repeated", i, it.Text(), want)
		}
	}
	t.Logf("killed mid-import: %v; the second import: %+v", killed, sum.Sessions)
}

// TestImportOnServerStores imports both fixtures into PostgreSQL and
// Redis through --store, twice.
func TestImportOnServerStores(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"postgres", postgresStore},
		{"redis", redisStore},
	}
	claudeDir, _ := filepath.Abs(claudeFixture) // recall runs in the test's project directory
	codexDir, _ := filepath.Abs(codexFixture)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			e := newEnv(t)
			e.store = url
			claude := importSummary(t, e.ok("", "--json", "import", "claude-code", claudeDir))
			codex := importSummary(t, e.ok("", "--json", "import", "codex", codexDir))
			if claude.Sessions != (importer.Counts{New: 1}) || claude.Subagents != (importer.Counts{New: 2}) || codex.Sessions != (importer.Counts{New: 2}) {
				t.Fatalf("claude-code %+v, codex %+v", claude, codex)
			}
			if m, items := e.show(claudeSID); len(items) != 2 || m.Title != "Go files tour" {
				t.Errorf("claude-code session: %+v", m)
			}
			if m, _ := e.show(codexSID); m.ItemCount != 3 || m.Usage.TotalTokens != 2080 {
				t.Errorf("codex session: %+v", m)
			}
			again := importSummary(t, e.ok("", "--json", "import", "codex", codexDir))
			if again.Sessions != (importer.Counts{Unchanged: 2}) || again.Entries != 0 {
				t.Errorf("again: %+v", again)
			}
		})
	}
}
