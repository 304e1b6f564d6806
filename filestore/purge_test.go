package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

var purgeKey = recall.Key{Project: "purge", Session: "s"}

// purgeFill writes a session with everything a purge must carry over: a
// user title, a pin, labels and usage before a compaction, items after
// it, and a line that does not decode (appended by hand) before it. items
// is the number of items before the compaction, each of size bytes.
func purgeFill(t testing.TB, s *filestore.Store, key recall.Key, items, size int) {
	t.Helper()
	ctx := context.Background()
	pad := strings.Repeat("x", size)
	for i := 0; i < items; i += 10 {
		var batch []recall.Entry
		for j := i; j < min(i+10, items); j++ {
			batch = append(batch, recall.ItemEntry(recall.Message("user", fmt.Sprintf("m%d %s", j, pad))))
		}
		batch[len(batch)-1].Usage = &recall.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}
		if _, err := s.Append(ctx, key, recall.Guard{}, batch...); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := recall.SetTitle(ctx, s, key, "before the cut", recall.TitleUser); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(logPath(t, s, key), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("{this line does not decode}\n")
			f.Close()
		}
	}
	if _, err := recall.SetPinned(ctx, s, key, true); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.SetLabels(ctx, s, key, "a", "b"); err != nil {
		t.Fatal(err)
	}
	live, _, err := s.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	kept := recall.PlainItems(live[len(live)-3:])
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: m.LastSeq, Replaced: len(live),
		Items: append([]recall.Item{recall.Message("user", "summary")}, kept...), Strategy: "summary"})
	if _, err := s.Append(ctx, key, recall.Guard{}, comp, recall.ItemEntry(recall.Message("user", "after"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, key, recall.Guard{}, recall.ItemEntry(recall.Message("assistant", "last"))); err != nil {
		t.Fatal(err)
	}
}

// purgeState is what a reader sees of a session.
type purgeState struct {
	meta    recall.Meta
	entries []recall.Entry
	items   []recall.LiveItem
}

func readPurgeState(t testing.TB, s recall.Store, key recall.Key) purgeState {
	t.Helper()
	ctx := context.Background()
	m, entries, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := s.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(metaFields(m)), fmt.Sprint(metaFields(sm)); a != b {
		t.Fatalf("Load's metadata %s, Stat's %s", a, b)
	}
	return purgeState{meta: m, entries: entries, items: items}
}

// metaFields is the metadata a purge must keep, LastSeq aside.
func metaFields(m recall.Meta) string {
	return fmt.Sprintf("%q/%s created=%s updated=%s items=%d archived=%t pinned=%t labels=%q usage=%+v corrupt=%d",
		m.Title, m.TitleSource, m.Created.Format(time.RFC3339Nano), m.Updated.Format(time.RFC3339Nano),
		m.ItemCount, m.Archived, m.Pinned, m.Labels, m.Usage, m.Corrupt)
}

func sameEntries(a, b []recall.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y recall.Entry) bool {
		return x.Seq == y.Seq && x.Kind == y.Kind && x.Time.Equal(y.Time) && bytes.Equal(x.Data, y.Data) &&
			(x.Usage == nil) == (y.Usage == nil) && (x.Usage == nil || *x.Usage == *y.Usage)
	})
}

