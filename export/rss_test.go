package export_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer/importtest"
	"github.com/recallkit/recall/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{"import": importChild})
}

// importChild is the child of TestImportJSONLMemory: it imports the
// export $RECALL_IMPORT_FILE into a file store at $RECALL_IMPORT_HOME and
// prints the results.
func importChild() error {
	st, err := filestore.Open(filestore.Options{Dir: os.Getenv("RECALL_IMPORT_HOME")})
	if err != nil {
		return err
	}
	f, err := os.Open(os.Getenv("RECALL_IMPORT_FILE"))
	if err != nil {
		return err
	}
	defer f.Close()
	var results []export.ImportResult
	err = export.ImportJSONL(context.Background(), st, f, export.ImportOptions{}, func(_ recall.Meta, r export.ImportResult) error {
		results = append(results, r)
		return nil
	})
	if err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return err
	}
	return st.Close()
}

// writeExport writes a JSONL export of one session of at least size
// bytes to w, a line at a time: its create entry, then items of a few kB
// (every 256th a long one of 256 kB). It returns the number of entries.
func writeExport(w io.Writer, size int64) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	output := quote(strings.Repeat("main.go:12: a line of tool output, with \"quotes\" and <tags>\n", 60))
	long := quote(strings.Repeat("ok   github.com/dev/big/pkg\t0.012s a long listing of a build\n", 4<<10))
	start := time.Date(2025, 10, 1, 9, 0, 0, 0, time.UTC)
	at := func(seq int) string { return start.Add(time.Duration(seq) * time.Second).Format(time.RFC3339Nano) }
	written, _ := fmt.Fprintf(bw, `{"recall_log":1,"key":{"project":"-home-dev-big","session":"big"},"meta":{}}`+"\n"+`{"seq":1,"kind":"create","time":"%s"}`+"\n", at(1))
	seq := 1
	for int64(written) < size {
		seq++
		out := output
		if seq%256 == 0 {
			out = long
		}
		n, err := fmt.Fprintf(bw, `{"seq":%d,"kind":"item","time":"%s","usage":{"input_tokens":12,"output_tokens":90,"total_tokens":102},"data":{"type":"function_call_output","call_id":"call_%d","output":%s}}`+"\n", seq, at(seq), seq, out)
		if err != nil {
			return seq, err
		}
		written += n
	}
	return seq, bw.Flush()
}

// TestImportJSONLMemory imports generated exports of 16 MB and 128 MB (of
// 1 GB in the long tier), each in a child process, and compares their
// peak resident memory (importtest.Bounded): ImportJSONL holds a line, a
// batch and a page, never the export or a session's log.
func TestImportJSONLMemory(t *testing.T) {
	bin := importtest.TestBinary(t)
	importtest.Bounded(t, 16<<20, 128<<20, func(size int64) int64 {
		dir := t.TempDir()
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "export.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := writeExport(f, size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, peak := importtest.Run(t, testkit.Command("import", "RECALL_IMPORT_FILE="+path, "RECALL_IMPORT_HOME="+filepath.Join(dir, "home")), bin)
		var res []export.ImportResult
		if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 || res[0].Entries != entries || res[0].Status != export.StatusNew {
			t.Fatalf("the import of %d MB: %s, %v", size>>20, out, err)
		}
		t.Logf("%d MB (%d entries): peak RSS %.1f MB, %.1f s", size>>20, entries, float64(peak)/(1<<20), time.Since(start).Seconds())
		return peak
	})
}
