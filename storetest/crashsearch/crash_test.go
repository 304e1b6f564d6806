package crashsearch_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// The test runs this test binary again as the writer child (testkit.Main);
// its store comes from the environment.
const (
	envBackend = "CRASHSEARCH_BACKEND" // "file" or "sqlite"
	envPath    = "CRASHSEARCH_PATH"    // the home or database file
	envRound   = "CRASHSEARCH_ROUND"
)

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{"writer": childWriter})
}

func open(backend, path string) (recall.Store, error) {
	if backend == "sqlite" {
		return sqlstore.OpenSQLite(context.Background(), path, sqlstore.Options{})
	}
	return filestore.Open(filestore.Options{Dir: path})
}

// keys are the sessions the writer appends to, in turn.
var keys = []recall.Key{{Project: "crash", Session: "a"}, {Project: "crash", Session: "b"}, {Project: "other", Session: "c"}}

// token is the unique word of one item: no token is a substring of
// another.
func token(round, batch, item int) string { return fmt.Sprintf("zq%dq%dq%dzq", round, batch, item) }

// childWriter appends batches of one to three items, each holding its
// token among common words, and prints "ack <batch> <items>" once Append
// has returned; every fourth batch it also searches, so a file store's
// index is caught up, and written, while the kill may come.
func childWriter() error {
	ctx := context.Background()
	s, err := open(os.Getenv(envBackend), os.Getenv(envPath))
	if err != nil {
		return err
	}
	var round int
	fmt.Sscan(os.Getenv(envRound), &round)
	rng := testkit.ChildRand(uint64(round))
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		n := 1 + rng.IntN(3)
		entries := make([]recall.Entry, n)
		for i := range entries {
			text := fmt.Sprintf("common words %s 北京 %s", token(round, b, i), strings.Repeat("filler ", rng.IntN(300)))
			entries[i] = recall.Message("user", text).Entry()
		}
		if _, err := s.Append(ctx, keys[b%len(keys)], recall.Guard{}, entries...); err != nil {
			return err
		}
		fmt.Fprintf(out, "ack %d %d\n", b, n)
		out.Flush()
		if b%4 == 3 {
			if _, err := recall.Search(ctx, s, recall.SearchOptions{Query: token(round, b, 0), IncludeArchived: true}); err != nil {
				return err
			}
		}
	}
}

// TestSearchAfterSIGKILL kills a writer child at a random moment, round
// after round on the same store, and then, in this process, searches for
// every item the child saw acknowledged: each is found, once, in its
// session; the store's search agrees with the scan; the store verifies.
func TestSearchAfterSIGKILL(t *testing.T) {
	rounds := testkit.Size(2, 6)
	for _, backend := range []string{"file", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			rng := testkit.Rand(t)
			path := filepath.Join(t.TempDir(), "store")
			if backend == "sqlite" {
				path += ".db"
			}
			// An index exists before the first child: the kills land on
			// an index the writer keeps up to date, not one built after.
			s, err := open(backend, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(context.Background(), keys[0], recall.Guard{}, recall.Message("user", "seed").Entry()); err != nil {
				t.Fatal(err)
			}
			if _, err := recall.Search(context.Background(), s, recall.SearchOptions{Query: "seed"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			acked := map[string]recall.Key{}
			for round := range rounds {
				for tok, k := range killWriter(t, rng, backend, path, round) {
					acked[tok] = k
				}
				checkFound(t, backend, path, acked, round+1)
			}
			if len(acked) == 0 {
				t.Fatal("the children acknowledged nothing")
			}
		})
	}
}

// killWriter runs a writer child, kills it with SIGKILL a random moment
// after its first acknowledged batch, and returns the tokens it
// acknowledged with their sessions.
func killWriter(t *testing.T, rng *rand.Rand, backend, path string, round int) map[string]recall.Key {
	t.Helper()
	c := testkit.Start(t, testkit.Command("writer", envBackend+"="+backend, envPath+"="+path, fmt.Sprintf("%s=%d", envRound, round)))
	// The clock starts at the child's first acknowledged batch, so a
	// loaded machine, slow to start the child, still sees kills mid-work.
	if !c.WaitLines(1, time.Minute) {
		t.Fatalf("the writer acknowledged nothing: %q\n%s", c.Lines(), c.Stderr())
	}
	time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // a random moment to kill
	acked := map[string]recall.Key{}
	for _, line := range c.Kill() {
		var b, n int
		if _, err := fmt.Sscanf(line, "ack %d %d", &b, &n); err != nil {
			continue
		}
		for i := range n {
			acked[token(round, b, i)] = keys[b%len(keys)]
		}
	}
	return acked
}

// tokenRE finds an item's token in a snippet.
var tokenRE = regexp.MustCompile(`zq\d+q\d+q\d+zq`)

// checkFound opens the store and searches for every acknowledged token:
// one search per round (the prefix its tokens share), read page by page;
// each token must be a hit once, in its session.
func checkFound(t *testing.T, backend, path string, acked map[string]recall.Key, rounds int) {
	t.Helper()
	ctx := context.Background()
	s, err := open(backend, path)
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer s.Close()
	found := map[string]recall.Key{}
	for r := range rounds {
		hits, err := storetest.SearchAll(ctx, s, recall.SearchOptions{Query: fmt.Sprintf("zq%dq", r), Limit: recall.MaxSearchLimit}, recall.Search)
		if err != nil {
			t.Fatalf("search for round %d: %v", r, err)
		}
		for _, h := range hits {
			tok := tokenRE.FindString(h.Snippet)
			if _, dup := found[tok]; dup || tok == "" {
				t.Fatalf("hit %+v: no token in its snippet, or one found twice", h)
			}
			found[tok] = h.Key
		}
	}
	for tok, k := range acked {
		if got, ok := found[tok]; !ok || got != k {
			t.Fatalf("the acknowledged item %s of %s: found in %v (%v)", tok, k, got, ok)
		}
	}
	for _, opts := range []recall.SearchOptions{{Query: "北京", Limit: 200}, {Query: "common words", Project: "crash", Limit: 97}} {
		if err := storetest.CompareSearch(ctx, s, opts); err != nil {
			t.Errorf("after the kill: %v", err)
		}
	}
	if err := storekit.Verify(ctx, s); err != nil {
		t.Errorf("storekit.Verify after the kill: %v", err)
	}
}
