package gemini

import (
	"context"
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

const (
	fixtureTmp  = "testdata/home/.gemini/tmp"
	mainSID     = "7d9c2f6e-4a1b-4c3d-8e5f-0a1b2c3d4e5f"
	subSID      = "3e8a1b2c-5d6f-4a7b-9c0d-1e2f3a4b5c6d"
	legacySID   = "0f1e2d3c-aaaa-4bbb-8ccc-ddddeeeeffff"
	migratedSID = "5a6b7c8d-1111-4222-8333-944455556666"
	logsSID     = "4c4c4c4c-2222-4333-8444-555566667777"
	strandSID   = "9a9a9a9a-0000-4000-8000-000000000001"
	mainFile    = fixtureTmp + "/app/chats/session-2026-08-01T09-00-7d9c2f6e.jsonl"
)

var mainKey = recall.Key{Project: "-home-dev-app", Session: mainSID}

// copyFixture copies the fixture's tmp folder (with the projects.json
// beside it) to a temporary folder, so a test may change its files.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), ".gemini")
	if err := os.CopyFS(dst, os.DirFS("testdata/home/.gemini")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "tmp")
}

// items returns the item entries of a record's log, and its compactions.
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
			if c.Through != e.Seq-1 {
				t.Errorf("compaction at %d reads through %d", e.Seq, c.Through)
			}
			comps = append(comps, c)
		}
	}
	return m, items, comps
}

// wantMain is every item the main session's log holds, in order.
var wantMain = []string{
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"List the Go files, please."}]}`,
	`{"type":"reasoning","summary":[{"type":"summary_text","text":"I should list them."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]}`,
	`{"type":"function_call","call_id":"run_shell_command__c1","name":"run_shell_command","arguments":"{\"command\":\"ls *.go\"}"}`,
	// from the line that repeats m2 with its tool call record; the user
	// message that repeats the response (m3) adds nothing
	`{"type":"function_call_output","call_id":"run_shell_command__c1","output":"main.go\nutil.go"}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files: main.go and util.go."}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"What is in this screenshot?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]}`,
	// an older gemini message: recorded thoughts, text, tool call records
	`{"type":"reasoning","summary":[{"type":"summary_text","text":"**Reading** Check the file too."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A terminal with two files."}]}`,
	`{"type":"function_call","call_id":"read_file__c2","name":"read_file","arguments":"{\"absolute_path\":\"/home/dev/app/missing.go\"}"}`,
	`{"type":"function_call_output","call_id":"read_file__c2","output":"File not found: /home/dev/app/missing.go","is_error":true}`,
	// the turn a rewind took back (a compaction follows)
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"Now delete util.go."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Deleting util.go."}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"Run the tests instead."}]}`,
	// after the compressed history (a second compaction)
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All tests pass."}]}`,
}

func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	for _, u := range storeURLs(t) {
		t.Run(strings.Split(u, ":")[0], func(t *testing.T) {
			st, err := storeurl.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sum, err := Import(ctx, st, fixtureTmp, importer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// 4 recordings, 1 subagent's, 1 checkpoint, 1 session of logs.json
			if sum.Files != 7 || sum.Read != 7 || sum.Sessions != (importer.Counts{New: 6}) ||
				sum.Subagents != (importer.Counts{New: 1}) || len(sum.Failures) != 0 {
				t.Fatalf("summary %+v", sum)
			}
			wantSkipped := map[string]int{
				"message:info":        1, // m5
				"user:ignored":        2, // /stats, and /quit in logs.json
				"unknown":             1, // a "$future" record
				"unknown:tool_group":  1, // a message of a future type
				"part:executableCode": 1,
				"malformed":           4, // a line, a list element, a legacy message, a log entry
				"torn":                1,
				"summary":             1, // a subagent's summary is no title
				"logs:system":         1,
				"unknown:tool":        1, // a checkpoint turn of an unknown role
			}
			if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
				t.Errorf("skipped %v\nwant    %v", sum.Skipped, wantSkipped)
			}
			checkMain(t, st)
			checkOthers(t, st)
			again, err := Import(ctx, st, fixtureTmp, importer.Options{})
			if err != nil || again.Sessions != (importer.Counts{Unchanged: 6}) || again.Subagents != (importer.Counts{Unchanged: 1}) || again.Entries != 0 {
				t.Fatalf("second import: %+v, %v", again, err)
			}
			if err := storekit.Verify(ctx, st); err != nil {
				t.Error(err)
			}
		})
	}
}

func checkMain(t *testing.T, st recall.Store) {
	t.Helper()
	m, items, comps := logOf(t, st, mainKey)
	if !reflect.DeepEqual(items, wantMain) {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(items, "\n"), strings.Join(wantMain, "\n"))
	}
	if len(comps) != 2 {
		t.Fatalf("%d compactions, want 2", len(comps))
	}
	// the rewind: the view goes back to the items before m9
	if comps[0].Replaced != 13 || len(comps[0].Items) != 11 || comps[0].Strategy != "gemini-cli rewind" {
		t.Errorf("rewind %+v", comps[0])
	}
	// the "$set" of a compressed history: its two turns; the element
	// that is not a message is left out
	if comps[1].Replaced != 12 || comps[1].Strategy != "gemini-cli" || len(comps[1].Items) != 2 || !strings.Contains(comps[1].Items[0].Text(), "state_snapshot") {
		t.Errorf("checkpoint %+v", comps[1])
	}
	live, _, err := st.Items(context.Background(), mainKey, 0)
	if err != nil || len(live) != 3 || live[2].Item.Text() != "All tests pass." {
		t.Errorf("view %v, %v", live, err)
	}
	md := m.Metadata
	if m.Title != "Go files tour" || md[importer.MetaSource] != Tool || md[importer.MetaSession] != mainSID ||
		md[importer.MetaCwd] != "/home/dev/app" || md[importer.MetaModel] != "gemini-2.5-pro" {
		t.Errorf("meta %+v", m)
	}
	// input with the cached input, output with the thoughts: m2, m4, m13
	if want := (recall.Usage{InputTokens: 3400, OutputTokens: 60, TotalTokens: 3460}); m.Usage != want {
		t.Errorf("usage %+v, want %+v", m.Usage, want)
	}
	if got := m.Created.Format("2006-01-02T15:04:05Z"); got != "2026-08-01T09:00:00Z" {
		t.Errorf("created %s", got)
	}
}

