package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// The soak test: processes hammer one file-store home with random
// operations for a while, then every invariant is checked. The fast tier
// (-short) runs it for soakShort; otherwise it is off by default: run it
// with
//
//	go test ./filestore -run '^TestSoak$' -soak 2m -v
//
// (or RECALL_SOAK=2m). docs/TESTING.md has the figures of the last run.

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (e.g. 2m); 0 skips it, but for a short run under -short (env RECALL_SOAK works too)")

// soakShort is how long the soak runs in the fast tier when no duration
// is given.
const soakShort = 2 * time.Second

const (
	soakProcs    = 8
	soakSessions = 20
	soakProject  = "soak"

	envSoakID    = "FILESTORE_SOAK_ID"
	envSoakUntil = "FILESTORE_SOAK_UNTIL" // unix nanoseconds
	envSoakOut   = "FILESTORE_SOAK_OUT"   // the child's record of acknowledged operations
)

func soakKey(i int) recall.Key {
	return recall.Key{Project: soakProject, Session: fmt.Sprintf("s%02d", i)}
}

// soakTag is the first word of a soak item's text: "w<child>-n<counter>".
func soakTag(it recall.Item) string {
	text := it.Text()
	tag, _, _ := strings.Cut(text, " ")
	return tag
}

// childSoak is one process of TestSoak (role "soak"). Until the deadline it runs
// random operations on the shared sessions and records each acknowledged
// one, a line each, in its out file:
//
//	A <session> <last-seq> <tag>...   an append of items, seqs ending at last-seq
//	P <session> <tag>                 a pop that returned the item tagged tag
//	F <session> <at-seq> <fork>       a fork
//	T, R, L                           a title, an archive change, a list page
//
// Any error is fatal: the parent sees the exit status.
func childSoak() error {
	home := os.Getenv(envHome)
	id, _ := strconv.Atoi(os.Getenv(envSoakID))
	untilNs, _ := strconv.ParseInt(os.Getenv(envSoakUntil), 10, 64)
	until := time.Unix(0, untilNs)
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "soak child %d: %s\n", id, fmt.Sprintf(format, args...))
		os.Exit(2)
	}
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		fail("%v", err)
	}
	outFile, err := os.Create(os.Getenv(envSoakOut))
	if err != nil {
		fail("%v", err)
	}
	out := bufio.NewWriter(outFile)
	ctx := context.Background()
	rng := testkit.ChildRand(uint64(id))
	n := 0
	for time.Now().Before(until) {
		key := soakKey(rng.IntN(soakSessions))
		switch op := rng.IntN(100); {
		case op < 45: // append a batch
			items := make([]recall.Item, 1+rng.IntN(3))
			tags := make([]string, len(items))
			for i := range items {
				n++
				tags[i] = fmt.Sprintf("w%d-n%d", id, n)
				items[i] = recall.Message("user", tags[i]+" "+strings.Repeat("z", rng.IntN(3000)))
			}
			last, err := s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(items...)...)
			if err != nil {
				fail("append %s: %v", key, err)
			}
			fmt.Fprintf(out, "A %s %d %s\n", key.Session, last, strings.Join(tags, " "))
		case op < 60: // pop
			it, err := s.Pop(ctx, key)
			if err != nil {
				fail("pop %s: %v", key, err)
			}
			if it != nil {
				fmt.Fprintf(out, "P %s %s\n", key.Session, soakTag(it))
			}
		case op < 65: // fork at the current end
			m, err := s.Stat(ctx, key)
			if errors.Is(err, recall.ErrNotFound) {
				continue
			}
			if err != nil {
				fail("stat %s: %v", key, err)
			}
			at := 1 + rng.Int64N(m.LastSeq)
			n++
			fork := recall.Key{Project: soakProject, Session: fmt.Sprintf("fork-w%d-n%d", id, n)}
			if _, err := recall.NewSession(s, key).Fork(ctx, at, fork); err != nil {
				fail("fork %s at %d: %v", key, at, err)
			}
			fmt.Fprintf(out, "F %s %d %s\n", key.Session, at, fork.Session)
		case op < 75: // title
			src := recall.TitleAuto
			if rng.IntN(2) == 0 {
				src = recall.TitleUser
			}
			if _, err := recall.NewSession(s, key).SetTitle(ctx, fmt.Sprintf("title by w%d", id), src); err != nil && !errors.Is(err, recall.ErrNotFound) {
				fail("title %s: %v", key, err)
			}
			fmt.Fprintf(out, "T %s\n", key.Session)
		case op < 85: // archive or unarchive
			if _, err := recall.NewSession(s, key).ChangeMeta(ctx, recall.MetaChange{Archived: new(rng.IntN(2) == 0)}); err != nil && !errors.Is(err, recall.ErrNotFound) {
				fail("archive %s: %v", key, err)
			}
			fmt.Fprintf(out, "R %s\n", key.Session)
		default: // list a page, or all of them
			opts := recall.ListOptions{Limit: []int{5, 50, -1}[rng.IntN(3)], IncludeArchived: rng.IntN(2) == 0}
			page, err := s.List(ctx, soakProject, opts)
			if err != nil {
				fail("list: %v", err)
			}
			if opts.Limit > 0 && len(page.Sessions) > opts.Limit {
				fail("list: %d sessions on a page of %d", len(page.Sessions), opts.Limit)
			}
			for i := 1; i < len(page.Sessions); i++ {
				if page.Sessions[i].Updated.After(page.Sessions[i-1].Updated) {
					fail("list: not newest first")
				}
			}
			fmt.Fprintf(out, "L %d\n", len(page.Sessions))
		}
	}
	if err := out.Flush(); err != nil {
		fail("%v", err)
	}
	if err := outFile.Sync(); err != nil {
		fail("%v", err)
	}
	outFile.Close()
	s.Close()
	return nil
}