func sameView(a, b []recall.LiveItem) bool {
	return slices.EqualFunc(a, b, func(x, y recall.LiveItem) bool { return x.Ref == y.Ref && bytes.Equal(x.Item, y.Item) })
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Purge(ctx, purgeKey); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("Purge of a missing session = %v, want ErrNotFound", err)
	}
	if _, err := s.Purge(ctx, recall.Key{Project: "..", Session: "x"}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Fatalf("Purge of a bad key = %v, want ErrInvalidKey", err)
	}
	purgeFill(t, s, purgeKey, 40, 20)
	before := readPurgeState(t, s, purgeKey)
	if before.meta.Corrupt != 1 {
		t.Fatalf("fill: %d corrupt lines, want 1", before.meta.Corrupt)
	}
	wantLog, dropped, err := recall.PurgeLog(purgeKey, before.entries)
	if err != nil || dropped == 0 {
		t.Fatalf("PurgeLog: %d dropped, %v", dropped, err)
	}

	res, err := s.Purge(ctx, purgeKey)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != dropped || res.From != wantLog[0].Seq || res.Restored != 2 { // a title entry and a meta entry
		t.Errorf("Purge = %+v, want %d dropped from %d, 2 restored", res, dropped, wantLog[0].Seq)
	}
	after := readPurgeState(t, s, purgeKey)
	if !sameEntries(after.entries, wantLog) {
		t.Errorf("purged log:\n%v\nwant:\n%v", after.entries, wantLog)
	}
	if a, b := metaFields(after.meta), metaFields(before.meta); a != b {
		t.Errorf("metadata after purge %s\nbefore %s", a, b)
	}
	if after.meta.LastSeq != before.meta.LastSeq+2 {
		t.Errorf("LastSeq %d, want %d + 2", after.meta.LastSeq, before.meta.LastSeq)
	}
	if !sameView(after.items, before.items) {
		t.Errorf("view changed by the purge")
	}
	raw, err := os.ReadFile(logPath(t, s, purgeKey))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("{this line does not decode}\n")) {
		t.Errorf("the undecodable line was not kept first:\n%.200s", raw)
	}
	wantOnlyCorrupt(t, recall.Verify(ctx, s), purgeKey, 1) // the line kept is still reported
	// A fresh store (no cached records) sees the same.
	if got := readPurgeState(t, openStore(t, s.Home()), purgeKey); !sameEntries(got.entries, after.entries) || metaFields(got.meta) != metaFields(after.meta) {
		t.Errorf("a new store reads the purged log differently")
	}
	// The log goes on from the purged state.
	seq, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", "more")))
	if err != nil || seq != after.meta.LastSeq+1 {
		t.Errorf("Append after purge = %d, %v; want seq %d", seq, err, after.meta.LastSeq+1)
	}
	if res, err := s.Purge(ctx, purgeKey); err != nil || res.Dropped != 0 {
		t.Errorf("second Purge = %+v, %v; want nothing dropped", res, err)
	}
	page, err := s.List(ctx, purgeKey.Project, recall.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != "before the cut" || !page.Sessions[0].Pinned {
		t.Errorf("List after purge = %+v, %v", page.Sessions, err)
	}
}

func TestPurgeLeavesLogWithoutCompaction(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntries(recall.Message("user", "a"), recall.Message("assistant", "b"))...); err != nil {
		t.Fatal(err)
	}
	path := logPath(t, s, purgeKey)
	st1, _ := os.Stat(path)
	res, err := s.Purge(ctx, purgeKey)
	if err != nil || res != (recall.PurgeResult{}) {
		t.Fatalf("Purge = %+v, %v; want nothing done", res, err)
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) || st1.ModTime() != st2.ModTime() {
		t.Errorf("a log with nothing to purge was rewritten")
	}
}

// compactWhole appends a compaction that keeps the whole view, retrying
// on ErrConflict the way the real compactor does (guarded by the LastSeq
// its view was read at), so a racing writer never slips an item past it.
func compactWhole(ctx context.Context, t *testing.T, s *filestore.Store) {
	t.Helper()
	for {
		live, last, err := s.Items(ctx, purgeKey, 0)
		if err != nil {
			t.Fatal(err)
		}
		comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last, Replaced: len(live), Items: recall.PlainItems(live)})
		_, err = s.Append(ctx, purgeKey, recall.IfLastSeq(last), comp)
		if err == nil {
			return
		}
		if !errors.Is(err, recall.ErrConflict) {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
}

