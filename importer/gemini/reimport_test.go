package gemini

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
)

// appendTo appends text to a file.
func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// A recording that grew adds its new lines' items: the torn line, now
// whole, and a message a later line extends with its tool call.
func TestRecordingGrows(t *testing.T) {
	ctx := context.Background()
	tmp := copyFixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, tmp, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := logOf(t, st, mainKey)
	file := filepath.Join(tmp, "app", "chats", filepath.Base(mainFile))
	appendTo(t, file, `at?"}]}`+"\n"+
		`{"id":"m16","timestamp":"2026-08-01T09:08:00.000Z","type":"gemini","content":[{"functionCall":{"id":"c9","name":"glob","args":{"pattern":"*_test.go"}}}],"tokens":{"input":10,"output":2,"total":12}}`+"\n"+
		`{"id":"m16","timestamp":"2026-08-01T09:08:00.000Z","type":"gemini","content":[{"functionCall":{"id":"c9","name":"glob","args":{"pattern":"*_test.go"}}}],"tokens":{"input":10,"output":2,"total":12},"toolCalls":[{"id":"c9","name":"glob","args":{"pattern":"*_test.go"},"result":[{"functionResponse":{"id":"c9","name":"glob","response":{"output":"main_test.go"}}}],"status":"success"}]}`+"\n")
	sum, err := Import(ctx, st, tmp, importer.Options{})
	if err != nil || sum.Sessions != (importer.Counts{Updated: 1, Unchanged: 5}) || sum.Items != 3 || sum.Skipped["torn"] != 0 {
		t.Fatalf("grown: %+v, %v", sum, err)
	}
	after, items, _ := logOf(t, st, mainKey)
	tail := strings.Join(items[len(items)-3:], "\n")
	for _, want := range []string{`"text":"And that?"`, `"call_id":"c9","name":"glob"`, `"output":"main_test.go"`} {
		if !strings.Contains(tail, want) {
			t.Errorf("new items lack %s:\n%s", want, tail)
		}
	}
	if after.Usage.TotalTokens != before.Usage.TotalTokens+12 {
		t.Errorf("usage %+v -> %+v", before.Usage, after.Usage)
	}
}

// A recording whose imported lines changed is reported, and its session
// is left as it was.
func TestRecordingChanged(t *testing.T) {
	ctx := context.Background()
	tmp := copyFixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, tmp, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	_, before, _ := logOf(t, st, mainKey)
	file := filepath.Join(tmp, "app", "chats", filepath.Base(mainFile))
	data, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(data), "List the Go files", "List the C files", 1)), 0o644)
	sum, err := Import(ctx, st, tmp, importer.Options{})
	if err != nil || len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, importer.ErrChanged.Error()) {
		t.Fatalf("changed: %+v, %v", sum, err)
	}
	if _, after, _ := logOf(t, st, mainKey); len(after) != len(before) {
		t.Errorf("a changed recording was merged: %d items, then %d", len(before), len(after))
	}
}

// Files rewritten whole are read as the stream of their records: one that
// gained records at its end is appended to, one whose imported records
// changed is reported.
func TestRewrittenFiles(t *testing.T) {
	ctx := context.Background()
	tmp := copyFixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, tmp, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(tmp, hashOf("/home/dev/legacy"), "chats", "session-2025-09-01T08-00-0f1e2d3c.json")
	rewrite(t, legacy, `"messages": [`, `"messages": [{"id":"l0","type":"user","content":"an earlier prompt"},`)
	ckpt := filepath.Join(tmp, "app", "checkpoint-review%20notes.json")
	rewrite(t, ckpt, `"authType"`, `"extra": 1, "authType"`) // the same history, written again
	rewrite(t, ckpt, `"parts": []`, `"parts": []}, {"role": "user", "parts": [{"text": "And main_test.go?"}]`)
	logs := filepath.Join(tmp, "app", "logs.json")
	rewrite(t, logs, "\n]", `, {"sessionId":"`+logsSID+`","messageId":4,"type":"user","message":"Thanks.","timestamp":"2025-06-01T08:10:00.000Z"}]`)
	sum, err := Import(ctx, st, tmp, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != (importer.Counts{Updated: 2, Unchanged: 3}) || sum.Items != 2 || len(sum.Failures) != 1 ||
		!strings.Contains(sum.Failures[0].File, "0f1e2d3c.json") || !strings.Contains(sum.Failures[0].Err, importer.ErrChanged.Error()) {
		t.Fatalf("rewritten: %+v", sum)
	}
	_, items, _ := logOf(t, st, recall.Key{Project: "-home-dev-app", Session: logsSID})
	if len(items) != 3 || recall.Item(items[2]).Text() != "Thanks." {
		t.Errorf("logs session %v", items)
	}
}

// rewrite replaces the first old in a file with new.
func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), old) {
		t.Fatalf("%s: %v, or no %q in it", path, err, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A session of logs.json whose recording was imported, and then deleted
// by the CLI's cleanup, is left as the recording made it.
func TestLogsOfARecordedSession(t *testing.T) {
	ctx := context.Background()
	tmp := copyFixture(t)
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, tmp, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(tmp, "app", "chats", filepath.Base(mainFile))); err != nil {
		t.Fatal(err)
	}
	sum, err := Import(ctx, st, tmp, importer.Options{})
	if err != nil || len(sum.Failures) != 0 || sum.Skipped["logs:recorded"] != 1 || sum.Entries != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
}

func TestDryRunAndProject(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	dry, err := Import(ctx, st, fixtureTmp, importer.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if page, _ := st.List(ctx, "", recall.ListOptions{}); len(page.Sessions) != 0 {
		t.Fatal("a dry run wrote sessions")
	}
	real, err := Import(ctx, st, mainFile, importer.Options{Project: "elsewhere"})
	if err != nil || real.Sessions != (importer.Counts{New: 1}) {
		t.Fatalf("%+v, %v", real, err)
	}
	if !dry.DryRun || dry.Sessions.New != 6 || dry.Items < real.Items {
		t.Errorf("dry run %+v", dry)
	}
	m, err := st.Stat(ctx, recall.Key{Project: "elsewhere", Session: mainSID})
	if err != nil {
		t.Fatal(err)
	}
	if cwd, ok := m.Metadata[importer.MetaCwd]; ok {
		t.Errorf("an import into another project records the folder %q", cwd)
	}
}

func TestDamagedFiles(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "p")
	os.MkdirAll(filepath.Join(dir, "chats"), 0o755)
	os.WriteFile(filepath.Join(dir, "logs.json"), []byte(`{"not":"an array"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "chats", "session-x-12345678.json"), []byte(`"a string"`), 0o644)
	os.WriteFile(filepath.Join(dir, "checkpoint-cut.json"), []byte(`{"history":[{"role":"user","parts":[{"text":"kept"}]},{"role":"model","parts":[{"te`), 0o644)
	st := memstore.New(memstore.Options{})
	sum, err := Import(ctx, st, dir, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 1 || len(sum.Failures) != 2 || sum.Skipped["torn"] != 1 || sum.Items != 1 {
		t.Errorf("%+v", sum)
	}
	for _, f := range sum.Failures {
		if !strings.Contains(f.Err, errNotJSON.Error()) {
			t.Errorf("failure %+v", f)
		}
	}
}
