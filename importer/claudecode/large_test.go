package claudecode

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
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

const largeSID = "7d9e1f20-3a4b-4c5d-8e6f-708192a3b4c5"

// writeLarge writes a Claude Code transcript of about size bytes to dir
// and returns its path and the number of items it maps to. Each round is
// a user prompt, an assistant text and tool_use (two lines of one
// message), a tool result of a few kB, and a file-history-snapshot line.
func writeLarge(t testing.TB, dir string, size int64) (string, int) {
	t.Helper()
	path := filepath.Join(dir, largeSID+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cw := &countingWriter{w: f}
	w := bufio.NewWriter(cw)
	enc := json.NewEncoder(w)
	start := time.Date(2025, 10, 1, 9, 0, 0, 0, time.UTC)
	output := strings.Repeat("main.go:12: a line of tool output, with \"quotes\" and <tags>\n", 60)
	items := 0
	var written int64
	for round := 0; written < size; round++ {
		at := func(k int) string { return start.Add(time.Duration(round*5+k) * time.Second).Format(time.RFC3339Nano) }
		base := func(typ string, k int) map[string]any {
			return map[string]any{"type": typ, "uuid": fmt.Sprintf("u%d-%d", round, k), "parentUuid": nil, "isSidechain": false,
				"cwd": "/home/dev/big", "sessionId": largeSID, "version": "2.0.14", "gitBranch": "main", "timestamp": at(k)}
		}
		msgID := fmt.Sprintf("msg_%d", round)
		usage := map[string]any{"input_tokens": 12, "cache_read_input_tokens": 4000, "output_tokens": 90}
		lines := []map[string]any{
			base("user", 0),
			base("assistant", 1),
			base("assistant", 2),
			base("user", 3),
			{"type": "file-history-snapshot", "messageId": msgID, "snapshot": map[string]any{"trackedFileBackups": map[string]any{}}},
		}
		lines[0]["message"] = map[string]any{"role": "user", "content": fmt.Sprintf("Round %d: look at the build output and fix what fails. %s", round, strings.Repeat("context ", 40))}
		lines[1]["message"] = map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": "I will run the build first."}}, "usage": usage}
		lines[2]["message"] = map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", round), "name": "Bash",
				"input": map[string]any{"command": "go build ./...", "description": "Build"}}}, "usage": usage}
		lines[3]["message"] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result",
			"tool_use_id": fmt.Sprintf("toolu_%d", round), "content": output, "is_error": round%7 == 0}}}
		for _, l := range lines {
			if err := enc.Encode(l); err != nil {
				t.Fatal(err)
			}
		}
		items += 4
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		written = cw.n
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, items
}

// TestLargeTranscript imports a 50 MB transcript (10 MB under -short or
// -race), generated here, into the file store: every item arrives, in
// several batches, and importing it again, and after it grew, stays exact.
func TestLargeTranscript(t *testing.T) {
	size := int64(50 << 20)
	if testing.Short() || raceEnabled {
		size = 10 << 20 // still more than one batch (8 MB) to write
	}
	ctx := context.Background()
	dir := t.TempDir()
	path, items := writeLarge(t, dir, size)
	if fi, _ := os.Stat(path); fi.Size() < size {
		t.Fatalf("generated %d bytes", fi.Size())
	}
	st, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sum, err := Import(ctx, st, path, importer.Options{})
	if err != nil || len(sum.Failures) > 0 {
		t.Fatal(err, sum.Failures)
	}
	if sum.Bytes > size+1<<20 {
		t.Fatalf("generated %d bytes, not about %d MB", sum.Bytes, size>>20)
	}
	if sum.Items != items || sum.Sessions != (importer.Counts{New: 1}) || sum.Skipped["file-history-snapshot"] != items/4 {
		t.Fatalf("summary %+v, want %d items", sum, items)
	}
	key := recall.Key{Project: "-home-dev-big", Session: largeSID}
	m, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// one meta entry per batch besides the create entry and the items
	if batches := int(m.LastSeq) - 1 - items; batches < 2 || m.ItemCount != items {
		t.Errorf("%d items in %d batches (LastSeq %d)", m.ItemCount, batches, m.LastSeq)
	}
	if fi, _ := os.Stat(path); m.Metadata[importer.MetaOffset] != fmt.Sprint(fi.Size()) {
		t.Errorf("offset %s of %d bytes", m.Metadata[importer.MetaOffset], fi.Size())
	}
	again, err := Import(ctx, st, path, importer.Options{})
	if err != nil || again.Sessions != (importer.Counts{Unchanged: 1}) || again.Entries != 0 {
		t.Fatalf("again: %+v, %v", again, err)
	}
	if err := storekit.VerifySession(ctx, st, key); err != nil {
		t.Error(err)
	}
}

var (
	benchOnce  sync.Once
	benchPath  string
	benchItems int
)

// benchFile returns a generated 20 MB transcript, written once per run
// and removed by TestMain.
func benchFile(b *testing.B) (string, int) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "recall-claudecode-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchPath, benchItems = writeLarge(b, dir, 20<<20)
	})
	return benchPath, benchItems
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchPath != "" {
		os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}

// BenchmarkImport measures importing a 20 MB transcript (MB/s, items/s)
// against the baseline of reading the same file and decoding every line
// with encoding/json, in the same run.
func BenchmarkImport(b *testing.B) {
	path, items := benchFile(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	}
	b.Run("baseline=read+decode", func(b *testing.B) {
		for b.Loop() {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			importer.EachLine(data, func(l importer.Line) {
				var v any
				if err := json.Unmarshal(l.Bytes, &v); err != nil {
					b.Fatal(err)
				}
			})
		}
		report(b)
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadFile(path, ""); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	for _, kind := range []string{"memstore", "filestore"} {
		b.Run("import="+kind, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				var st recall.Store = memstore.New(memstore.Options{})
				if kind == "filestore" {
					b.StopTimer()
					fs, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					st = fs
					b.StartTimer()
				}
				sum, err := Import(ctx, st, path, importer.Options{})
				if err != nil || sum.Items != items {
					b.Fatal(err, sum)
				}
				st.Close()
			}
			report(b)
		})
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
