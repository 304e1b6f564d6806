package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// The tests below race this process against another one on the same
// store: they run this test binary again as a child (role "race", its
// part in envArg) that removes, appends or compares-and-swaps in a loop
// until its standard input is closed, then prints "done <count>" and
// exits. The appender prints "ack" after each batch.

// ghostKeys are the sessions TestGhostAcrossProcesses races on.
var ghostKeys = func() []recall.Key {
	keys := make([]recall.Key, 6)
	for i := range keys {
		keys[i] = recall.Key{Project: "ghost", Session: fmt.Sprintf("g%d", i)}
	}
	return keys
}()

var (
	verifyKey = recall.Key{Project: "verify", Session: "live"}
	casKey    = recall.Key{Project: "cas", Session: "counter"}
)

// childRace is the child's side of the cross-process race tests.
func childRace() error {
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	ctx := context.Background()
	n := 0
	fmt.Println("ready")
	switch role := os.Getenv(envArg); role {
	case "remove":
		// what `recall rm` does, over and over: n counts removals
		for i := 0; !stopped(); i++ {
			err := s.Remove(ctx, ghostKeys[i%len(ghostKeys)])
			if err == nil {
				n++
			} else if !errors.Is(err, recall.ErrNotFound) {
				return fmt.Errorf("remove: %w", err)
			}
			if i%len(ghostKeys) == 0 {
				// pace the removals, so the other side recreates some
				// sessions between them (the test does not rely on it)
				time.Sleep(100 * time.Microsecond)
			}
		}
	case "append":
		// a fast chat: a batch of one to three items every 20ms (an
		// agent's turn takes seconds), a pop and a title now and then;
		// the pace is the load modelled, the parent waits for acks
		for b := 0; !stopped(); b++ {
			time.Sleep(20 * time.Millisecond)
			var batch []recall.Entry
			for i := range 1 + b%3 {
				batch = append(batch, recall.Message("user", fmt.Sprintf("b%d-%d", b, i)).Entry())
			}
			if _, err := s.Append(ctx, verifyKey, recall.Guard{}, batch...); err != nil {
				return fmt.Errorf("append: %w", err)
			}
			switch b % 7 {
			case 3:
				if _, err := s.Pop(ctx, verifyKey); err != nil {
					return fmt.Errorf("pop: %w", err)
				}
			case 5:
				if _, err := recall.NewSession(s, verifyKey).SetTitle(ctx, fmt.Sprintf("title %d", b), recall.TitleAuto); err != nil {
					return fmt.Errorf("title: %w", err)
				}
			}
			n++
			fmt.Println("ack")
		}
	case "cas":
		// compare-and-swap increments: n counts the successful ones
		for !stopped() {
			ok, err := casIncrement(ctx, s, "child")
			if err != nil {
				return fmt.Errorf("cas: %w", err)
			}
			if ok {
				n++
			}
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	fmt.Printf("done %d\n", n)
	return nil
}

// casIncrement reads casKey's LastSeq and appends one item guarded by it,
// naming the seq the item must land at. ok is false when another writer
// came first (ErrConflict). A guard that is not atomic with the write lets
// an append land after another writer's: its seq then differs from the
// one its guard promised, which is an error here.
func casIncrement(ctx context.Context, s recall.Store, who string) (ok bool, err error) {
	m, err := s.Stat(ctx, casKey)
	if err != nil {
		return false, err
	}
	want := m.LastSeq + 1
	seq, err := s.Append(ctx, casKey, recall.IfLastSeq(m.LastSeq), recall.Message("user", fmt.Sprintf("%s@%d", who, want)).Entry())
	if errors.Is(err, recall.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if seq != want {
		return false, fmt.Errorf("an append guarded by LastSeq %d landed at seq %d", want-1, seq)
	}
	return true, nil
}

// raceChild is a running child of the race tests.
type raceChild struct {
	*testkit.Child
	stdin io.WriteCloser
}

// startRaceChild starts a child with role on the store at home and returns
// once it is running.
func startRaceChild(t *testing.T, home, role string) *raceChild {
	t.Helper()
	cmd := testkit.Command("race", envHome+"="+home, envArg+"="+role)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &raceChild{Child: testkit.Start(t, cmd), stdin: stdin}
	if !c.WaitLines(1, time.Minute) || c.Lines()[0] != "ready" {
		t.Fatalf("the %s child said %q\n%s", role, c.Lines(), c.Stderr())
	}
	return c
}

// stop asks the child to finish and returns the count it reports.
func (c *raceChild) stop(t *testing.T) int {
	t.Helper()
	c.stdin.Close()
	lines, err := c.Wait()
	var line string
	if len(lines) > 0 {
		line = lines[len(lines)-1]
	}
	n, perr := strconv.Atoi(strings.TrimPrefix(line, "done "))
	if err != nil || !strings.HasPrefix(line, "done ") || perr != nil {
		t.Fatalf("the child ended with %v, saying %q", err, line)
	}
	return n
}

// raceFor is how long each cross-process race runs at least in the long
// tier, a quarter of that in the fast tier (-short): long enough for
// hundreds of collisions. Each runs on until the race it needs happened.
func raceFor() time.Duration {
	return time.Duration(testkit.Size(int(time.Second/2), int(2*time.Second)))
}

// raceLimit is how long a race runs at most waiting for what it needs.
const raceLimit = time.Minute

// A `recall rm` in another process, racing every lifecycle helper, never
// leaves a ghost: a session that exists holding only title, meta or clear
// entries, brought back after its removal. The helpers append with
// IfExists, which the file store checks under the log's file lock.
func TestGhostAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	child := startRaceChild(t, home, "remove")

	helpers := []struct {
		name string
		do   func(recall.Key) error
	}{
		{"SetTitle", func(k recall.Key) error {
			_, err := recall.NewSession(s, k).SetTitle(ctx, "a title", recall.TitleUser)
			return err
		}},
		{"SetPinned", func(k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
			return err
		}},
		{"SetArchived", func(k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)})
			return err
		}},
		{"SetLabels", func(k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"x", "y"}, SetLabels: true})
			return err
		}},
		{"Clear", func(k recall.Key) error { return recall.NewSession(s, k).Clear(ctx) }},
		{"SetMetadata", func(k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})
			return err
		}},
		{"MergeMetadata", func(k recall.Key) error {
			v := "w"
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"k2": &v}})
			return err
		}},
	}
	// noGhost checks that k, if it exists, starts with the item that
	// created it.
	noGhost := func(k recall.Key, when string) {
		t.Helper()
		_, es, err := s.Load(ctx, k)
		if errors.Is(err, recall.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("%s: Load %s: %v", when, k, err)
		}
		if len(es) == 0 || es[0].Kind != recall.KindItem {
			kinds := make([]recall.Kind, len(es))
			for i, e := range es {
				kinds[i] = e.Kind
			}
			t.Fatalf("%s: %s is a ghost: a session brought back holding %v", when, k, kinds)
		}
	}
	var calls, missed, rounds int
	// Race for raceFor, and on until a helper found its session removed
	// (so the other process removed some).
	start := time.Now()
	for ; time.Since(start) < raceFor() || missed == 0 && time.Since(start) < raceLimit; rounds++ {
		for _, k := range ghostKeys {
			// (re)create the session the way a chat does
			if _, err := s.Append(ctx, k, recall.Guard{}, recall.Message("user", "hello").Entry()); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range helpers {
			for _, k := range ghostKeys {
				calls++
				err := h.do(k)
				if errors.Is(err, recall.ErrNotFound) {
					missed++
				} else if err != nil {
					t.Fatalf("%s(%s): %v", h.name, k, err)
				}
				noGhost(k, h.name)
			}
		}
	}
	removed := child.stop(t)
	for _, k := range ghostKeys {
		noGhost(k, "at the end")
	}
	// Clear hides ErrNotFound; the others report it.
	t.Logf("%d rounds: %d helper calls, %d found their session removed; the other process removed %d sessions", rounds, calls, missed, removed)
	if removed == 0 || missed == 0 {
		t.Errorf("no race happened: %d removals, %d helper calls found nothing", removed, missed)
	}
	if err := storekit.Verify(ctx, openStore(t, home)); err != nil {
		t.Error(err)
	}
}

