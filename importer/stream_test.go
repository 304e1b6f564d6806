package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// entriesOf returns key's log without seqs, for comparing two imports.
func entriesOf(t *testing.T, st recall.Store, key recall.Key) []string {
	t.Helper()
	_, entries, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprintf("%s %s %s %v", e.Kind, e.Time.Format(time.RFC3339), e.Data, e.Usage))
	}
	return out
}

// TestHeldRecordsReadAgain: a transcript that names its session's folder
// only after more than half a batch of lines is read again, first to learn
// it; the records come out as from a transcript that names it at once,
// and what the first pass wrote of another record stays, once.
func TestHeldRecordsReadAgain(t *testing.T) {
	dir := t.TempDir()
	var passes atomic.Int32
	counting := func(p string) Mapper { passes.Add(1); return newTestMapper(p) }

	late := items(holdRecords + 20)
	for i := range late[:holdRecords+10] {
		late[i].Cwd = ""
	}
	early := items(holdRecords + 20)
	st, ref := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	writeLines(t, filepath.Join(dir, "late.log"), false, late...)
	writeLines(t, filepath.Join(dir, "early.log"), false, early...)
	sum, err := Run(context.Background(), st, "test", []string{filepath.Join(dir, "late.log")}, counting, Options{})
	if err != nil || sum.Sessions != (Counts{New: 1}) || sum.Items != len(late) || passes.Load() != 3 {
		t.Fatalf("%+v, %v, %d passes", sum, err, passes.Load())
	}
	want := run(t, ref, filepath.Join(dir, "early.log"), Options{})
	if sum.Entries != want.Entries || !reflect.DeepEqual(entriesOf(t, st, testKey)[:len(late)], entriesOf(t, ref, testKey)[:len(late)]) {
		t.Errorf("held then written: %+v\nwant %+v", sum, want)
	}

	// The session is written a batch at a time while a subagent's records,
	// without a time, are held until the first pass gives up.
	mixed := items(batchRecords + 5)
	for i := range holdRecords {
		mixed = append(mixed, testLine{Agent: "a", Text: fmt.Sprintf("sub %d", i)})
	}
	path := filepath.Join(dir, "mixed.log")
	writeLines(t, path, false, mixed...)
	passes.Store(0)
	st = memstore.New(memstore.Options{})
	sum, err = Run(context.Background(), st, "test", []string{path}, counting, Options{})
	if err != nil || sum.Sessions != (Counts{New: 1}) || sum.Subagents != (Counts{New: 1}) || sum.Items != len(mixed) || passes.Load() != 3 {
		t.Fatalf("%+v, %v, %d passes", sum, err, passes.Load())
	}
	main, _ := st.Stat(context.Background(), testKey)
	sub, _ := st.Stat(context.Background(), recall.Key{Project: "-x", Session: "s1", Subpath: "subagents/a"})
	if main.ItemCount != batchRecords+5 || sub.ItemCount != holdRecords || sum.Entries != int(main.LastSeq+sub.LastSeq) {
		t.Errorf("session %d items, subagent %d, %d entries counted of %d", main.ItemCount, sub.ItemCount, sum.Entries, main.LastSeq+sub.LastSeq)
	}
	if mtime := FileTime(path).UTC().Truncate(time.Microsecond); !sub.Created.Equal(mtime) {
		t.Errorf("a subagent record without times is created at %v, not the file's time %v", sub.Created, mtime)
	}
	if err := storekit.Verify(context.Background(), st); err != nil {
		t.Error(err)
	}
}

// TestResumeReadsThePrefixAgain: a record that becomes ready after the
// offset it consumed (here: no line has a time until then) checks the
// bytes before by reading them again.
func TestResumeReadsThePrefixAgain(t *testing.T) {
	dir := t.TempDir()
	untimed := items(3)
	for i := range untimed {
		untimed[i].Time = 0
	}
	timed := testLine{Session: "s1", Text: "timed", Time: 5000}
	for _, rewrite := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("s-%v.log", rewrite))
		st := memstore.New(memstore.Options{})
		data := writeLines(t, path, false, untimed...)
		run(t, st, path, Options{Project: "p"})
		if rewrite {
			os.WriteFile(path, append([]byte(" "), data[1:]...), 0o644) // same size, the first byte changed
		}
		writeLines(t, path, true, untimed[0], timed)
		sum := run(t, st, path, Options{Project: "p"})
		switch {
		case rewrite && (len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, fmt.Sprintf("first %d bytes differ", len(data)))):
			t.Errorf("a rewritten prefix: %+v", sum)
		case !rewrite && (sum.Sessions != (Counts{Updated: 1}) || sum.Items != 2):
			t.Errorf("grown: %+v", sum)
		}
	}
}

