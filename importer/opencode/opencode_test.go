package opencode

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storeurl"
)

var (
	mainKey  = recall.Key{Project: "-home-dev-web", Session: "ses_01main"}
	childKey = recall.Key{Project: "-home-dev-web", Session: "ses_01main", Subpath: "subagents/ses_02child"}
)

// fixture makes an opencode data folder: the JSON files of testdata/data
// and the database testdata/opencode.sql describes, in WAL mode as
// opencode keeps it. It returns the folder and the database.
func fixture(t testing.TB) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/data")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/opencode.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "opencode.db")
	exec(t, path, "PRAGMA journal_mode = WAL;\n"+string(script))
	return dir, path
}

// exec runs statements on a database, as opencode would write them.
func exec(t testing.TB, path, statements string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(statements); err != nil {
		t.Fatal(err)
	}
}

// logOf returns the item entries of a record's log, and its compactions.
func logOf(t *testing.T, st recall.Store, key recall.Key) (recall.Meta, []string, []recall.Compaction) {
	t.Helper()
	m, entries, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatalf("load %s: %v", key, err)
	}
	var items []string
	var comps []recall.Compaction
	for _, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			items = append(items, string(e.Data))
		case recall.KindCompaction:
			var c recall.Compaction
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			comps = append(comps, c)
		}
	}
	return m, items, comps
}

// wantMain is every item ses_01main's log holds, in order.
var wantMain = []string{
	// text, an image, the synthetic text opencode adds for an attached
	// text file (the file part itself is not sent), an agent part (none)
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"The login button does nothing. Fix it."},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"},{"type":"input_text","text":"Called the Read tool with the following input: {\"filePath\":\"/home/dev/web/login.html\"}"}]}`,
	`{"type":"reasoning","summary":[{"type":"summary_text","text":"Look at the click handler."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me read the form."}]}`,
	`{"type":"function_call","call_id":"toolu_01","name":"read","arguments":"{\"filePath\":\"/home/dev/web/form.js\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_01","output":"\u003cfile\u003e\nbutton.onclick = null\n\u003c/file\u003e"}`,
	`{"type":"function_call","call_id":"toolu_02","name":"bash","arguments":"{\"command\":\"npm test\",\"description\":\"Run the tests\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_02","output":"exit status 1","is_error":true}`,
	`{"type":"function_call","call_id":"toolu_03","name":"edit","arguments":"{\"filePath\":\"/home/dev/web/form.js\",\"oldString\":\"null\",\"newString\":\"login\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_03","output":[{"type":"input_text","text":"Edit applied."},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"}]}`,
	`{"type":"function_call","call_id":"toolu_04","name":"webfetch","arguments":"{\"url\":\"https://example.com\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_04","output":"[Tool execution was interrupted]","is_error":true}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed: the handler was never bound."}]}`,
	// the compaction: its prompt and the summary start the view
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"What did we do so far?"}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"We fixed the login form: the click handler is bound now."}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"Now add a test."}]}`,
	// the failed answer is left out, the aborted one kept
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Adding the test..."}]}`,
}

func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	dir, db := fixture(t)
	dbBytes, _ := os.ReadFile(db)
	for _, u := range storeURLs(t) {
		t.Run(strings.Split(u, ":")[0], func(t *testing.T) {
			st, err := storeurl.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sum, err := Import(ctx, st, []string{dir}, importer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// 4 sessions of the database, 2 of the JSON files (the third
			// is in the database)
			if sum.Files != 6 || sum.Read != 5 || sum.Sessions != (importer.Counts{New: 4}) || sum.Subagents != (importer.Counts{New: 1}) ||
				len(sum.Failures) != 1 || !strings.HasSuffix(sum.Failures[0].File, "ses_09bad.json") {
				t.Fatalf("summary %+v", sum)
			}
			wantSkipped := map[string]int{
				"unfinished":      2, // the unanswered prompt; the answer being written
				"reverted":        2, // the undone turn
				"assistant:error": 1,
				"part:hologram":   1,
				"malformed":       3, // a part, a message, a part of a JSON file
			}
			if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
				t.Errorf("skipped %v\nwant    %v", sum.Skipped, wantSkipped)
			}
			checkFixture(t, st)
			again, err := Import(ctx, st, []string{dir}, importer.Options{})
			if err != nil || again.Sessions != (importer.Counts{Unchanged: 4}) || again.Subagents != (importer.Counts{Unchanged: 1}) || again.Entries != 0 {
				t.Fatalf("second import: %+v, %v", again, err)
			}
			if err := storekit.Verify(ctx, st); err != nil {
				t.Error(err)
			}
		})
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(after, dbBytes) {
		t.Error("the import wrote to opencode's database")
	}
}

