package claudecode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

const largeSID = "7d9e1f20-3a4b-4c5d-8e6f-708192a3b4c5"

// writeLarge writes a Claude Code transcript of about size bytes to dir
// and returns its path and the number of items it maps to (see
// generate).
func writeLarge(t testing.TB, dir string, size int64) (string, int) {
	t.Helper()
	path := filepath.Join(dir, largeSID+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	items, err := generate(f, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, items
}

// generate writes a Claude Code transcript of at least size bytes to w, a
// round at a time, and returns the number of items it maps to. Each round
// is a user prompt, an assistant text and tool_use (two lines of one
// message, sharing its usage), a tool result of a few kB (every 256th
// round, a long one of 256 kB), and a file-history-snapshot line. The
// lines are put together from pieces encoded once, so that a gigabyte is
// written in seconds.
func generate(w io.Writer, size int64) (int, error) {
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	output := quote(strings.Repeat("main.go:12: a line of tool output, with \"quotes\" and <tags>\n", 60))
	long := quote(strings.Repeat("ok   github.com/dev/big/pkg\t0.012s a long listing of a build\n", 4<<10))
	context := strings.Repeat("context ", 40)
	const head = `"parentUuid":null,"isSidechain":false,"cwd":"/home/dev/big","sessionId":"` + largeSID + `","version":"2.0.14","gitBranch":"main"`
	const usage = `"usage":{"input_tokens":12,"cache_read_input_tokens":4000,"output_tokens":90}`
	start := time.Date(2025, 10, 1, 9, 0, 0, 0, time.UTC)
	bw := bufio.NewWriterSize(w, 1<<20)
	var b []byte
	var written int64
	items := 0
	for round := 0; written < size; round++ {
		at := func(k int) string { return start.Add(time.Duration(round*5+k) * time.Second).Format(time.RFC3339Nano) }
		out := output
		if round%256 == 255 {
			out = long
		}
		b = fmt.Appendf(b[:0], `{"type":"user","uuid":"u%d-0",%s,"timestamp":"%s","message":{"role":"user","content":"Round %d: look at the build output and fix what fails. %s"}}`+"\n",
			round, head, at(0), round, context)
		b = fmt.Appendf(b, `{"type":"assistant","uuid":"u%d-1",%s,"timestamp":"%s","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I will run the build first."}],%s}}`+"\n",
			round, head, at(1), round, usage)
		b = fmt.Appendf(b, `{"type":"assistant","uuid":"u%d-2",%s,"timestamp":"%s","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"go build ./...","description":"Build"}}],%s}}`+"\n",
			round, head, at(2), round, round, usage)
		b = fmt.Appendf(b, `{"type":"user","uuid":"u%d-3",%s,"timestamp":"%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s,"is_error":%v}]}}`+"\n",
			round, head, at(3), round, out, round%7 == 0)
		b = fmt.Appendf(b, `{"type":"file-history-snapshot","messageId":"msg_%d","snapshot":{"trackedFileBackups":{}}}`+"\n", round)
		if _, err := bw.Write(b); err != nil {
			return items, err
		}
		written += int64(len(b))
		items += 4
	}
	return items, bw.Flush()
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
	if os.Getenv(testkit.RoleEnv) != "" {
		testkit.Main(m, map[string]func() error{"import": importChild})
	}
	code := m.Run()
	if benchPath != "" {
		os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}

// BenchmarkImport measures importing a 20 MB transcript (MB/s, items/s)
// against the baseline of reading the same file and decoding every line
// with encoding/json, in the same run (see importtest.Benchmark).
func BenchmarkImport(b *testing.B) {
	path, items := benchFile(b)
	importtest.Benchmark(b, path, items, func(ctx context.Context, st recall.Store, opts importer.Options) (importer.Summary, error) {
		return Import(ctx, st, path, opts)
	})
}