// TestTruncatedTranscript: a transcript shorter than what was imported of
// it is reported, and nothing is written.
func TestTruncatedTranscript(t *testing.T) {
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	lines := items(3)
	writeLines(t, path, false, lines...)
	run(t, st, path, Options{})
	before, _ := st.Stat(context.Background(), testKey)
	writeLines(t, path, false, lines[:2]...)
	sum := run(t, st, path, Options{})
	if len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, "bytes were imported, the transcript has") {
		t.Errorf("truncated: %+v", sum)
	}
	if after, _ := st.Stat(context.Background(), testKey); after.LastSeq != before.LastSeq {
		t.Error("a truncated transcript wrote")
	}
}

// TestConcurrentImports: imports of one transcript side by side, into
// one store, write each line once: the one that loses a race reads the
// record again and writes what the other did not.
func TestConcurrentImports(t *testing.T) {
	lines := items(batchRecords*3 + 7)
	for _, kind := range []string{"memstore", "filestore"} {
		t.Run(kind, func(t *testing.T) {
			var st recall.Store = memstore.New(memstore.Options{})
			if kind == "filestore" {
				fs, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever})
				if err != nil {
					t.Fatal(err)
				}
				st = fs
			}
			defer st.Close()
			path := filepath.Join(t.TempDir(), "s1.log")
			writeLines(t, path, false, lines...)
			var wg sync.WaitGroup
			sums := make([]Summary, 3)
			for i := range sums {
				wg.Go(func() { sums[i] = run(t, st, path, Options{}) })
			}
			wg.Wait()
			items := 0
			for _, s := range sums {
				if len(s.Failures) > 0 {
					t.Errorf("failures: %+v", s.Failures)
				}
				items += s.Items
			}
			texts, _ := logOf(t, st, testKey)
			if items != len(lines) || len(texts) != len(lines) {
				t.Fatalf("%d items written (counted %d), want %d", len(texts), items, len(lines))
			}
			for i, s := range texts {
				if s != lines[i].Text {
					t.Fatalf("item %d is %q, want %q", i, s, lines[i].Text)
				}
			}
			if err := storekit.Verify(context.Background(), st); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDryRunOfAnUpdate: a dry run over a record that grew reports it
// updated, with what a real run then writes.
func TestDryRunOfAnUpdate(t *testing.T) {
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	lines := items(batchRecords + 3)
	writeLines(t, path, false, lines[:5]...)
	run(t, st, path, Options{})
	writeLines(t, path, false, lines...)
	before, _ := st.Stat(context.Background(), testKey)
	dry := run(t, st, path, Options{DryRun: true})
	if after, _ := st.Stat(context.Background(), testKey); after.LastSeq != before.LastSeq {
		t.Fatal("a dry run wrote")
	}
	real := run(t, st, path, Options{})
	if dry.Sessions != (Counts{Updated: 1}) || dry.Sessions != real.Sessions || dry.Entries != real.Entries || dry.Items != len(lines)-5 {
		t.Errorf("dry run %+v\nreal run %+v", dry, real)
	}
}

// TestFilesWithoutRecords: titles or bookkeeping alone make no session,
// a transcript that names no session fails, and so does one with a
// conversation and no working directory.
func TestFilesWithoutRecords(t *testing.T) {
	dir := t.TempDir()
	st := memstore.New(memstore.Options{})
	empty := filepath.Join(dir, "empty.log")
	writeLines(t, empty, false, testLine{Session: "s1", Cwd: "/x"}, testLine{Session: "s1"})
	nameless := filepath.Join(dir, "nameless.log")
	writeLines(t, nameless, false, testLine{Text: "hi", Time: 1})
	homeless := filepath.Join(dir, "homeless.log")
	writeLines(t, homeless, false, testLine{Session: "s2", Text: "hi", Time: 1})
	sum, err := Run(context.Background(), st, "test", []string{empty, nameless, homeless}, newTestMapper, Options{})
	if err != nil || sum.Read != 1 || sum.Empty != 1 || len(sum.Failures) != 2 || sum.Skipped["empty"] != 2 {
		t.Fatalf("%+v, %v", sum, err)
	}
	if !strings.Contains(sum.Failures[0].Err, "nameless.log: no session named") ||
		!strings.Contains(sum.Failures[1].Err, "homeless.log: importer: the transcript names no working directory") {
		t.Errorf("failures %+v", sum.Failures)
	}
	if page, _ := st.List(context.Background(), "", recall.ListOptions{}); len(page.Sessions) != 0 {
		t.Errorf("sessions written: %+v", page.Sessions)
	}
}
