package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storekit"
)

const (
	fixtureSID = "5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61"
	fixtureDir = "testdata/projects/-home-dev-app"
)

var fixtureKey = recall.Key{Project: "-home-dev-app", Session: fixtureSID}

// copyFixture copies the fixture projects folder to a temporary folder, so
// a test may grow its transcripts.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "projects")
	if err := os.CopyFS(dst, os.DirFS("testdata/projects")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// wantLog is every item the fixture's session log holds, in order.
var wantLog = []string{
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"List the Go files, please."}]}`,
	`{"type":"reasoning","summary":[{"type":"summary_text","text":"I should run ls."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]}`,
	`{"type":"function_call","call_id":"toolu_01","name":"Bash","arguments":"{\"command\":\"ls *.go\",\"description\":\"List Go files\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_01","output":"main.go\nutil.go"}`,
	`{"type":"function_call","call_id":"toolu_02","name":"Read","arguments":"{\"file_path\":\"/home/dev/app/missing.go\"}"}`,
	`{"type":"function_call_output","call_id":"toolu_02","output":"\u003ctool_use_error\u003eFile does not exist.\u003c/tool_use_error\u003e","is_error":true}`,
	`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"},{"type":"input_text","text":"What is in this screenshot?"}]}`,
	`{"type":"reasoning","summary":[],"encrypted_content":"RVNDUllQVA=="}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A terminal with two files."}]}`,
	// the compaction: the view restarts here
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"This session is being continued from a previous conversation. Summary: listed Go files."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Ready to continue."}]}`,
}

func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	sum, err := Import(ctx, st, "testdata/projects", importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 3 || sum.Read != 3 || sum.Empty != 1 || len(sum.Failures) != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if sum.Sessions != (importer.Counts{New: 1}) || sum.Subagents != (importer.Counts{New: 2}) {
		t.Errorf("sessions %+v subagents %+v", sum.Sessions, sum.Subagents)
	}
	wantSkipped := map[string]int{
		"file-history-snapshot": 1, "queue-operation": 1, "progress": 1, "last-prompt": 1,
		"system:api_error": 1, "block:server_tool_use": 1, "unknown:hologram": 1,
		"malformed": 1, "torn": 1,
		"ai-title": 1, // the AI title after the custom title
	}
	if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
		t.Errorf("skipped %v\nwant    %v", sum.Skipped, wantSkipped)
	}

	m, entries, err := st.Load(ctx, fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	var logItems []string
	var compactions []recall.Compaction
	for _, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			logItems = append(logItems, string(e.Data))
		case recall.KindCompaction:
			var c recall.Compaction
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			if c.Through != e.Seq-1 {
				t.Errorf("compaction at seq %d has Through %d", e.Seq, c.Through)
			}
			compactions = append(compactions, c)
		}
	}
	if !reflect.DeepEqual(logItems, wantLog) {
		t.Errorf("log items:\n%s\nwant:\n%s", strings.Join(logItems, "\n"), strings.Join(wantLog, "\n"))
	}
	if len(compactions) != 1 || compactions[0].Replaced != 10 || compactions[0].Strategy != "claude-code" {
		t.Errorf("compactions %+v", compactions)
	}
	live, _, err := st.Items(ctx, fixtureKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || string(live[1].Item) != wantLog[11] {
		t.Errorf("view after the compaction: %v", live)
	}
	if m.Title != "Go files tour" || m.TitleSource != recall.TitleUser {
		t.Errorf("title %q (%s)", m.Title, m.TitleSource)
	}
	// usage: one per message id, cached input counted as input
	wantUsage := recall.Usage{InputTokens: 4 * 1110, OutputTokens: 5 + 7 + 9 + 4}
	wantUsage.TotalTokens = wantUsage.InputTokens + wantUsage.OutputTokens
	if m.Usage != wantUsage {
		t.Errorf("usage %+v, want %+v", m.Usage, wantUsage)
	}
	if got := m.Created.Format("2006-01-02T15:04:05Z"); got != "2025-10-01T09:00:00Z" {
		t.Errorf("created %s", got)
	}
	if got := m.Updated.Format("2006-01-02T15:04:05Z"); got != "2025-10-01T09:03:10Z" {
		t.Errorf("updated %s", got)
	}
	md := m.Metadata
	if md[importer.MetaSource] != Tool || md[importer.MetaSession] != fixtureSID || md[importer.MetaModel] != "claude-opus-4-1" ||
		!strings.HasSuffix(md[importer.MetaFile], fixtureSID+".jsonl") || md[importer.MetaDigest] == "" {
		t.Errorf("metadata %v", md)
	}
	// The session records its folder, as recall chat records its own.
	if md[importer.MetaCwd] != "/home/dev/app" {
		t.Errorf("metadata %s = %q, want the transcript's cwd", importer.MetaCwd, md[importer.MetaCwd])
	}
	data, _ := os.ReadFile(filepath.Join(fixtureDir, fixtureSID+".jsonl"))
	torn := len(data) - strings.LastIndexByte(string(data), '\n') - 1
	if want := len(data) - torn; md[importer.MetaOffset] != strconv.Itoa(want) {
		t.Errorf("offset %s, want %d (all but the torn line)", md[importer.MetaOffset], want)
	}

	// The subagent transcript and the sidechain lines are records under
	// the session, which List does not show.
	page, err := st.List(ctx, fixtureKey.Project, recall.ListOptions{Parent: fixtureSID})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]int{}
	for _, s := range page.Sessions {
		subs[s.Key.Subpath] = s.ItemCount
	}
	if !reflect.DeepEqual(subs, map[string]int{"subagents/agent-a1": 2, "subagents/agent-c0ffee": 2}) {
		t.Errorf("subagent records %v", subs)
	}
	main, _ := st.List(ctx, "", recall.ListOptions{})
	if len(main.Sessions) != 1 {
		t.Errorf("List shows %d sessions, want 1", len(main.Sessions))
	}
	if err := storekit.Verify(ctx, st); err != nil {
		t.Error(err)
	}
}

