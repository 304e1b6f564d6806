package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/conversations"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// twoSessions makes two sessions in e's project and returns their IDs,
// newest first.
func twoSessions(t *testing.T, e *env) (string, string) {
	t.Helper()
	e.ok("", "chat", "-p", "first <script>alert(1)</script>")
	e.ok("", "chat", "-c", "-p", "more ``` fences")
	e.ok("", "chat", "-p", "second session")
	ms := e.ls()
	if len(ms) != 2 {
		t.Fatalf("%d sessions, want 2", len(ms))
	}
	return ms[0].Key.Session, ms[1].Key.Session
}

func TestExportFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, old := twoSessions(t, e)

	md := e.ok("", "export", old).stdout
	contains(t, "markdown export", md, "## Turn 1 · ")
	contains(t, "markdown export", md, "## Turn 2 · ")
	contains(t, "markdown export", md, "first &lt;script>alert(1)&lt;/script>")

	e.ok("", "export", old, "-o", "page.html")
	page, err := os.ReadFile(filepath.Join(e.dir, "page.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), `http-equiv="Content-Security-Policy"`) {
		t.Errorf("-o page.html did not write HTML:\n%.300s", page)
	}
	if strings.Contains(string(page), "<script>") {
		t.Error("the HTML export holds a <script> tag")
	}

	var list conversations.ConversationItemList
	r := e.ok("", "export", old, "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("json export: %v\n%s", err, r.stdout)
	}
	_, items := e.show(old)
	if len(list.Data) != len(items) || len(items) != 4 || list.FirstID == "" || list.Data[0].AsMessage().Role != "user" {
		t.Errorf("json export: %d items (want %d), first_id %q", len(list.Data), len(items), list.FirstID)
	}
	if r := e.ok("", "--json", "export", old); r.stdout != e.ok("", "export", old, "-f", "json").stdout {
		t.Error("--json does not export JSON")
	}

	e.fails(2, `unknown format "xml"`, "export", old, "--format", "xml")
	e.fails(2, "no session named", "export")
	e.fails(1, "no session matches", "export", "nosuchsession")
}

