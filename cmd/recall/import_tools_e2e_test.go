package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // to write the opencode database the test imports

	"github.com/recallkit/recall/importer"
)

const (
	geminiFixture   = "../../importer/gemini/testdata/home/.gemini"
	opencodeFixture = "../../importer/opencode/testdata"
	geminiSID       = "7d9c2f6e-4a1b-4c3d-8e5f-0a1b2c3d4e5f"
)

func TestImportGemini(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// HOME is <home>/user in every run: ~/.gemini is there.
	copyTree(t, geminiFixture, filepath.Join(e.home, "user", ".gemini"))

	r := e.ok("", "import", "gemini")
	for _, want := range []string{
		"gemini: 7 of 7 files read",
		"sessions imported: 6 new, 0 updated, 0 unchanged",
		"subagent records: 1 new, 0 updated, 0 unchanged",
		"malformed 4", "message:info 1", "torn 1", "unknown:tool_group 1",
	} {
		contains(t, "import summary", r.stdout, want)
	}
	ms := e.ls("--all")
	if len(ms) != 6 {
		t.Fatalf("ls --all: %d sessions", len(ms))
	}
	// The export reads as the conversation did in Gemini CLI: each turn,
	// the tool calls and results, the rewind and the compressed history.
	md := e.ok("", "export", geminiSID).stdout
	inOrder(t, "markdown export", md,
		"# Go files tour",
		"List the Go files, please.",
		"I should list them.",
		"Let me look.",
		"run_shell_command", `"command": "ls *.go"`, "main.go\nutil.go",
		"Two files: main.go and util.go.",
		"What is in this screenshot?",
		"A terminal with two files.",
		"read_file", "File not found: /home/dev/app/missing.go",
		"Now delete util.go.", "Deleting util.go.",
		"Compacted (gemini-cli rewind)",
		"Run the tests instead.",
		"Compacted (gemini-cli)", "state_snapshot",
		"All tests pass.",
		"Subagent", "Count the lines of main.go.", "42 lines.",
	)
	_, items := e.show(geminiSID)
	if len(items) != 3 || items[2].Text() != "All tests pass." {
		t.Errorf("show: %v", texts(items))
	}

	again := importSummary(t, e.ok("", "--json", "import", "gemini"))
	if again.Sessions != (importer.Counts{Unchanged: 6}) || again.Entries != 0 {
		t.Errorf("second import: %+v", again)
	}
}

func TestImportOpencode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store = "sqlite://" + filepath.Join(t.TempDir(), "recall.db")
	// XDG_DATA_HOME/opencode: the database opencode.sql describes, and the
	// JSON files of older versions.
	data := filepath.Join(t.TempDir(), "xdg")
	dir := filepath.Join(data, "opencode")
	copyTree(t, opencodeFixture+"/data", dir)
	script, err := os.ReadFile(opencodeFixture + "/opencode.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	e.vars = append(e.vars, "XDG_DATA_HOME="+data)

	dry := importSummary(t, e.ok("", "--json", "import", "opencode", "--dry-run"))
	if !dry.DryRun || dry.Sessions != (importer.Counts{New: 4}) || dry.Subagents != (importer.Counts{New: 1}) || len(dry.Failures) != 1 {
		t.Errorf("dry run: %+v", dry)
	}
	r := e.ok("", "import", "opencode")
	contains(t, "import summary", r.stdout, "sessions imported: 4 new, 0 updated, 0 unchanged")
	contains(t, "import summary", r.stdout, "unfinished 2")
	contains(t, "stderr", r.stderr, "not imported: "+filepath.Join(dir, "storage", "session", "prj_old", "ses_09bad.json"))

	md := e.ok("", "export", "ses_01main").stdout
	inOrder(t, "markdown export", md,
		"# Fix the login form",
		"The login button does nothing. Fix it.",
		"Look at the click handler.",
		"Let me read the form.",
		"read", "form.js", "button.onclick = null",
		"bash", "exit status 1",
		"edit", "Edit applied.",
		"Fixed: the handler was never bound.",
		"Compacted (opencode)",
		"What did we do so far?",
		"We fixed the login form: the click handler is bound now.",
		"Now add a test.",
		"Adding the test...",
		"Subagent", "Find where the login button's handler is bound.", "It is set to null in form.js, line 1.",
	)
	if strings.Contains(md, "Partial answer") || strings.Contains(md, "Thanks, keep going.") {
		t.Errorf("the export holds a failed answer or an unfinished prompt:\n%s", md)
	}
	again := importSummary(t, e.ok("", "--json", "import", "opencode"))
	if again.Sessions != (importer.Counts{Unchanged: 4}) || again.Entries != 0 {
		t.Errorf("second import: %+v", again)
	}
}