func checkFixture(t *testing.T, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	m, items, comps := logOf(t, st, mainKey)
	if !reflect.DeepEqual(items, wantMain) {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(items, "\n"), strings.Join(wantMain, "\n"))
	}
	if len(comps) != 1 || comps[0].Replaced != 12 || len(comps[0].Items) != 0 || comps[0].Strategy != "opencode" {
		t.Errorf("compactions %+v", comps)
	}
	if live, _, _ := st.Items(ctx, mainKey, 0); len(live) != 4 || live[0].Item.Text() != "What did we do so far?" {
		t.Errorf("view %v", live)
	}
	md := m.Metadata
	if m.Title != "Fix the login form" || md[importer.MetaCwd] != "/home/dev/web" || md[importer.MetaModel] != "claude-sonnet-4-5" ||
		md[importer.MetaSource] != Tool || md[importer.MetaSession] != "ses_01main" {
		t.Errorf("meta %+v", m)
	}
	// input with both caches, output with the reasoning
	if want := (recall.Usage{InputTokens: 1100 + 1350 + 3000, OutputTokens: 25 + 30 + 40, TotalTokens: 5545}); m.Usage != want {
		t.Errorf("usage %+v, want %+v", m.Usage, want)
	}
	m, items, _ = logOf(t, st, childKey)
	if len(items) != 4 || m.Title != "" || m.Metadata[importer.MetaAgent] != "ses_02child" {
		t.Errorf("child %+v %v", m, items)
	}
	// the undone turn waits: only the turn before it
	_, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-api", Session: "ses_03revert"})
	if len(items) != 2 || recall.Item(items[1]).Text() != "Added GET /health." {
		t.Errorf("reverted session %v", items)
	}
	// the answer being written waits; the placeholder title is no title
	m, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-api", Session: "ses_04live"})
	if len(items) != 1 || m.Title != "" {
		t.Errorf("live session %+v %v", m, items)
	}
	// a session of the JSON files, with a part cut short
	m, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-old", Session: "ses_00old"})
	if len(items) != 4 || m.Title != "Rename the config flag" || !strings.HasSuffix(m.Metadata[importer.MetaFile], "ses_00old.json") {
		t.Errorf("JSON session %+v %v", m, items)
	}
}

// storeURLs are the stores an import is tested on: each kind of store
// writes its log its own way.
func storeURLs(t *testing.T) []string {
	return []string{"mem://", "file://" + t.TempDir(), "sqlite://" + filepath.Join(t.TempDir(), "recall.db")}
}

// A session that grew adds its new messages: the answer that was being
// written, now done, and the turn that replaced an undone one.
func TestSessionGrows(t *testing.T) {
	ctx := context.Background()
	dir, db := fixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, []string{dir}, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `
UPDATE message SET data = json_set(data, '$.time.completed', 1785668462000, '$.finish', 'stop') WHERE id = 'msg_04b';
UPDATE part SET data = json_set(data, '$.text', 'main.go starts the server.') WHERE id = 'prt_04b1';
UPDATE session SET title = 'Explain main.go', revert = NULL WHERE id IN ('ses_04live', 'ses_03revert');
DELETE FROM message WHERE id IN ('msg_03c', 'msg_03d');
INSERT INTO message VALUES ('msg_03e', 'ses_03revert', 1785668600000, 1785668600000, '{"role":"user","time":{"created":1785668600000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_03e1', 'msg_03e', 'ses_03revert', 1785668600000, 1785668600000, '{"type":"text","text":"Add a test for it."}');
INSERT INTO message VALUES ('msg_03f', 'ses_03revert', 1785668601000, 1785668601000, '{"role":"assistant","time":{"created":1785668601000,"completed":1785668602000},"parentID":"msg_03e","modelID":"gpt-5","providerID":"openai","mode":"build","agent":"build","path":{"cwd":"/home/dev/api","root":"/home/dev/api"},"cost":0,"tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO part VALUES ('prt_03f1', 'msg_03f', 'ses_03revert', 1785668601000, 1785668601000, '{"type":"text","text":"Added."}');`)
	sum, err := Import(ctx, st, []string{dir}, importer.Options{})
	if err != nil || sum.Sessions != (importer.Counts{Updated: 2, Unchanged: 2}) || sum.Items != 3 || len(sum.Failures) != 1 {
		t.Fatalf("grown: %+v, %v", sum, err)
	}
	m, items, _ := logOf(t, st, recall.Key{Project: "-home-dev-api", Session: "ses_04live"})
	if len(items) != 2 || recall.Item(items[1]).Text() != "main.go starts the server." || m.Title != "Explain main.go" {
		t.Errorf("live session %+v %v", m, items)
	}
	m, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-api", Session: "ses_03revert"})
	if len(items) != 4 || recall.Item(items[3]).Text() != "Added." || m.Metadata[importer.MetaModel] != "gpt-5" {
		t.Errorf("reverted session %+v %v", m, items)
	}
}