// Documents (Markdown, HTML, JSON) are created readable by others, as
// the umask allows; a JSONL backup of the store's log stays private, as
// the store's own files are.
func TestExportFileModes(t *testing.T) {
	t.Parallel()
	status, _ := os.ReadFile("/proc/self/status") // recall inherits this umask
	_, field, ok := strings.Cut(string(status), "Umask:")
	var mask uint32
	if _, err := fmt.Sscanf(field, "%o", &mask); !ok || err != nil {
		t.Skip("no umask in /proc/self/status")
	}
	umask := os.FileMode(mask)
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello")
	for name, want := range map[string]os.FileMode{
		"doc.md": 0o644 &^ umask, "page.html": 0o644 &^ umask, "items.json": 0o644 &^ umask, "log.jsonl": 0o600,
	} {
		e.ok("", "export", "--all", "-o", name)
		fi, err := os.Stat(filepath.Join(e.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s created with mode %04o, want %04o (umask %04o)", name, got, want, umask)
		}
	}
}

func TestExportAllToDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	newest, old := twoSessions(t, e)
	e.ok("", "archive", old)

	e.fails(2, "2 sessions cannot share stdout in markdown", "export", "--all")
	e.fails(2, "cannot share the file", "export", "--all", "-o", "one.md")
	e.fails(2, "not both", "export", "--all", old)
	e.fails(2, "--all and --all-projects", "export", "--all", "--all-projects", "-o", "x/")

	r := e.ok("", "export", "--all", "-o", "out/", "--format", "html")
	for _, id := range []string{newest, old} { // archived ones too
		if _, err := os.Stat(filepath.Join(e.dir, "out", id+".html")); err != nil {
			t.Errorf("--all -o out/: %v\n%s", err, r.stdout)
		}
	}
	before, _ := os.ReadFile(filepath.Join(e.dir, "out", old+".html"))
	e.fails(1, "exists", "export", "--all", "-o", "out", "--format", "html")
	e.ok("", "export", old, "-o", "out", "--format", "html", "--force")
	if after, _ := os.ReadFile(filepath.Join(e.dir, "out", old+".html")); string(after) != string(before) {
		t.Error("--force rewrote the file with other content")
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "out"))
	if len(entries) != 2 {
		t.Errorf("out/ holds %d files, want 2 (no temporary files left)", len(entries))
	}
	if err := os.WriteFile(filepath.Join(e.dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.fails(2, "not a directory", "export", old, "-o", "afile/")

	// A session of another project, and --all-projects: a folder each.
	other := t.TempDir()
	e.runIn(other, "", "chat", "-p", "elsewhere")
	r = e.ok("", "--json", "export", "--all-projects", "-o", "every/", "--format", "jsonl")
	var report []struct {
		Key  recall.Key `json:"key"`
		File string     `json:"file"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || len(report) != 3 {
		t.Fatalf("--json report: %v\n%s", err, r.stdout)
	}
	for _, x := range report {
		want := filepath.Join("every", x.Key.Project, x.Key.Session+".jsonl")
		if x.File != want {
			t.Errorf("%s written to %s, want %s", x.Key, x.File, want)
		}
	}

	// Several sessions in jsonl share one file, a stream import reads;
	// the file is reported in one line.
	r = e.ok("", "export", "--all-projects", "--format", "jsonl", "-o", "backup.jsonl")
	if want := "wrote backup.jsonl: 3 sessions, 8 items\n"; r.stdout != want {
		t.Errorf("export of 3 sessions to one file printed %q, want %q", r.stdout, want)
	}
	f, err := os.Open(filepath.Join(e.dir, "backup.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := export.ReadJSONL(f)
	if err != nil || len(ss) != 3 {
		t.Errorf("backup.jsonl: %d sessions, %v", len(ss), err)
	}
}

// recall import recall brings a jsonl export into another store with the
// same entries, and again changes nothing.
func TestImportRecallRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	newest, old := twoSessions(t, e)
	e.ok("", "rename", old, "A <b>renamed</b> session")
	e.ok("", "pin", old)
	e.ok("", "fork", old, "--name", "The fork")
	e.ok("", "export", "--all", "--format", "jsonl", "-o", "all.jsonl")
	file := filepath.Join(e.dir, "all.jsonl")

	db := "sqlite://" + filepath.Join(t.TempDir(), "r.db")
	r := e.ok("", "--store", db, "import", "recall", file)
	if n := strings.Count("\n"+r.stdout, "\nnew "); n != 3 {
		t.Errorf("import printed:\n%s", r.stdout)
	}
	for _, id := range []string{newest, old} {
		want := e.ok("", "show", id, "--format", "jsonl").stdout
		got := e.ok("", "--store", db, "show", id, "--format", "jsonl").stdout
		if got != want {
			t.Errorf("the imported log of %s differs:\n%s\nwant\n%s", id, got, want)
		}
		wm, _ := e.show(id)
		var gm recall.Meta
		var v struct {
			Session recall.Meta `json:"session"`
		}
		if err := json.Unmarshal([]byte(e.ok("", "--store", db, "show", id, "--json").stdout), &v); err != nil {
			t.Fatal(err)
		}
		gm = v.Session
		if gm.Title != wm.Title || gm.Pinned != wm.Pinned || !gm.Created.Equal(wm.Created) || !gm.Updated.Equal(wm.Updated) || gm.ItemCount != wm.ItemCount {
			t.Errorf("imported meta %+v, want %+v", gm, wm)
		}
	}

	// From stdin, again: nothing changes.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r = e.ok(string(data), "--store", db, "--json", "import", "recall", "-")
	var res []export.ImportResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 3 {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	for _, x := range res {
		if x.Status != export.StatusUnchanged || x.Entries != 0 {
			t.Errorf("second import: %+v", x)
		}
	}

	// Into the very store it came from, under another ID.
	single := filepath.Join(e.dir, "one.jsonl")
	e.ok("", "export", old, "-o", single)
	r = e.ok("", "import", "recall", single, "--as", "copy-of-old")
	contains(t, "import --as", r.stdout, "new copy-of-old")
	if _, items := e.show("copy-of-old"); len(items) != 4 {
		t.Errorf("the copy holds %d items, want 4", len(items))
	}

	e.fails(2, "--as takes a session ID", "import", "recall", single, "--as", "../x")
	e.fails(2, "--as names one session", "import", "recall", file, "--as", "x")
	e.fails(1, "no such file", "import", "recall", filepath.Join(e.dir, "missing.jsonl"))
	if err := os.WriteFile(filepath.Join(e.dir, "bad.jsonl"), []byte(`{"seq":1,"kind":"item"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.fails(1, "invalid recall log", "import", "recall", filepath.Join(e.dir, "bad.jsonl"))
}

// An output path that is a symlink is a file that exists: refused, and
// with --force the link itself is replaced, never the file it points at.
func TestExportSymlinkOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello")
	id := e.ls()[0].Key.Session
	victim := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(e.dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(out, id+".md")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	e.fails(1, "exists", "export", id, "-o", "out")
	e.ok("", "export", id, "-o", "out", "--force")
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link was not replaced by the export: %v %v", fi, err)
	}
}