// VerifySession run over and over beside another process appending to the
// session (batches, pops, titles) never reports a healthy session: Load
// and Items are each one snapshot, and it compares them only at the same
// LastSeq.
func TestVerifyBesideAppender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(ctx, verifyKey, recall.Guard{}, recall.Message("user", "first").Entry()); err != nil {
		t.Fatal(err)
	}
	child := startRaceChild(t, home, "append")
	runs, moved := 0, 0
	// Verify 300 times, for raceFor at least, and on until 10 batches were
	// acknowledged and 10 verifications raced one.
	overlap := func() bool { return moved >= 10 && len(child.Lines()) > 10 } // "ready", then an "ack" a batch
	for start := time.Now(); runs < 300 || time.Since(start) < raceFor() || !overlap() && time.Since(start) < raceLimit; runs++ {
		before, _ := s.Stat(ctx, verifyKey)
		if err := storekit.VerifySession(ctx, s, verifyKey); err != nil {
			child.stop(t)
			t.Fatalf("run %d: %v", runs, err)
		}
		if after, _ := s.Stat(ctx, verifyKey); after.LastSeq != before.LastSeq {
			moved++
		}
		if runs%50 == 0 {
			if err := storekit.Verify(ctx, s); err != nil {
				child.stop(t)
				t.Fatalf("run %d: Verify: %v", runs, err)
			}
		}
	}
	batches := child.stop(t)
	m, err := s.Stat(ctx, verifyKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d verifications, %d of them while the session moved; the other process appended %d batches (LastSeq %d)", runs, moved, batches, m.LastSeq)
	if batches < 10 || moved < 10 {
		t.Errorf("too little overlap: %d batches appended, %d verifications raced one", batches, moved)
	}
	if err := storekit.VerifySession(ctx, s, verifyKey); err != nil {
		t.Error(err)
	}
}