// Appends racing purges lose nothing: every acknowledged item is in the
// view afterwards, in order. Compactions here keep the whole view, so the
// view must hold every item ever appended. The work is bounded: each
// compaction copies the whole view, so unbounded appenders would make the
// test quadratic on a slow machine.
func TestPurgeRacesAppends(t *testing.T) {
	const perWriter = 150
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", "first"))); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked = []string{"first"}
		wg    sync.WaitGroup
	)
	for w := range 3 {
		wg.Go(func() {
			for i := range perWriter {
				text := fmt.Sprintf("w%d-%d", w, i)
				mu.Lock() // so acked is in log order
				_, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", text)))
				if err == nil {
					acked = append(acked, text)
				}
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond) // let the purger in
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	racing, purged := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		compactWhole(ctx, t, s)
		res, err := s.Purge(ctx, purgeKey)
		if err != nil {
			t.Fatal(err)
		}
		purged += res.Dropped
		if running && res.Dropped > 0 {
			racing++
		}
	}
	live, _, err := s.Items(ctx, purgeKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range live {
		got = append(got, l.Item.Text())
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("view after racing purges has %d items, %d were acknowledged", len(got), len(acked))
	}
	if purged == 0 {
		t.Errorf("no purge dropped anything")
	}
	t.Logf("%d purges dropped entries while appends ran, %d entries dropped in all", racing, purged)
	if err := recall.Verify(ctx, s); err != nil {
		t.Error(err)
	}
}

// A writer in another process, blocked on the old log's lock or opening
// the new log as it is renamed into place, never loses an acknowledged
// batch to a purge. Compactions here keep the whole view, so the view
// must hold every item acknowledged, in order. The child appends a bounded
// number of items, so the test's cost does not grow with the machine's
// speed.
func TestPurgeRacesOtherProcess(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", "first"))); err != nil {
		t.Fatal(err)
	}
	cmd, r := startPurgeChild(t, home, "append")
	acks := make(chan []string, 1)
	childDone := make(chan struct{})
	go func() {
		var got []string
		defer func() { acks <- got }()
		defer close(childDone) // also when the child dies early
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "done" {
				return
			}
			if tag, ok := strings.CutPrefix(line, "ack "); ok {
				got = append(got, tag)
			}
		}
	}()
	racing, purged := 0, 0
	deadline := time.Now().Add(2 * time.Minute)
	for running := true; running; {
		select {
		case <-childDone:
			running = false
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the other process did not finish its %d appends in 2 minutes", purgeChildAppends)
		}
		compactWhole(ctx, t, s)
		res, err := s.Purge(ctx, purgeKey)
		if err != nil {
			t.Fatal(err)
		}
		purged += res.Dropped
		if running && res.Dropped > 0 {
			racing++
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	acked := <-acks
	live, _, err := openStore(t, home).Items(ctx, purgeKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range live[1:] {
		got = append(got, l.Item.Text())
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("the view holds %d of the child's items, %d were acknowledged", len(got), len(acked))
	}
	if purged == 0 || len(acked) != purgeChildAppends {
		t.Fatalf("%d entries purged, %d items appended of %d", purged, len(acked), purgeChildAppends)
	}
	t.Logf("%d purges dropped entries while the other process appended, %d entries dropped in all", racing, purged)
	if err := recall.Verify(ctx, openStore(t, home)); err != nil {
		t.Error(err)
	}
}

// The purge crash test runs this test binary again as a child that purges
// a session; the parent kills it with SIGKILL at a random moment and
// checks that the session is exactly as before the purge or exactly as
// after it.
const (
	envPurgeHome = "FILESTORE_PURGE_CHILD_HOME"
	envPurgeRole = "FILESTORE_PURGE_CHILD_ROLE" // "purge" (default) or "append"

	purgeChildAppends = 400 // items the "append" child writes
)

// TestPurgeChild is the child's side; it does nothing in a normal run.
func TestPurgeChild(t *testing.T) {
	home := os.Getenv(envPurgeHome)
	if home == "" {
		t.Skip("the child of TestPurgeSIGKILL and TestPurgeRacesOtherProcess")
	}
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	if os.Getenv(envPurgeRole) == "append" {
		// append one item at a time, acknowledging each, then wait for the kill
		for i := range purgeChildAppends {
			if _, err := s.Append(context.Background(), purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", fmt.Sprintf("c%d", i)))); err != nil {
				fmt.Println("append:", err)
				os.Exit(2)
			}
			fmt.Printf("ack c%d\n", i)
			time.Sleep(50 * time.Microsecond) // let the purger in
		}
		fmt.Println("done")
		time.Sleep(time.Hour)
	}
	if _, err := s.Purge(context.Background(), purgeKey); err != nil {
		fmt.Println("purge:", err)
		os.Exit(2)
	}
	fmt.Println("done")
	time.Sleep(time.Hour) // wait for the kill
}

func TestPurgeSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	ctx := context.Background()
	pristine := t.TempDir()
	s := openStore(t, pristine)
	purgeFill(t, s, purgeKey, 600, 800) // a 0.5 MB log, so the purge takes a while
	before := readPurgeState(t, s, purgeKey)
	wantLog, _, err := recall.PurgeLog(purgeKey, before.entries)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Calibrate: how long a child takes from "ready" to "done", so that
	// kills land before, during and after the purge.
	calib := copyHome(t, pristine)
	cmd, r := startPurgeChild(t, calib)
	start := time.Now()
	if line, err := r.ReadString('\n'); strings.TrimSpace(line) != "done" {
		t.Fatalf("calibration child said %q, %v", line, err)
	}
	took := time.Since(start)
	cmd.Process.Kill()
	cmd.Wait()
	after := readPurgeState(t, openStore(t, calib), purgeKey)
	if !sameEntries(after.entries, wantLog) {
		t.Fatal("calibration purge did not leave the planned log")
	}

	rounds := 30
	var nBefore, nAfter int
	for round := range rounds {
		home := copyHome(t, pristine)
		cmd, r := startPurgeChild(t, home)
		time.Sleep(time.Duration(rand.Int64N(int64(took)*5/4 + 1)))
		cmd.Process.Signal(syscall.SIGKILL)
		io.Copy(io.Discard, r)
		cmd.Wait()

		st := openStore(t, home)
		got := readPurgeState(t, st, purgeKey)
		switch {
		case sameEntries(got.entries, before.entries) && got.meta.LastSeq == before.meta.LastSeq:
			nBefore++
		case sameEntries(got.entries, wantLog) && got.meta.LastSeq == after.meta.LastSeq:
			nAfter++
		default:
			t.Fatalf("round %d: after SIGKILL the log has %d entries from seq %d: neither before (%d) nor after (%d) the purge",
				round, len(got.entries), got.entries[0].Seq, len(before.entries), len(wantLog))
		}
		if a, b := metaFields(got.meta), metaFields(before.meta); a != b {
			t.Fatalf("round %d: metadata %s, want %s", round, a, b)
		}
		if !sameView(got.items, before.items) {
			t.Fatalf("round %d: the view changed", round)
		}
		wantOnlyCorrupt(t, recall.Verify(ctx, st), purgeKey, 1) // purgeFill's undecodable line
		// the session goes on, whichever state it is in
		if _, err := st.Append(ctx, purgeKey, recall.Guard{}, recall.ItemEntry(recall.Message("user", "go on"))); err != nil {
			t.Fatalf("round %d: append: %v", round, err)
		}
		st.Close()
		os.RemoveAll(home)
	}
	t.Logf("purge took %v; %d kills left the log as before, %d as after", took, nBefore, nAfter)
}

// startPurgeChild starts a child purging the session in home (or, with
// role "append", appending to it) and returns once it is about to start,
// with its output after "ready".
func startPurgeChild(t *testing.T, home string, role ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPurgeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envPurgeHome+"="+home)
	if len(role) > 0 {
		cmd.Env = append(cmd.Env, envPurgeRole+"="+role[0])
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	return cmd, r
}

// copyHome copies a store's home to a new directory.
func copyHome(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
