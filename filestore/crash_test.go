package filestore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// The crash tests run this test binary again as a child process that
// writes to a store (testkit.Main plays the child's role); the parent
// kills it with SIGKILL or waits for it, then checks the store. The
// child's store and argument come from the environment.
const (
	envHome = "FILESTORE_TEST_HOME"
	envArg  = "FILESTORE_TEST_ARG"
)

var crashKey = recall.Key{Project: "crash", Session: "s"}

// roundsPerLog is how many kills one log of TestCrashSIGKILL takes before
// the test moves to a new one, so the logs it checks stay small.
const roundsPerLog = 10

// appenderKey is the session the appender of round writes to.
func appenderKey(round int) recall.Key {
	return recall.Key{Project: "crash", Session: fmt.Sprintf("g%d", round/roundsPerLog)}
}

// childRoles are the roles a child of this package's tests plays; the
// files with roles of their own for one system add them in init.
var childRoles = map[string]func() error{
	"appender":         childAppender,
	"writer":           childWriter,
	"searcher":         childSearcher,
	"durable-appender": childDurableAppender,
	"changer":          childChanger,
	"purge":            childPurge,
	"purge-append":     childPurgeAppend,
	"race":             childRace,
	"soak":             childSoak,
}

func TestMain(m *testing.M) {
	testkit.Main(m, childRoles)
}

// child starts the test binary as a child playing role on the store at
// home, with arg in its environment.
func child(t *testing.T, role, home, arg string) *testkit.Child {
	t.Helper()
	return testkit.Start(t, testkit.Command(role, envHome+"="+home, envArg+"="+arg))
}

func childStore(sync filestore.SyncPolicy) (*filestore.Store, error) {
	return filestore.Open(filestore.Options{Dir: os.Getenv(envHome), Sync: sync})
}

// lastAck returns the highest batch of the "ack <batch>" lines, -1 for
// none.
func lastAck(lines []string) int {
	last := -1
	for _, l := range lines {
		if b, err := strconv.Atoi(strings.TrimPrefix(l, "ack ")); err == nil {
			last = max(last, b)
		}
	}
	return last
}

// childAppender appends batches to appenderKey(round) forever and prints
// "ack <batch>" once Append has returned. Items are tagged
// "<round>-b<batch>-i<index>of<n>", and some are large, so that a kill may
// land inside a write. Odd rounds use SyncNever: without fsyncs the child
// spends its time in write, where SIGKILL then often cuts a batch (what
// SIGKILL cannot lose is what the kernel accepted, so acknowledged batches
// must survive either way).
func childAppender() error {
	round := os.Getenv(envArg)
	var roundNo int
	fmt.Sscanf(round, "r%d", &roundNo)
	s, err := childStore(filestore.SyncPolicy(roundNo % 2))
	if err != nil {
		return err
	}
	key := appenderKey(roundNo)
	rng := testkit.ChildRand(uint64(roundNo))
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		n := 1 + rng.IntN(4)
		items := make([]recall.Item, n)
		for i := range items {
			pad := rng.IntN(2000)
			if rng.IntN(12) == 0 {
				pad = 32_000 + rng.IntN(64_000) // many pages: a long write
			}
			items[i] = recall.Message("user", fmt.Sprintf("%s-b%d-i%dof%d %s", round, b, i, n, strings.Repeat("x", pad)))
		}
		if err := recall.NewSession(s, key).AddItems(context.Background(), items...); err != nil {
			return err
		}
		fmt.Fprintf(out, "ack %d\n", b)
		out.Flush()
	}
}

