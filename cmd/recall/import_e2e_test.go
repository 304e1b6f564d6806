package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
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

func TestImportProjectFlag(t *testing.T) {
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

// TestImportProgressOnTerminal runs the import in a pseudo-terminal (with
// script(1)), where the progress bar shows.
func TestImportProgressOnTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed")
	}
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects")
	copyTree(t, claudeFixture, dir)
	cmd := exec.Command(script, "-qec", e.bin+" import claude-code "+dir, "/dev/null")
	cmd.Env = append(os.Environ(), "RECALL_HOME="+e.home, "RECALL_STORE=", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// the bar is drawn, then cleared before the summary
	if !strings.Contains(string(out), "importing") || !strings.Contains(string(out), "% |") {
		t.Errorf("no progress bar on a terminal:\n%q", out)
	}
}
