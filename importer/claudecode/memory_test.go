package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
	"github.com/recallkit/recall/internal/testkit"
)

// importChild is the child process of TestImportMemory: it imports the
// transcript $RECALL_IMPORT_FILE into a file store at $RECALL_IMPORT_HOME
// and prints the summary.
func importChild() error {
	st, err := filestore.Open(filestore.Options{Dir: os.Getenv("RECALL_IMPORT_HOME")})
	if err != nil {
		return err
	}
	sum, err := Import(context.Background(), st, os.Getenv("RECALL_IMPORT_FILE"), importer.Options{})
	if err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(sum); err != nil {
		return err
	}
	return st.Close()
}

// TestImportMemory imports generated transcripts of 32 MB and 256 MB (of
// 1 GB in the long tier), each in a child process, and compares the
// children's peak resident memory (importtest.Bounded): an import holds a
// line and a batch, never the transcript.
func TestImportMemory(t *testing.T) {
	bin := importtest.TestBinary(t)
	importtest.Bounded(t, 32<<20, 256<<20, func(size int64) int64 {
		dir := t.TempDir()
		defer os.RemoveAll(dir) // a gigabyte, and its copy in the store
		path, items := writeLarge(t, dir, size)
		start := time.Now()
		out, peak := importtest.Run(t, testkit.Command("import", "RECALL_IMPORT_FILE="+path, "RECALL_IMPORT_HOME="+filepath.Join(dir, "home")), bin)
		took := time.Since(start)
		var sum importer.Summary
		if err := json.Unmarshal(out, &sum); err != nil || sum.Items != items || sum.Sessions != (importer.Counts{New: 1}) || len(sum.Failures) > 0 {
			t.Fatalf("the import of %d MB: %+v, %v", size>>20, sum, err)
		}
		t.Logf("%d MB (%d items): peak RSS %.1f MB, %.1f s, %.1f MB/s", size>>20, items, float64(peak)/(1<<20), took.Seconds(), float64(size)/(1<<20)/took.Seconds())
		return peak
	})
}
