package sqlstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storetest"
)

// The tests in this file run the test binary again as child processes
// (testkit.Main, in role "writer") to write to one database from several
// processes.

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{"writer": runChild})
}

// childKey is the session the children write to.
var childKey = recall.Key{Project: "proc", Session: "shared"}

// runChild appends SQLSTORE_BATCHES batches (forever when 0) to childKey,
// batch b holding 1 + b%SQLSTORE_MAXBATCH items whose text is
// "<worker> <b> <i>", and prints "ack <b>" once each Append has returned.
// When SQLSTORE_ROUND is n > 0 it waits for a line on stdin before
// batches 0, n, 2n, ..., so a parent can start writers together, round
// by round. It sleeps SQLSTORE_PAUSE after each batch, pacing the writer
// as an agent would. Every 7th batch it also sets the title, a
// write that takes the general path rather than the items-only one.
func runChild() error {
	ctx := context.Background()
	var (
		s   *Store
		err error
	)
	target := os.Getenv("SQLSTORE_TARGET")
	switch os.Getenv("SQLSTORE_DIALECT") {
	case "sqlite":
		s, err = OpenSQLite(ctx, target, Options{})
	case "postgres":
		s, err = OpenPostgres(ctx, os.Getenv("SQLSTORE_DSN"), Options{Schema: target})
	default:
		err = fmt.Errorf("unknown dialect %q", os.Getenv("SQLSTORE_DIALECT"))
	}
	if err != nil {
		return err
	}
	defer s.Close()
	worker := os.Getenv("SQLSTORE_WORKER")
	batches, _ := strconv.Atoi(os.Getenv("SQLSTORE_BATCHES"))
	maxBatch, _ := strconv.Atoi(os.Getenv("SQLSTORE_MAXBATCH"))
	pause, _ := time.ParseDuration(os.Getenv("SQLSTORE_PAUSE"))
	round, _ := strconv.Atoi(os.Getenv("SQLSTORE_ROUND"))
	in, out := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	for b := 0; batches == 0 || b < batches; b++ {
		if round > 0 && b%round == 0 {
			if _, err := in.ReadString('\n'); err != nil {
				return fmt.Errorf("waiting for round %d: %w", b/round, err)
			}
		}
		n := 1 + b%maxBatch
		items := make([]recall.Item, n)
		for i := range items {
			items[i] = msg(fmt.Sprintf("%s %d %d", worker, b, i))
		}
		if _, err := s.Append(ctx, childKey, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
			return err
		}
		if b%7 == 6 {
			if _, err := recall.NewSession(s, childKey).SetTitle(ctx, worker+" "+strconv.Itoa(b), recall.TitleAuto); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "ack %d\n", b)
		out.Flush()
		time.Sleep(pause)
	}
	return nil
}

// processTarget is the database the children of a test write to: a file
// path or a schema of the shared server, fresh for the test.
type processTarget struct {
	t       *testing.T
	dialect string
	target  string
	dsn     string // PostgreSQL's
}

func newProcessTarget(t *testing.T, dialect string) *processTarget {
	if dialect == "sqlite" {
		return &processTarget{t: t, dialect: dialect, target: filepath.Join(t.TempDir(), "shared.db")}
	}
	dsn, schema := testsvc.PostgresSchema(t)
	return &processTarget{t: t, dialect: dialect, target: schema, dsn: dsn}
}

// child returns the command of a child process writing batches to the
// target as worker.
func (p *processTarget) child(worker string, batches, maxBatch int, env ...string) *exec.Cmd {
	return testkit.Command("writer", append([]string{"SQLSTORE_DIALECT=" + p.dialect, "SQLSTORE_TARGET=" + p.target,
		"SQLSTORE_DSN=" + testsvc.AppDSN(p.dsn, p.target), "SQLSTORE_WORKER=" + worker, "SQLSTORE_BATCHES=" + strconv.Itoa(batches),
		"SQLSTORE_MAXBATCH=" + strconv.Itoa(maxBatch)}, env...)...)
}

