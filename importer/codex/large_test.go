package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
)

const largeID = "0199b000-aaaa-7bbb-8ccc-dddddddddddd"

// writeLarge writes a rollout of about size bytes to dir and returns its
// path and the number of response items in it. Each round is a user
// message, a reasoning item, a function call and its output of a few kB,
// an assistant message, and the event_msg lines that repeat them.
func writeLarge(t testing.TB, dir string, size int64) (string, int) {
	t.Helper()
	path := filepath.Join(dir, "rollout-2025-10-03T08-00-00-"+largeID+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cw := &importtest.CountingWriter{W: f}
	w := bufio.NewWriter(cw)
	enc := json.NewEncoder(w)
	start := time.Date(2025, 10, 3, 8, 0, 0, 0, time.UTC)
	line := func(at time.Time, typ string, payload any) {
		if err := enc.Encode(map[string]any{"timestamp": at.Format(time.RFC3339Nano), "type": typ, "payload": payload}); err != nil {
			t.Fatal(err)
		}
	}
	line(start, "session_meta", map[string]any{"id": largeID, "timestamp": start.Format(time.RFC3339Nano), "cwd": "/home/dev/big", "originator": "codex_cli_rs", "cli_version": "0.46.0"})
	line(start, "turn_context", map[string]any{"cwd": "/home/dev/big", "model": "gpt-5-codex"})
	output := strings.Repeat("ok   github.com/dev/big/pkg\t0.012s \"quoted\" <tag>\n", 70)
	items := 0
	var written int64
	for round := 0; written < size; round++ {
		at := start.Add(time.Duration(round) * time.Minute)
		prompt := fmt.Sprintf("Round %d: run the tests and fix what fails. %s", round, strings.Repeat("context ", 40))
		call := fmt.Sprintf("call_%d", round)
		line(at, "response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}})
		line(at, "event_msg", map[string]any{"type": "user_message", "message": prompt})
		line(at, "response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "**Running the tests**"}}, "encrypted_content": strings.Repeat("gAAAA", 100)})
		line(at, "response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["go","test","./..."]}`, "call_id": call})
		line(at, "response_item", map[string]any{"type": "function_call_output", "call_id": call, "output": output})
		line(at, "event_msg", map[string]any{"type": "token_count", "info": map[string]any{"last_token_usage": map[string]any{"input_tokens": 4000, "output_tokens": 90}}})
		line(at, "response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "All tests pass now."}}})
		line(at, "event_msg", map[string]any{"type": "agent_message", "message": "All tests pass now."})
		items += 5
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		written = cw.N
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, items
}

// TestLargeRollout imports a 50 MB rollout (10 MB under -short or -race),
// generated here, into the file store, and again.
func TestLargeRollout(t *testing.T) {
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
	sum, err := Import(ctx, st, []string{path}, importer.Options{})
	if err != nil || len(sum.Failures) > 0 {
		t.Fatal(err, sum.Failures)
	}
	if sum.Bytes < size || sum.Bytes > size+1<<20 {
		t.Fatalf("generated %d bytes, not about %d MB", sum.Bytes, size>>20)
	}
	if sum.Items != items || sum.Skipped["event_msg:user_message"] != items/5 {
		t.Fatalf("summary %+v, want %d items", sum, items)
	}
	key := recall.Key{Project: "-home-dev-big", Session: largeID}
	m, err := st.Stat(ctx, key)
	if err != nil || m.ItemCount != items {
		t.Fatalf("%+v, %v", m, err)
	}
	// one token_count per round
	if want := int64(4000 * items / 5); m.Usage.InputTokens != want {
		t.Errorf("usage %+v, want %d input tokens", m.Usage, want)
	}
	again, err := Import(ctx, st, []string{path}, importer.Options{})
	if err != nil || again.Sessions != (importer.Counts{Unchanged: 1}) {
		t.Fatalf("again: %+v, %v", again, err)
	}
}

var (
	benchOnce  sync.Once
	benchPath  string
	benchItems int
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchPath != "" {
		os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}

// BenchmarkImport measures importing a 20 MB rollout (MB/s, items/s)
// against the baseline of reading the same file and decoding every line
// with encoding/json, in the same run (see importtest.Benchmark).
func BenchmarkImport(b *testing.B) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "recall-codex-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchPath, benchItems = writeLarge(b, dir, 20<<20)
	})
	path, items := benchPath, benchItems
	importtest.Benchmark(b, path, items, func(ctx context.Context, st recall.Store, opts importer.Options) (importer.Summary, error) {
		return Import(ctx, st, []string{path}, opts)
	})
}