// Appends guarded by IfLastSeq from two processes at once: every one that
// succeeds lands exactly at the seq its guard promised, so the log holds
// each writer's items at the seqs they name, and the successes add up to
// the log's length.
func TestGuardAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(ctx, casKey, recall.IfNew(), recall.Entry{Kind: recall.KindCreate}); err != nil {
		t.Fatal(err)
	}
	child := startRaceChild(t, home, "cas")
	mine, tries := 0, 0
	// Race for raceFor/2, and on until an append here lost to the other
	// process (so both succeeded and collided).
	for start := time.Now(); time.Since(start) < raceFor()/2 || (mine == 0 || tries == mine) && time.Since(start) < raceLimit; tries++ {
		ok, err := casIncrement(ctx, s, "parent")
		if err != nil {
			child.stop(t)
			t.Fatal(err)
		}
		if ok {
			mine++
		}
	}
	theirs := child.stop(t)
	m, es, err := s.Load(ctx, casKey)
	if err != nil {
		t.Fatal(err)
	}
	if m.LastSeq != int64(1+mine+theirs) {
		t.Errorf("LastSeq %d after %d + %d guarded appends (and the create entry)", m.LastSeq, mine, theirs)
	}
	for _, e := range es[1:] {
		text := recall.Item(e.Data).Text()
		if _, at, _ := strings.Cut(text, "@"); at != strconv.FormatInt(e.Seq, 10) {
			t.Fatalf("seq %d holds %q: an append landed past its guard", e.Seq, text)
		}
	}
	t.Logf("%d of %d guarded appends here succeeded, %d in the other process", mine, tries, theirs)
	if mine == 0 || theirs == 0 || tries == mine {
		t.Errorf("no contention: %d of %d here, %d there", mine, tries, theirs)
	}
}

// Items returns the LastSeq of the very bytes its view was read from:
// while another goroutine appends one item per batch (so seq n is the
// n-th item and every entry is an item), the newest item of each view is
// the entry at the LastSeq returned, and a whole view holds LastSeq items,
// never one more or one less.
func TestItemsSeqIsTheViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	w, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := openStore(t, home) // another store: shares nothing with the writer but the files
	key := recall.Key{Project: "p", Session: "seq"}
	if _, err := w.Append(ctx, key, recall.Guard{}, recall.Message("user", "1").Entry()); err != nil {
		t.Fatal(err)
	}
	const appends = 500
	done := make(chan error, 1)
	go func() {
		for i := 2; i <= appends; i++ {
			if _, err := w.Append(ctx, key, recall.Guard{}, recall.Message("user", strconv.Itoa(i)).Entry()); err != nil {
				done <- err
				return
			}
			time.Sleep(100 * time.Microsecond) // let the reads interleave (the test does not rely on it)
		}
		done <- nil
	}()
	reads := 0
	for running := true; running; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		for _, st := range []recall.Store{r, w} {
			limit := []int{0, 1, 5, 1, 5, 1, 5, 50}[reads%8]
			live, last, err := st.Items(ctx, key, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(live) == 0 {
				t.Fatalf("Items(%d) read at seq %d is empty", limit, last)
			}
			if newest := live[len(live)-1]; newest.Ref.Seq != last || newest.Item.Text() != strconv.FormatInt(last, 10) {
				t.Fatalf("Items(%d) read at seq %d, its newest item is %+v", limit, last, newest)
			}
			if limit == 0 && int64(len(live)) != last {
				t.Fatalf("Items(0) read at seq %d holds %d items", last, len(live))
			}
		}
	}
	t.Logf("%d reads while %d items were appended", reads, appends)
}