// killed waits until what a child killed with SIGKILL sent is done: for
// PostgreSQL, until the server has closed the child's connections (one
// may still be making a COMMIT it received); SQLite's writes are done
// when the process is.
func (p *processTarget) killed() {
	if p.dialect == "postgres" {
		testsvc.WaitDisconnected(p.t, p.dsn, p.target)
	}
}

// open opens the target in this process.
func (p *processTarget) open() *Store {
	var (
		s   *Store
		err error
	)
	if p.dialect == "sqlite" {
		s, err = OpenSQLite(context.Background(), p.target, Options{})
	} else {
		s, err = OpenPostgres(context.Background(), p.dsn, Options{Schema: p.target})
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { s.Close() })
	return s
}

// lastAck returns the number of the last "ack <b>" line, -1 if none.
func lastAck(t *testing.T, lines []string) int {
	t.Helper()
	acked := -1
	for _, l := range lines {
		if _, err := fmt.Sscanf(l, "ack %d", &acked); err != nil {
			t.Fatalf("child said %q", l)
		}
	}
	return acked
}

// TestTwoProcesses: two processes append to one session at once, the
// database created by whichever comes first. Nothing is lost, nothing is
// duplicated, the seqs are dense and every batch is contiguous.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			p := newProcessTarget(t, dialect)
			ctx := context.Background()
			const batches, maxBatch, round = 150, 3, 10
			children := make([]*testkit.Child, 2)
			starts := make([]io.WriteCloser, 2)
			for w := range children {
				// The children start each round of batches together, so
				// that both write in every round: SQLite's busy handler
				// sleeps and is not fair, and one writer can otherwise
				// keep the lock until it is done. Within a round they run
				// free, with a pause between batches as an agent makes.
				cmd := p.child("w"+strconv.Itoa(w), batches, maxBatch, "SQLSTORE_ROUND="+strconv.Itoa(round), "SQLSTORE_PAUSE=1ms")
				var err error
				if starts[w], err = cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
				children[w] = testkit.Start(t, cmd)
			}
			for end := round; end <= batches; end += round {
				for _, start := range starts {
					fmt.Fprintln(start, "go")
				}
				for w, c := range children {
					if !c.WaitLines(end, 2*time.Minute) {
						t.Fatalf("child w%d acknowledged %d of %d batches\n%s", w, len(c.Lines()), end, c.Stderr())
					}
				}
			}
			for w, c := range children {
				starts[w].Close()
				if _, err := c.Wait(); err != nil {
					t.Fatalf("child w%d: %v", w, err)
				}
			}
			s := p.open()
			_, entries, err := s.Load(ctx, childKey)
			if err != nil {
				t.Fatal(err)
			}
			perWorker := 0
			for b := range batches {
				perWorker += 1 + b%maxBatch + map[bool]int{true: 1}[b%7 == 6]
			}
			if len(entries) != 2*perWorker {
				t.Errorf("%d entries, want %d", len(entries), 2*perWorker)
			}
			checkBatches(t, entries, map[string]int{"w0": batches, "w1": batches}, maxBatch)
			// The two really wrote at the same time: their batches alternate
			// (at least once a round, since each round has both).
			switches, last := 0, ""
			for _, e := range entries {
				if w, _, _ := strings.Cut(recall.Item(e.Data).Text(), " "); e.Kind == recall.KindItem && w != last {
					switches, last = switches+1, w
				}
			}
			t.Logf("%d entries, the writer changed %d times", len(entries), switches-1)
			if switches-1 < batches/round {
				t.Errorf("the writers did not overlap (%d changes of writer)", switches-1)
			}
			verify(t, s)
		})
	}
}