// soakRecord is what the children acknowledged, per session.
type soakRecord struct {
	appended map[string]map[string]int64 // session -> tag -> seq
	popped   map[string][]string         // session -> tags, in no order
	forks    []soakFork
	ops      map[byte]int
}

type soakFork struct {
	src  string
	at   int64
	fork string
}

func readSoakRecords(t *testing.T, files []string) soakRecord {
	t.Helper()
	rec := soakRecord{appended: map[string]map[string]int64{}, popped: map[string][]string{}, ops: map[byte]int{}}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			rec.ops[f[0][0]]++
			switch f[0] {
			case "A":
				last, _ := strconv.ParseInt(f[2], 10, 64)
				tags := f[3:]
				if rec.appended[f[1]] == nil {
					rec.appended[f[1]] = map[string]int64{}
				}
				for i, tag := range tags {
					rec.appended[f[1]][tag] = last - int64(len(tags)-1-i)
				}
			case "P":
				rec.popped[f[1]] = append(rec.popped[f[1]], f[2])
			case "F":
				at, _ := strconv.ParseInt(f[2], 10, 64)
				rec.forks = append(rec.forks, soakFork{src: f[1], at: at, fork: f[3]})
			}
		}
	}
	return rec
}

// TestSoak runs soakProcs processes for -soak on soakSessions shared
// sessions of one home, then checks every invariant:
//
//   - every log loads, and storekit.Verify passes: seqs dense from 1, the
//     stored metadata and the item view equal the log's replay;
//   - no acknowledged item is lost: every acknowledged append is in its
//     session's log at the seq Append returned, exactly once, and the log
//     holds no item nobody appended;
//   - no acknowledged pop is lost: the log's pop entries are exactly the
//     acknowledged pops, each naming the item it returned;
//   - every fork holds its source's view at the fork's seq;
//   - the index agrees with the logs: List from the cached index equals
//     List from an index rebuilt from nothing, session for session.
func TestSoak(t *testing.T) {
	d := *soakFor
	if env := os.Getenv("RECALL_SOAK"); env != "" && d == 0 {
		var err error
		if d, err = time.ParseDuration(env); err != nil {
			t.Fatalf("RECALL_SOAK=%q: %v", env, err)
		}
	}
	if d <= 0 && testing.Short() {
		d = soakShort
	}
	if d <= 0 {
		t.Skip("the soak test is off: run it with -soak 2m (or RECALL_SOAK=2m)")
	}
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	outs := t.TempDir()
	until := time.Now().Add(d)
	var children []*testkit.Child
	var files []string
	for i := range soakProcs {
		out := filepath.Join(outs, fmt.Sprintf("child-%d", i))
		files = append(files, out)
		children = append(children, testkit.Start(t, testkit.Command("soak", envHome+"="+home, envSoakID+"="+strconv.Itoa(i),
			envSoakUntil+"="+strconv.FormatInt(until.UnixNano(), 10), envSoakOut+"="+out)))
	}
	start := time.Now()
	for i, c := range children {
		if _, err := c.Wait(); err != nil {
			t.Errorf("soak child %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}
	rec := readSoakRecords(t, files)
	total := 0
	for _, n := range rec.ops {
		total += n
	}
	t.Logf("%d processes, %v: %d acknowledged operations (%.0f/s): %d appends, %d pops, %d forks, %d titles, %d archive changes, %d lists",
		soakProcs, elapsed.Round(time.Second), total, float64(total)/elapsed.Seconds(),
		rec.ops['A'], rec.ops['P'], rec.ops['F'], rec.ops['T'], rec.ops['R'], rec.ops['L'])

	checkStart := time.Now()
	s := openStore(t, home)
	if err := storekit.Verify(ctx, s); err != nil {
		t.Errorf("storekit.Verify: %v", err)
	}
	items, pops := 0, 0
	for i := range soakSessions {
		key := soakKey(i)
		_, log, err := s.Load(ctx, key)
		if err != nil {
			t.Errorf("Load %s: %v", key, err)
			continue
		}
		items += checkSoakLog(t, key, log, rec.appended[key.Session], rec.popped[key.Session])
		pops += len(rec.popped[key.Session])
	}
	logs := map[string][]recall.Entry{} // each source log, read once
	for _, f := range rec.forks {
		if logs[f.src] == nil {
			_, log, err := s.Load(ctx, recall.Key{Project: soakProject, Session: f.src})
			if err != nil {
				t.Fatalf("Load %s: %v", f.src, err)
			}
			logs[f.src] = log
		}
		checkSoakFork(t, s, f, logs[f.src])
	}
	checkIndexRebuild(t, home)
	t.Logf("checked in %v: %d items in %d sessions, %d pops, %d forks; Verify, and the cached index against a rebuilt one",
		time.Since(checkStart).Round(time.Second), items, soakSessions, pops, len(rec.forks))
}

// checkSoakLog checks one session's log against the acknowledged appends
// and pops, and returns its item count.
func checkSoakLog(t *testing.T, key recall.Key, log []recall.Entry, appended map[string]int64, popped []string) int {
	t.Helper()
	bySeq := map[int64]string{} // item seq -> tag
	items := 0
	for _, e := range log {
		if e.Kind != recall.KindItem {
			continue
		}
		items++
		tag := soakTag(recall.Item(e.Data))
		seq, ok := appended[tag]
		switch {
		case !ok:
			t.Errorf("%s: seq %d holds %q, which no acknowledged append wrote", key, e.Seq, tag)
		case seq != e.Seq:
			t.Errorf("%s: %q is at seq %d; Append acknowledged it at %d", key, tag, e.Seq, seq)
		}
		bySeq[e.Seq] = tag
	}
	if items != len(appended) {
		t.Errorf("%s: the log holds %d items, %d were acknowledged", key, items, len(appended))
	}
	var logPops []string
	for _, e := range log {
		if e.Kind != recall.KindPop {
			continue
		}
		var ref recall.ItemRef
		if err := json.Unmarshal(e.Data, &ref); err != nil {
			t.Errorf("%s: pop at seq %d: %v", key, e.Seq, err)
			continue
		}
		logPops = append(logPops, bySeq[ref.Seq])
	}
	slices.Sort(logPops)
	want := slices.Sorted(slices.Values(popped))
	if !slices.Equal(logPops, want) {
		t.Errorf("%s: the log's pops remove %d items, %d pops were acknowledged (or they differ)", key, len(logPops), len(want))
	}
	if len(slices.Compact(slices.Clone(logPops))) != len(logPops) {
		t.Errorf("%s: an item was popped twice", key)
	}
	return items
}

// checkSoakFork checks that a fork holds its source's view at its seq;
// log is the source's whole log.
func checkSoakFork(t *testing.T, s recall.Store, f soakFork, log []recall.Entry) {
	t.Helper()
	ctx := context.Background()
	src := recall.Key{Project: soakProject, Session: f.src}
	fork := recall.Key{Project: soakProject, Session: f.fork}
	i := slices.IndexFunc(log, func(e recall.Entry) bool { return e.Seq > f.at })
	if i < 0 {
		i = len(log)
	}
	_, want := recall.Replay(src, log[:i])
	got, _, err := s.Items(ctx, fork, 0)
	if err != nil {
		t.Errorf("Items %s: %v", fork, err)
		return
	}
	if len(got) != len(want) {
		t.Errorf("fork %s of %s at %d: %d items, the source had %d", fork, src, f.at, len(got), len(want))
		return
	}
	for j := range got {
		if !bytes.Equal(got[j].Item, want[j].Item) {
			t.Errorf("fork %s: item %d differs from the source's", fork, j)
			return
		}
	}
	m, err := s.Stat(ctx, fork)
	if err != nil || m.ForkedFrom == nil || m.ForkedFrom.Key != src || m.ForkedFrom.Seq != f.at {
		t.Errorf("fork %s: Stat = %+v, %v; want forked from %s@%d", fork, m.ForkedFrom, err, src, f.at)
	}
}

// checkIndexRebuild lists every project of home from its cached index,
// then from an index rebuilt from nothing (the index files deleted), and
// requires the same sessions with the same metadata.
func checkIndexRebuild(t *testing.T, home string) {
	t.Helper()
	ctx := context.Background()
	list := func() ([]recall.Meta, []recall.ProjectInfo) {
		s := openStore(t, home)
		defer s.Close()
		page, err := s.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		ps, err := recall.Projects(ctx, s)
		if err != nil {
			t.Fatalf("Projects: %v", err)
		}
		return page.Sessions, ps
	}
	cached, cachedProjects := list()
	indexes, _ := filepath.Glob(filepath.Join(home, "projects", "*", "#index-*"))
	if len(indexes) == 0 {
		t.Fatalf("no index file in %s", home)
	}
	for _, idx := range indexes {
		if err := os.Remove(idx); err != nil {
			t.Fatal(err)
		}
	}
	rebuilt, rebuiltProjects := list()
	if len(cached) != len(rebuilt) {
		t.Fatalf("the cached index lists %d sessions, a rebuilt one %d", len(cached), len(rebuilt))
	}
	for i := range cached {
		if d := storetest.MetaDiff(cached[i], rebuilt[i], true); d != "" {
			t.Errorf("session %d (%s): cached index vs rebuilt: %s", i, cached[i].Key, d)
		}
	}
	if !slices.EqualFunc(cachedProjects, rebuiltProjects, func(a, b recall.ProjectInfo) bool {
		return a.Project == b.Project && a.Sessions == b.Sessions && a.Updated.Equal(b.Updated)
	}) {
		t.Errorf("Projects: cached %+v, rebuilt %+v", cachedProjects, rebuiltProjects)
	}
}