// childWriter appends envArg's count of two-item batches tagged for writer
// w, listing now and then so the index is shared too.
func childWriter() error {
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	var w, batches int
	fmt.Sscanf(os.Getenv(envArg), "%d %d", &w, &batches)
	ctx := context.Background()
	for b := range batches {
		_, err := s.Append(ctx, crashKey, recall.Guard{},
			recall.Message("user", tag(w, b, 0)).Entry(),
			recall.Message("assistant", tag(w, b, 1)).Entry())
		if err == nil && b%25 == 0 {
			_, err = s.List(ctx, crashKey.Project, recall.ListOptions{})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// itemTag returns the tag at the start of an item's text, found in its
// raw bytes: decoding every (large) item would make the test slow.
func itemTag(data []byte) string {
	_, rest, ok := strings.Cut(string(data[:min(len(data), 200)]), `"text":"`)
	if !ok {
		return ""
	}
	tag, _, _ := strings.Cut(rest, " ")
	tag, _, _ = strings.Cut(tag, `"`)
	return tag
}

// batchTag parses a tag written by childAppender.
func batchTag(head string) (round string, batch, index, n int, ok bool) {
	parts := strings.Split(head, "-")
	if len(parts) != 3 {
		return "", 0, 0, 0, false
	}
	batch, err1 := strconv.Atoi(strings.TrimPrefix(parts[1], "b"))
	idx, cnt, _ := strings.Cut(strings.TrimPrefix(parts[2], "i"), "of")
	index, err2 := strconv.Atoi(idx)
	n, err3 := strconv.Atoi(cnt)
	return parts[0], batch, index, n, err1 == nil && err2 == nil && err3 == nil
}

// TestCrashSIGKILL kills an appending child at random moments, again and
// again, and checks after every kill that every batch the child saw
// acknowledged is in the log, that no batch is there in part, that the log
// verifies, and that a further append is clean.
func TestCrashSIGKILL(t *testing.T) {
	t.Parallel()
	kills := testkit.Size(8, 50)
	ctx := context.Background()
	home := t.TempDir()
	rng := testkit.Rand(t)
	acked := map[string]int{} // round -> highest acknowledged batch, -1 for none
	var withTorn int
	for round := range kills {
		name := fmt.Sprintf("r%d", round)
		c := child(t, "appender", home, name)
		// Kill after a random number of acknowledged batches (zero: during
		// start-up or the first write), a random moment later.
		if wait := rng.IntN(8); !c.WaitLines(wait, time.Minute) {
			t.Fatalf("round %d: the child did not acknowledge %d batches: %q\n%s", round, wait, c.Lines(), c.Stderr())
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // a random moment to kill
		last := lastAck(c.Kill())
		if round%roundsPerLog == 0 {
			clear(acked) // a new log
		}
		acked[name] = last
		key := appenderKey(round)

		side, _ := filepath.Glob(filepath.Join(home, "projects", "crash", "*#torn-*"))
		s := openStore(t, home)
		checkCrashLog(t, s, key, acked, round)
		// a further append is clean: it lands whole, right after the rest
		m, err := s.Stat(ctx, key)
		if err != nil && round%roundsPerLog > 0 {
			t.Fatalf("round %d: %v", round, err)
		}
		seq, err := s.Append(ctx, key, recall.Guard{}, recall.Message("user", "parent-"+name).Entry())
		if err != nil || seq != m.LastSeq+1 {
			t.Fatalf("round %d: Append after the kill = %d, %v; want %d", round, seq, err, m.LastSeq+1)
		}
		if err := storekit.VerifySession(ctx, s, key); err != nil {
			t.Fatalf("round %d: after the parent's append: %v", round, err)
		}
		if after, _ := filepath.Glob(filepath.Join(home, "projects", "crash", "*#torn-*")); len(after) > len(side) {
			withTorn++
		}
	}
	t.Logf("%d kills; %d left a torn tail that the next writer set aside", kills, withTorn)
}

// checkCrashLog checks the log after a kill in round: every acknowledged
// batch present, every batch present whole, batches in order.
func checkCrashLog(t *testing.T, s recall.Store, key recall.Key, acked map[string]int, round int) {
	t.Helper()
	ctx := context.Background()
	m, es, err := s.Load(ctx, key)
	if err != nil {
		if acked[fmt.Sprintf("r%d", round)] < 0 && round%roundsPerLog == 0 {
			return // killed before the first batch reached the disk
		}
		t.Fatalf("round %d: Load: %v", round, err)
	}
	if m.Corrupt != 0 {
		t.Errorf("round %d: %d corrupt lines", round, m.Corrupt)
	}
	seen := map[string]int{} // round -> highest batch seen
	for i := 0; i < len(es); {
		text := itemTag(es[i].Data)
		if strings.HasPrefix(text, "parent-") {
			i++
			continue
		}
		r, b, idx, n, ok := batchTag(text)
		if !ok || idx != 0 {
			t.Fatalf("round %d: entry %d (%.40q) does not start a batch", round, es[i].Seq, text)
		}
		if prev, ok := seen[r]; ok && b != prev+1 || !ok && b != 0 {
			t.Fatalf("round %d: batch %s-b%d follows b%d", round, r, b, prev)
		}
		seen[r] = b
		for j := range n {
			if i+j >= len(es) {
				t.Fatalf("round %d: batch %s-b%d cut after %d of %d items", round, r, b, j, n)
			}
			r2, b2, idx2, _, ok := batchTag(itemTag(es[i+j].Data))
			if !ok || r2 != r || b2 != b || idx2 != j {
				t.Fatalf("round %d: batch %s-b%d interrupted at item %d", round, r, b, j)
			}
		}
		i += n
	}
	for r, last := range acked {
		if got, ok := seen[r]; last >= 0 && (!ok || got < last) {
			t.Fatalf("round %d: batch %s-b%d was acknowledged, the log ends at b%d", round, r, last, got)
		}
	}
}

// TestMultiProcessWriters runs several processes appending to one session
// at once: nothing may be lost or interleaved, and seqs stay dense.
func TestMultiProcessWriters(t *testing.T) {
	t.Parallel()
	writers, batches := 4, testkit.Size(25, 100)
	home := t.TempDir()
	var children []*testkit.Child
	for w := range writers {
		children = append(children, child(t, "writer", home, fmt.Sprintf("%d %d", w, batches)))
	}
	for i, c := range children {
		if _, err := c.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	s := openStore(t, home)
	checkBatches(t, s, crashKey, writers, batches)
	page, err := s.List(context.Background(), crashKey.Project, recall.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ItemCount != 2*writers*batches || page.Sessions[0].LastSeq != int64(2*writers*batches) {
		t.Fatalf("List = %+v, %v", page.Sessions, err)
	}
}
