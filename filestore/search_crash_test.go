package filestore_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
)

// childSearcher searches its home again and again, printing "searched"
// after each search, so the parent can kill it while it brings the index
// up to date.
func childSearcher() error {
	s, err := childStore(filestore.SyncNever)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		if _, err := s.Search(context.Background(), recall.SearchOptions{Query: "needle"}); err != nil {
			return err
		}
		fmt.Fprintln(out, "searched")
		out.Flush()
	}
}

// childDurableAppender is childAppender with SyncAlways only and smaller
// items: the fsync of each batch paces it, so that a parent catching up
// the index is not outrun by megabytes a second of padding.
func childDurableAppender() error {
	round := os.Getenv(envArg)
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	var roundNo int
	fmt.Sscanf(round, "r%d", &roundNo)
	key := appenderKey(roundNo)
	rng := testkit.ChildRand(uint64(roundNo))
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		n := 1 + rng.IntN(4)
		items := make([]recall.Item, n)
		for i := range items {
			pad := rng.IntN(500)
			if rng.IntN(12) == 0 {
				pad = 8000 + rng.IntN(16_000) // several pages: a longer write
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

// TestSearchCrashWhileIndexing kills a child process at random moments
// while it builds or catches up the index, round after round, with new
// sessions and items between rounds; after every kill the parent's search
// must agree with the logs, and the index must stay usable (not rebuilt
// for nothing: it keeps the sessions a finished transaction indexed).
func TestSearchCrashWhileIndexing(t *testing.T) {
	t.Parallel()
	rounds := testkit.Size(2, 12)
	if raceBuild {
		rounds = testkit.Size(2, 3)
	}
	home := t.TempDir()
	rng := testkit.Rand(t)
	s := openSearchStore(t, home)
	text := strings.Repeat("hay and straw ", 20)
	for round := range rounds {
		// new work for the child: sessions, and items in old ones
		for i := range 60 {
			k := recall.Key{Project: fmt.Sprintf("p%d", i%3), Session: fmt.Sprintf("s%d", rng.IntN(200))}
			appendItems(t, s, k, recall.Message("user", fmt.Sprintf("needle r%d-%d %s", round, i, text)), recall.Message("assistant", text))
		}
		c := child(t, "searcher", home, "")
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // a random moment to kill
		searched := len(c.Kill())
		// the parent's search: first from the index the child left, then
		// compared page by page with the logs
		if _, err := filestore.SearchIndexOnly(context.Background(), s, recall.SearchOptions{Query: "needle"}); err != nil {
			t.Fatalf("round %d: the index the child left: %v", round, err)
		}
		hits := checkSearch(t, s, recall.SearchOptions{Query: "needle", Limit: 100, WholeLog: true})
		if len(hits) != 60*(round+1) {
			t.Fatalf("round %d: %d hits, want %d", round, len(hits), 60*(round+1))
		}
		t.Logf("round %d: killed after %d searches", round, searched)
	}
}

// TestSearchCrashWhileAppending kills an appending child at random moments
// (as TestCrashSIGKILL does, with durable appends) while the parent keeps its index up to date:
// after every kill, a search finds every batch the child saw
// acknowledged, and agrees with the logs.
func TestSearchCrashWhileAppending(t *testing.T) {
	t.Parallel()
	kills := testkit.Size(2, 8)
	if raceBuild {
		kills = 2
	}
	home := t.TempDir()
	rng := testkit.Rand(t)
	s := openSearchStore(t, home)
	for round := range kills {
		name := fmt.Sprintf("r%d", round)
		c := child(t, "durable-appender", home, name)
		if wait := 1 + rng.IntN(8); !c.WaitLines(wait, time.Minute) {
			t.Fatalf("round %d: the child did not acknowledge %d batches: %q\n%s", round, wait, c.Lines(), c.Stderr())
		}
		// search while the child appends: its first batch is there
		if missing := missingBatches(t, s, name, 0, 0); missing >= 0 {
			t.Fatalf("round %d, while appending: acknowledged batch %d not found", round, missing)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // a random moment to kill
		last := lastAck(c.Kill())
		if missing := missingBatches(t, s, name, 0, last); missing >= 0 {
			t.Fatalf("round %d: acknowledged batch %d not found", round, missing)
		}
		if last >= 0 {
			checkSearch(t, s, recall.SearchOptions{Query: fmt.Sprintf("%s-b%d-", name, last)})
		}
	}
}

// missingBatches searches for the first item of each batch from to last
// written by the appender of round name, and returns the first batch not
// found, or -1.
func missingBatches(t *testing.T, s *filestore.Store, name string, from, last int) int {
	t.Helper()
	for b := from; b <= last; b++ {
		page, err := s.Search(context.Background(), recall.SearchOptions{Query: fmt.Sprintf("%s-b%d-i0of", name, b)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 1 {
			return b
		}
	}
	return -1
}

// TestSearchConcurrentProcesses runs two child processes that search (and
// so catch the shared index up) without pause while the parent writes and
// searches too: every search of the parent finds what it wrote, and in
// the end the index agrees with the logs.
func TestSearchConcurrentProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	s := openSearchStore(t, home)
	appendItems(t, s, recall.Key{Project: "p", Session: "seed"}, recall.Message("user", "needle seed"))
	for range 2 {
		child(t, "searcher", home, "") // killed when the test ends
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range testkit.Size(30, 60) {
		k := recall.Key{Project: fmt.Sprintf("p%d", i%2), Session: fmt.Sprintf("s%d", rng.IntN(15))}
		word := fmt.Sprintf("word%dx", i)
		appendItems(t, s, k, recall.Message("user", "needle "+word))
		if i%7 == 3 {
			if err := s.Remove(ctx, recall.Key{Project: "p1", Session: fmt.Sprintf("s%d", rng.IntN(15))}); err != nil && !strings.Contains(err.Error(), "not found") {
				t.Fatal(err)
			}
			continue
		}
		page, err := filestore.SearchIndexOnly(ctx, s, recall.SearchOptions{Query: word})
		if err != nil || len(page.Hits) != 1 || page.Hits[0].Key != k {
			t.Fatalf("search %s after writing it to %s: %v, %v", word, k, keysOf(page.Hits), err)
		}
	}
	checkSearch(t, s, recall.SearchOptions{Query: "needle", Limit: 25})
	checkSearch(t, s, recall.SearchOptions{Query: "needle", WholeLog: true, Limit: 25})
}