func checkOthers(t *testing.T, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	// the subagent, under its session
	sub := recall.Key{Project: "-home-dev-app", Session: mainSID, Subpath: "subagents/" + subSID}
	m, items, _ := logOf(t, st, sub)
	if len(items) != 4 || m.Title != "" || m.Metadata[importer.MetaAgent] != subSID || !strings.Contains(items[2], "package main") {
		t.Errorf("subagent %+v %v", m, items)
	}
	// a legacy .json in a folder named by its project's hash
	m, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-legacy", Session: legacySID})
	if len(items) != 6 || m.Title != "Build script explained" || m.Metadata[importer.MetaCwd] != "/home/dev/legacy" ||
		!strings.Contains(items[1], "**Planning** Read build.sh.") {
		t.Errorf("legacy %+v %v", m, items)
	}
	// the recording a resume migrated to .jsonl: the .json is not read
	m, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-app", Session: migratedSID})
	if len(items) != 3 || !strings.HasSuffix(m.Metadata[importer.MetaFile], ".jsonl") {
		t.Errorf("migrated %+v %v", m, items)
	}
	// the prompts of a session logs.json alone holds
	_, items, _ = logOf(t, st, recall.Key{Project: "-home-dev-app", Session: logsSID})
	if want := []string{"How do I parse flags in Go?", "And with pflag?"}; len(items) != 2 || recall.Item(items[0]).Text() != want[0] || recall.Item(items[1]).Text() != want[1] {
		t.Errorf("logs %v", items)
	}
	// /chat save review notes: the calls and responses without ids are paired
	page, _ := st.List(ctx, "-home-dev-app", recall.ListOptions{})
	var ckpt *recall.Meta
	for i, s := range page.Sessions {
		if s.Title == "review notes" {
			ckpt = &page.Sessions[i]
		}
	}
	if ckpt == nil || ckpt.TitleSource != recall.TitleUser {
		t.Fatalf("no checkpoint session titled by its tag: %+v", page.Sessions)
	}
	_, items, _ = logOf(t, st, ckpt.Key)
	if len(items) != 5 || recall.Item(items[2]).CallID() == "" || recall.Item(items[2]).CallID() != recall.Item(items[3]).CallID() {
		t.Errorf("checkpoint %v", items)
	}
	// a folder nothing names: a project of its own name
	if _, err := st.Stat(ctx, recall.Key{Project: "gemini-stray", Session: strandSID}); err != nil {
		t.Error(err)
	}
	// the legacy folder the CLI copied to app/ is not read
	if page, _ := st.List(ctx, "", recall.ListOptions{Limit: 100}); len(page.Sessions) != 6 {
		t.Errorf("%d sessions", len(page.Sessions))
	}
}

// storeURLs are the stores an import is tested on: each kind of store
// writes its log its own way.
func storeURLs(t *testing.T) []string {
	return []string{"mem://", "file://" + t.TempDir(), "sqlite://" + filepath.Join(t.TempDir(), "recall.db")}
}

func TestNothingToRead(t *testing.T) {
	st := memstore.New(memstore.Options{})
	if _, err := Import(context.Background(), st, "testdata/none", importer.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
	if _, err := Import(context.Background(), st, t.TempDir(), importer.Options{}); !errors.Is(err, ErrNoSessions) {
		t.Errorf("empty folder: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("GEMINI_CLI_HOME", "/srv/gemini-home")
	if p, err := DefaultPath(); err != nil || p != filepath.Join("/srv/gemini-home", ".gemini", "tmp") {
		t.Errorf("with GEMINI_CLI_HOME: %q, %v", p, err)
	}
	t.Setenv("GEMINI_CLI_HOME", "")
	home, _ := os.UserHomeDir()
	if p, err := DefaultPath(); err != nil || p != filepath.Join(home, ".gemini", "tmp") {
		t.Errorf("default: %q, %v", p, err)
	}
}
