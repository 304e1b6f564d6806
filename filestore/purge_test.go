package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
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
			batch = append(batch, recall.Message("user", fmt.Sprintf("m%d %s", j, pad)).Entry())
		}
		batch[len(batch)-1].Usage = &recall.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}
		if _, err := s.Append(ctx, key, recall.Guard{}, batch...); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := recall.NewSession(s, key).SetTitle(ctx, "before the cut", recall.TitleUser); err != nil {
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
	if _, err := recall.NewSession(s, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(s, key).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"a", "b"}, SetLabels: true}); err != nil {
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
	if _, err := s.Append(ctx, key, recall.Guard{}, comp, recall.Message("user", "after").Entry()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, key, recall.Guard{}, recall.Message("assistant", "last").Entry()); err != nil {
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
	wantLog, dropped, err := storekit.PurgeLog(purgeKey, before.entries)
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
	wantOnlyCorrupt(t, storekit.Verify(ctx, s), purgeKey, 1) // the line kept is still reported
	// A fresh store (no cached records) sees the same.
	if got := readPurgeState(t, openStore(t, s.Home()), purgeKey); !sameEntries(got.entries, after.entries) || metaFields(got.meta) != metaFields(after.meta) {
		t.Errorf("a new store reads the purged log differently")
	}
	// The log goes on from the purged state.
	seq, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.Message("user", "more").Entry())
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
	if err != nil || res != (storekit.PurgeResult{}) {
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
	if _, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.Message("user", "first").Entry()); err != nil {
		t.Fatal(err)
	}
	// Each writer waits, every few appends, for a purge round (a
	// compaction and a purge) to end since it last waited: the purges
	// race the appends however the goroutines are scheduled.
	const pace = 5
	turns := make([]chan struct{}, 3)
	for w := range turns {
		turns[w] = make(chan struct{}, 1)
	}
	quit := make(chan struct{})
	defer close(quit)
	var (
		mu    sync.Mutex
		acked = []string{"first"}
		wg    sync.WaitGroup
	)
	for w := range turns {
		wg.Go(func() {
			for i := range perWriter {
				text := fmt.Sprintf("w%d-%d", w, i)
				mu.Lock() // so acked is in log order
				_, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.Message("user", text).Entry())
				if err == nil {
					acked = append(acked, text)
				}
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if i%pace == pace-1 {
					select {
					case <-turns[w]:
					case <-quit:
						return
					}
				}
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
		for _, turn := range turns {
			select {
			case turn <- struct{}{}:
			default: // the writer has a turn it has not taken yet
			}
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
	if purged == 0 || racing == 0 {
		t.Errorf("no purge raced the appends: %d purges dropped entries while they ran, %d entries dropped in all", racing, purged)
	}
	t.Logf("%d purges dropped entries while appends ran, %d entries dropped in all", racing, purged)
	if err := storekit.Verify(ctx, s); err != nil {
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
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(ctx, purgeKey, recall.Guard{}, recall.Message("user", "first").Entry()); err != nil {
		t.Fatal(err)
	}
	// The child appends one item at a time, acknowledging each, and
	// every few items waits for a turn this process gives it after each
	// purge round: the purges race its appends however the processes are
	// scheduled.
	cmd := testkit.Command("purge-append", envHome+"="+home)
	turns, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := startPurgeChild(t, cmd)
	racing, purged := 0, 0
	deadline := time.Now().Add(2 * time.Minute)
	for running := true; running; {
		lines := c.Lines()
		running = !c.Exited() && lines[len(lines)-1] != "done"
		if time.Now().After(deadline) {
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
		turns.Write([]byte("\n")) // fails once the child is gone, which Kill reports
	}
	var acked []string
	for _, line := range c.Kill() {
		if tag, ok := strings.CutPrefix(line, "ack "); ok {
			acked = append(acked, tag)
		}
	}
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
	if err := storekit.Verify(ctx, openStore(t, home)); err != nil {
		t.Error(err)
	}
}

// The purge crash test runs this test binary again as a child that purges
// a session (role "purge"); the parent kills it with SIGKILL at a random
// moment and checks that the session is exactly as before the purge or
// exactly as after it. TestPurgeRacesOtherProcess's child (role
// "purge-append") appends instead.

const purgeChildAppends = 400 // items the "purge-append" child writes

// childPurge purges purgeKey in its home, saying "ready" before and "done"
// after, then waits for the kill.
func childPurge() error {
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := s.Purge(context.Background(), purgeKey); err != nil {
		return err
	}
	fmt.Println("done")
	select {} // wait for the kill
}

// childPurgeAppend appends purgeChildAppends items to purgeKey one at a
// time, printing "ack <item>" after each; every purgePace items it waits
// for a line on stdin: the parent's turn to purge. It says "done" at the
// end, and waits for the kill.
func childPurgeAppend() error {
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	turns := bufio.NewReader(os.Stdin)
	for i := range purgeChildAppends {
		if _, err := s.Append(context.Background(), purgeKey, recall.Guard{}, recall.Message("user", fmt.Sprintf("c%d", i)).Entry()); err != nil {
			return err
		}
		fmt.Printf("ack c%d\n", i)
		if i%purgePace == purgePace-1 {
			if _, err := turns.ReadString('\n'); err != nil {
				return fmt.Errorf("waiting for a purge: %w", err)
			}
		}
	}
	fmt.Println("done")
	select {} // wait for the kill
}

// purgePace is how many items the "purge-append" child appends between
// two purges of the parent's.
const purgePace = 20

func TestPurgeSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pristine := t.TempDir()
	s := openStore(t, pristine)
	purgeFill(t, s, purgeKey, 600, 800) // a 0.5 MB log, so the purge takes a while
	before := readPurgeState(t, s, purgeKey)
	wantLog, _, err := storekit.PurgeLog(purgeKey, before.entries)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Calibrate: how long a child takes from "ready" to "done", so that
	// kills land before, during and after the purge.
	calib := copyHome(t, pristine)
	c := startPurgeChild(t, testkit.Command("purge", envHome+"="+calib))
	start := time.Now()
	if !c.WaitLines(2, time.Minute) || c.Lines()[1] != "done" {
		t.Fatalf("calibration child said %q\n%s", c.Lines(), c.Stderr())
	}
	took := time.Since(start)
	c.Kill()
	after := readPurgeState(t, openStore(t, calib), purgeKey)
	if !sameEntries(after.entries, wantLog) {
		t.Fatal("calibration purge did not leave the planned log")
	}

	rounds := testkit.Size(6, 30)
	rng := testkit.Rand(t)
	var nBefore, nAfter int
	for round := range rounds {
		home := copyHome(t, pristine)
		c := startPurgeChild(t, testkit.Command("purge", envHome+"="+home))
		time.Sleep(time.Duration(rng.Int64N(int64(took)*5/4 + 1))) // a random moment to kill
		c.Kill()

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
		wantOnlyCorrupt(t, storekit.Verify(ctx, st), purgeKey, 1) // purgeFill's undecodable line
		// the session goes on, whichever state it is in
		if _, err := st.Append(ctx, purgeKey, recall.Guard{}, recall.Message("user", "go on").Entry()); err != nil {
			t.Fatalf("round %d: append: %v", round, err)
		}
		st.Close()
		os.RemoveAll(home)
	}
	t.Logf("purge took %v; %d kills left the log as before, %d as after", took, nBefore, nAfter)
}

// startPurgeChild starts cmd, a child of role "purge" or "purge-append",
// and returns once it says "ready".
func startPurgeChild(t *testing.T, cmd *exec.Cmd) *testkit.Child {
	t.Helper()
	c := testkit.Start(t, cmd)
	if !c.WaitLines(1, time.Minute) || c.Lines()[0] != "ready" {
		t.Fatalf("child said %q\n%s", c.Lines(), c.Stderr())
	}
	return c
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