// TestReimport checks idempotency: an unchanged transcript adds nothing,
// one that grew adds only its new lines (the torn line among them, once
// it is whole), and one that was rewritten is refused.
func TestReimport(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"mem", "file", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, name)
			reimport(t, ctx, st, copyFixture(t))
		})
	}
}

// openStore opens a fresh store of the given kind, closed by the test's end.
func openStore(t *testing.T, kind string) recall.Store {
	t.Helper()
	var (
		st  recall.Store
		err error
	)
	switch kind {
	case "mem":
		st = memstore.New(memstore.Options{})
	case "file":
		st, err = filestore.Open(filestore.Options{Dir: t.TempDir()})
	case "sqlite":
		st, err = sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"), sqlstore.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func reimport(t *testing.T, ctx context.Context, st recall.Store, dir string) {
	first, err := Import(ctx, st, dir, importer.Options{})
	if err != nil || len(first.Failures) > 0 {
		t.Fatal(err, first.Failures)
	}
	m1, log1, err := st.Load(ctx, fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Import(ctx, st, dir, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Sessions != (importer.Counts{Unchanged: 1}) || again.Subagents != (importer.Counts{Unchanged: 2}) || again.Entries != 0 {
		t.Fatalf("second import: %+v", again)
	}
	if m2, _ := st.Stat(ctx, fixtureKey); m2.LastSeq != m1.LastSeq {
		t.Fatalf("an unchanged transcript moved the log from %d to %d", m1.LastSeq, m2.LastSeq)
	}

	// The transcript grows: the torn line is finished, and a turn follows.
	path := filepath.Join(dir, "-home-dev-app", fixtureSID+".jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`ne"},"cwd":"/home/dev/app","sessionId":"` + fixtureSID + `"}` + "\n")
	f.WriteString(`{"type":"assistant","timestamp":"2025-10-01T09:05:01.000Z","cwd":"/home/dev/app","sessionId":"` + fixtureSID + `","message":{"id":"msg_05","role":"assistant","model":"claude-opus-4-1","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n")
	f.Close()
	grown, err := Import(ctx, st, dir, importer.Options{})
	if err != nil || len(grown.Failures) > 0 {
		t.Fatal(err, grown.Failures)
	}
	if grown.Sessions != (importer.Counts{Updated: 1}) || grown.Items != 2 {
		t.Fatalf("grown import: %+v", grown)
	}
	_, log3, _ := st.Load(ctx, fixtureKey)
	if !reflect.DeepEqual(log3[:len(log1)], log1) {
		t.Fatal("the grown import changed entries already imported")
	}
	var newItems []string
	for _, e := range log3[len(log1):] {
		if e.Kind == recall.KindItem {
			newItems = append(newItems, string(e.Data))
		}
	}
	want := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"half a line"}]}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}`,
	}
	if !reflect.DeepEqual(newItems, want) {
		t.Errorf("new items %v", newItems)
	}

	// Rewritten from the start: refused, and nothing changes.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), "List the Go files", "List the Rust files", 1)), 0o644)
	changed, err := Import(ctx, st, dir, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// the session and its sidechain record both come from the file
	if len(changed.Failures) != 2 || changed.Sessions != (importer.Counts{}) {
		t.Errorf("rewritten transcript: %+v", changed)
	}
	for _, f := range changed.Failures {
		if !strings.Contains(f.Err, "changed since it was imported") {
			t.Errorf("failure %+v", f)
		}
	}
	if _, log4, _ := st.Load(ctx, fixtureKey); len(log4) != len(log3) {
		t.Error("a rewritten transcript wrote entries")
	}
	if err := storekit.Verify(ctx, st); err != nil {
		t.Error(err)
	}
}

// A transcript imported into another project than its folder's does not
// record that folder: it is not the project's.
func TestProjectOverrideRecordsNoFolder(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	sum, err := Import(ctx, st, filepath.Join(fixtureDir, fixtureSID+".jsonl"), importer.Options{Project: "elsewhere"})
	if err != nil || sum.Sessions != (importer.Counts{New: 1}) || sum.Subagents != (importer.Counts{New: 1}) {
		t.Fatalf("%+v, %v", sum, err)
	}
	page, _ := st.List(ctx, "elsewhere", recall.ListOptions{})
	subs, _ := st.List(ctx, "elsewhere", recall.ListOptions{Parent: fixtureSID})
	for _, m := range append(page.Sessions, subs.Sessions...) {
		if cwd, ok := m.Metadata[importer.MetaCwd]; ok {
			t.Errorf("record %s records the folder %q", m.Key, cwd)
		}
	}
	if len(page.Sessions) != 1 || len(subs.Sessions) != 1 {
		t.Errorf("%d sessions, %d subagent records in the project", len(page.Sessions), len(subs.Sessions))
	}
}