// checkBatches checks a log written by children: seqs dense from 1, each
// batch's items contiguous and complete, no item twice, and, per worker,
// batches 0..want-1 in order. want[w] < 0 means "at least -want[w]".
func checkBatches(t *testing.T, entries []recall.Entry, want map[string]int, maxBatch int) {
	t.Helper()
	type batch struct {
		worker string
		b      int
	}
	next := map[string]int{}  // per worker, the batch expected next
	var cur *batch            // the batch being read
	curItems := 0             // items of cur seen so far
	seen := map[string]bool{} // item texts
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		if e.Kind != recall.KindItem {
			continue
		}
		text := recall.Item(e.Data).Text()
		if seen[text] {
			t.Fatalf("item %q twice", text)
		}
		seen[text] = true
		var w string
		var b, j int
		if _, err := fmt.Sscanf(text, "%s %d %d", &w, &b, &j); err != nil {
			t.Fatalf("item %q: %v", text, err)
		}
		if j == 0 {
			if cur != nil && curItems != 1+cur.b%maxBatch {
				t.Fatalf("batch %s/%d has %d items, want %d", cur.worker, cur.b, curItems, 1+cur.b%maxBatch)
			}
			if b != next[w] {
				t.Fatalf("worker %s: batch %d follows batch %d", w, b, next[w]-1)
			}
			next[w]++
			cur, curItems = &batch{w, b}, 0
		} else if cur == nil || cur.worker != w || cur.b != b || j != curItems {
			t.Fatalf("seq %d: item %q interleaves another batch", e.Seq, text)
		}
		curItems++
	}
	if cur != nil && curItems != 1+cur.b%maxBatch {
		t.Fatalf("last batch %s/%d has %d items, want %d", cur.worker, cur.b, curItems, 1+cur.b%maxBatch)
	}
	for w, n := range want {
		if n >= 0 && next[w] != n || n < 0 && next[w] < -n {
			t.Errorf("worker %s: %d batches stored, want %d", w, next[w], n)
		}
	}
}

// checkKilledSearch checks, after a writer was killed, that search finds
// every item the log holds (the acknowledged ones among them): the search
// rows were committed with the entries, or not at all.
func checkKilledSearch(t *testing.T, s *Store, entries []recall.Entry) {
	t.Helper()
	ctx := context.Background()
	items := 0
	for _, e := range entries {
		if e.Kind == recall.KindItem {
			items++
		}
	}
	p, err := s.Search(ctx, recall.SearchOptions{Query: "k", Limit: recall.MaxSearchLimit})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, h := range p.Hits {
		if h.Role != recall.RoleTitle {
			hits++
		}
	}
	if hits != items || p.Next != "" {
		t.Errorf("search after the kill: %d item hits (next %q), the log holds %d items", hits, p.Next, items)
	}
	if err := storetest.CompareSearch(ctx, s, recall.SearchOptions{Query: "k", Limit: 7}); err != nil {
		t.Errorf("search after the kill: %v", err)
	}
}

// TestKilledWriter kills a child process with SIGKILL while it appends
// batches in a loop: every acknowledged batch is there, no batch is torn,
// and the database takes writes afterwards.
func TestKilledWriter(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			p := newProcessTarget(t, dialect)
			ctx := context.Background()
			const maxBatch = 5
			c := testkit.Start(t, p.child("k", 0, maxBatch))
			if !c.WaitLines(41, time.Minute) {
				t.Fatalf("child acknowledged only %d batches\n%s", len(c.Lines()), c.Stderr())
			}
			acked := lastAck(t, c.Kill())
			p.killed()
			if acked < 40 {
				t.Fatalf("child acknowledged only %d batches", acked+1)
			}
			s := p.open()
			_, entries, err := s.Load(ctx, childKey)
			if err != nil {
				t.Fatal(err)
			}
			checkBatches(t, entries, map[string]int{"k": -(acked + 1)}, maxBatch)
			checkKilledSearch(t, s, entries)
			if _, err := s.Append(ctx, childKey, recall.Guard{}, msg("after").Entry()); err != nil {
				t.Fatalf("append after the kill: %v", err)
			}
			verify(t, s)
			t.Logf("killed after %d acknowledged batches; %d entries stored", acked+1, len(entries))
		})
	}
}