// A session whose imported messages changed (an undo after the import)
// is reported, and left as it was.
func TestSessionChanged(t *testing.T) {
	ctx := context.Background()
	dir, db := fixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, []string{dir}, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `DELETE FROM message WHERE id >= 'msg_01f' AND session_id = 'ses_01main';`)
	sum, err := Import(ctx, st, []string{dir}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var changed bool
	for _, f := range sum.Failures {
		changed = changed || strings.Contains(f.Err, importer.ErrChanged.Error()) && strings.Contains(f.Key, "ses_01main")
	}
	if !changed {
		t.Fatalf("an undone session is not reported: %+v", sum)
	}
	if _, items, _ := logOf(t, st, mainKey); len(items) != len(wantMain) {
		t.Errorf("a changed session was merged: %d items", len(items))
	}
}

// A session read from the JSON files and later from the database opencode
// copied them into is the same stream: the database adds only what is new.
func TestFilesThenDatabase(t *testing.T) {
	ctx := context.Background()
	dir, db := fixture(t)
	st := memstore.New(memstore.Options{})
	old := filepath.Join(dir, "storage", "session", "prj_old", "ses_00old.json")
	if sum, err := Import(ctx, st, []string{old}, importer.Options{}); err != nil || sum.Sessions != (importer.Counts{New: 1}) {
		t.Fatalf("%+v, %v", sum, err)
	}
	var stmts []string
	for _, f := range []string{"msg_00a", "msg_00b"} {
		data, _ := os.ReadFile(filepath.Join(dir, "storage", "message", "ses_00old", f+".json"))
		stmts = append(stmts, "INSERT INTO message VALUES ('"+f+"', 'ses_00old', 0, 0, '"+string(data)+"');")
	}
	for _, f := range []string{"msg_00a/prt_00a1", "msg_00b/prt_00b1", "msg_00b/prt_00b2", "msg_00b/prt_00b3"} {
		data, _ := os.ReadFile(filepath.Join(dir, "storage", "part", f+".json"))
		mid, pid, _ := strings.Cut(f, "/")
		stmts = append(stmts, "INSERT INTO part VALUES ('"+pid+"', '"+mid+"', 'ses_00old', 0, 0, '"+strings.ReplaceAll(string(data), "'", "''")+"');")
	}
	exec(t, db, `INSERT INTO project VALUES ('prj_old','/home/dev/old','git','old',NULL,NULL,0,0,NULL,'[]',NULL);
INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_00old','prj_old','x','/home/dev/old','Rename the config flag','1.2.0',1785571200000,0);
`+strings.Join(stmts, "\n")+`
INSERT INTO message VALUES ('msg_00c', 'ses_00old', 1785571400000, 0, '{"role":"user","time":{"created":1785571400000},"agent":"build","model":{"providerID":"a","modelID":"b"}}');
INSERT INTO message VALUES ('msg_00d', 'ses_00old', 1785571401000, 0, '{"role":"assistant","time":{"created":1785571401000,"completed":1},"parentID":"msg_00c","modelID":"b","providerID":"a","mode":"build","agent":"build","path":{"cwd":"/","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO part VALUES ('prt_00c1', 'msg_00c', 'ses_00old', 0, 0, '{"type":"text","text":"And in the docs."}');`)
	sum, err := Import(ctx, st, []string{dir}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != (importer.Counts{New: 3, Updated: 1}) || sum.Skipped["unfinished"] != 2 {
		t.Fatalf("%+v", sum)
	}
	_, items, _ := logOf(t, st, recall.Key{Project: "-home-dev-old", Session: "ses_00old"})
	if len(items) != 5 || recall.Item(items[4]).Text() != "And in the docs." {
		t.Errorf("items %v", items)
	}
}

func TestDefaultPaths(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/srv/data")
	t.Setenv("OPENCODE_DB", "")
	if p, err := DefaultPaths(); err != nil || !reflect.DeepEqual(p, []string{filepath.Join("/srv/data", "opencode")}) {
		t.Errorf("XDG_DATA_HOME: %q, %v", p, err)
	}
	abs, _ := filepath.Abs(filepath.Join("elsewhere", "o.db"))
	t.Setenv("OPENCODE_DB", abs)
	t.Setenv("XDG_DATA_HOME", "")
	home, _ := os.UserHomeDir()
	if p, err := DefaultPaths(); err != nil || !reflect.DeepEqual(p, []string{filepath.Join(home, ".local", "share", "opencode"), abs}) {
		t.Errorf("OPENCODE_DB: %q, %v", p, err)
	}
}

func TestNothingToRead(t *testing.T) {
	st := memstore.New(memstore.Options{})
	if _, err := Import(context.Background(), st, []string{"testdata/none"}, importer.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
	if _, err := Import(context.Background(), st, []string{t.TempDir()}, importer.Options{}); !errors.Is(err, ErrNoSessions) {
		t.Errorf("empty folder: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "opencode.db")
	os.WriteFile(bad, []byte("not a database"), 0o644)
	if _, err := Import(context.Background(), st, []string{bad}, importer.Options{}); err == nil || errors.Is(err, ErrNoSessions) {
		t.Errorf("a damaged database: %v", err)
	}
}
