package gemini

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
)

const largeSID = "0199c000-aaaa-7bbb-8ccc-dddddddddddd"

// writeLarge writes a recording of about size bytes to dir, as Gemini CLI
// 0.56 writes one, and returns its path and the number of items it gives.
// Each round is a prompt; the model's turn (a thought, its text and a
// call, with its tokens); that turn again with the CLI's record of the
// call and its result of a few kB; the result again as a user message;
// and a "$set" of the time. The project folder names its root in
// .project_root, as Gemini CLI writes it.
func writeLarge(t testing.TB, dir string, size int64) (string, int) {
	t.Helper()
	path := filepath.Join(dir, "chats", "session-2026-08-03T08-00-0199c000.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".project_root"), []byte("/home/dev/big\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	put := func(v any) {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 8, 3, 8, 0, 0, 0, time.UTC)
	put(map[string]any{"sessionId": largeSID, "projectHash": hashOf("/home/dev/big"), "startTime": start.Format(time.RFC3339Nano), "kind": "main", "directories": []string{"/home/dev/big"}})
	output := strings.Repeat("ok   github.com/dev/big/pkg\t0.012s \"quoted\" <tag>\n", 70)
	items := 0
	for round := 0; ; round++ {
		if fi, _ := f.Stat(); fi.Size()+int64(w.Buffered()) >= size {
			break
		}
		at := start.Add(time.Duration(round) * time.Minute).Format(time.RFC3339Nano)
		call := fmt.Sprintf("run_shell_command__%d", round)
		response := map[string]any{"functionResponse": map[string]any{"id": call, "name": "run_shell_command", "response": map[string]any{"output": output}}}
		put(map[string]any{"id": fmt.Sprintf("u%d", round), "timestamp": at, "type": "user",
			"content": []any{map[string]any{"text": fmt.Sprintf("Round %d: run the tests and fix what fails. %s", round, strings.Repeat("context ", 40))}}})
		turn := map[string]any{"id": fmt.Sprintf("g%d", round), "timestamp": at, "type": "gemini", "model": "gemini-2.5-pro",
			"content": []any{
				map[string]any{"text": "**Running the tests**", "thought": true, "thoughtSignature": strings.Repeat("c2ln", 50)},
				map[string]any{"text": "Running the tests."},
				map[string]any{"functionCall": map[string]any{"id": call, "name": "run_shell_command", "args": map[string]any{"command": "go test ./..."}}},
			},
			"thoughts": []any{}, "tokens": map[string]any{"input": 4000, "output": 90, "cached": 3000, "thoughts": 20, "tool": 0, "total": 4110}}
		put(turn)
		turn["toolCalls"] = []any{map[string]any{"id": call, "name": "run_shell_command", "args": map[string]any{"command": "go test ./..."},
			"result": []any{response}, "status": "success", "timestamp": at, "resultDisplay": output, "displayName": "Shell", "description": "go test ./...", "renderOutputAsMarkdown": false}}
		put(turn)
		put(map[string]any{"id": fmt.Sprintf("r%d", round), "timestamp": at, "type": "user", "content": []any{response}})
		put(map[string]any{"$set": map[string]any{"lastUpdated": at}})
		items += 5 // prompt, reasoning, text, call, output
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, items
}

// TestLargeRecording imports a 50 MB recording (10 MB under -short or
// -race), generated here, into the file store, and again.
func TestLargeRecording(t *testing.T) {
	size := int64(50 << 20)
	if testing.Short() || raceEnabled {
		size = 10 << 20 // still more than one batch (8 MB) to write
	}
	ctx := context.Background()
	path, items := writeLarge(t, t.TempDir(), size)
	st, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sum, err := Import(ctx, st, path, importer.Options{})
	if err != nil || len(sum.Failures) > 0 || sum.Items != items || len(sum.Skipped) != 0 {
		t.Fatalf("%+v, %v (want %d items)", sum, err, items)
	}
	key := recall.Key{Project: "-home-dev-big", Session: largeSID}
	m, err := st.Stat(ctx, key)
	if err != nil || m.ItemCount != items || m.Usage.InputTokens != int64(4000*items/5) {
		t.Fatalf("%+v, %v", m, err)
	}
	again, err := Import(ctx, st, path, importer.Options{})
	if err != nil || again.Sessions != (importer.Counts{Unchanged: 1}) {
		t.Fatalf("again: %+v, %v", again, err)
	}
}

// BenchmarkImport measures importing a 20 MB recording (MB/s, items/s)
// against the baseline of reading the same file and decoding every line
// with encoding/json, in the same run (see importtest.Benchmark).
func BenchmarkImport(b *testing.B) {
	path, items := writeLarge(b, b.TempDir(), 20<<20)
	importtest.Benchmark(b, path, items, func(ctx context.Context, st recall.Store, opts importer.Options) (importer.Summary, error) {
		return Import(ctx, st, path, opts)
	})
}
