package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

func item(text string) recall.Item { return recall.Message("user", text) }

func mustAppend(t testing.TB, s recall.Store, key recall.Key, entries ...recall.Entry) int64 {
	t.Helper()
	last, err := s.Append(context.Background(), key, recall.Guard{}, entries...)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func verify(t testing.TB, s recall.Store) {
	t.Helper()
	if err := storekit.Verify(context.Background(), s); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// zmembers returns a sorted set's members (test inspection).
func zmembers(t testing.TB, key string) []string {
	t.Helper()
	ms, err := adminClient(t).ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestItemsVerbatim checks that item bytes survive exactly, whitespace,
// escapes and HTML characters included, next to a big item.
func TestItemsVerbatim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "s"}
	odd := recall.Item(" {\n \"type\" : \"message\", \"x\":\"<b>&amp;\\u00e9\\n\" , \"n\": 1.50 }\t")
	big := recall.Item(`{"type":"blob","data":"` + strings.Repeat("é\n", 1<<20) + `"}`)
	big = recall.Item(strings.ReplaceAll(string(big), "\n", `\n`))
	mustAppend(t, s, k, recall.ItemEntries(odd, big, item("last"))...)
	got, _, err := s.Items(ctx, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Item) != string(odd) || string(got[1].Item) != string(big) {
		t.Fatalf("items changed on the way: %d items, first %q", len(got), got[0].Item)
	}
	verify(t, s)
}

// TestTTL checks that a TTL expires idle sessions, is refreshed by every
// append, and that expired sessions leave nothing in the indexes once they
// are read.
func TestTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = time.Second
	s := newStore(t, Options{TTL: ttl})
	idle := recall.Key{Project: "p", Session: "idle"}
	busy := recall.Key{Project: "p", Session: "busy"}
	sub := recall.Key{Project: "p", Session: "idle", Subpath: "subagents/a"}
	gone := recall.Key{Project: "q", Session: "only"}
	for _, k := range []recall.Key{idle, busy, sub, gone} {
		mustAppend(t, s, k, item("one").Entry())
	}
	if pt := adminClient(t).PTTL(ctx, s.k.meta(idle)).Val(); pt <= 0 || pt > ttl {
		t.Fatalf("PTTL of a session is %v, want within (0, %v]", pt, ttl)
	}
	// Half the TTL passes, on the server's clock, before busy's second
	// append refreshes its TTL; then idle, sub and gone expire, and busy
	// has about half its TTL left.
	testkit.Eventually(t, 30*time.Second, "half of the TTL has passed", func() bool {
		return adminClient(t).PTTL(ctx, s.k.meta(idle)).Val() <= ttl/2
	})
	mustAppend(t, s, busy, item("two").Entry()) // refreshes busy's TTL
	waitExpired(t, s, idle, sub, gone)
	if pt := adminClient(t).PTTL(ctx, s.k.meta(busy)).Val(); pt <= 0 {
		t.Fatalf("busy, written again half a TTL later, expired with the others (PTTL %v)", pt)
	}

	// idle, its record and gone have expired; their members are still in
	// the indexes, which are cleaned when read.
	if got := zmembers(t, s.k.all("")); len(got) != 3 {
		t.Fatalf("before any read the index holds %d members, want 3 (busy plus 2 expired): %q", len(got), got)
	}
	p, err := s.List(ctx, "", recall.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != 1 || p.Sessions[0].Key != busy || p.Sessions[0].ItemCount != 2 {
		t.Fatalf("List after expiry = %+v, want busy alone with 2 items", p.Sessions)
	}
	busyMember := member(busy)
	for _, idx := range []string{s.k.all(""), s.k.active(""), s.k.all("p"), s.k.active("p")} {
		if got := zmembers(t, idx); !slices.Equal(got, []string{busyMember}) {
			t.Errorf("index %s after List = %q, want only busy's member", idx, got)
		}
	}
	if got := zmembers(t, s.k.all("q")); len(got) != 0 {
		t.Errorf("index of project q still holds %q", got)
	}
	if got := zmembers(t, s.k.prefix+"expiry"); !slices.Equal(got, []string{busyMember}) {
		t.Errorf("expiry index = %q, want only busy's member", got)
	}
	projects, err := recall.Projects(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(projects) != 1 || projects[0].Project != "p" || projects[0].Sessions != 1 {
		t.Fatalf("Projects after expiry = %+v, want p with 1 session", projects)
	}
	if got := zmembers(t, s.k.prefix+"projects"); !slices.Equal(got, []string{"p"}) {
		t.Errorf("project set = %q, want [p]", got)
	}
	for _, k := range []recall.Key{idle, sub, gone} {
		if _, err := s.Stat(ctx, k); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("Stat %s after expiry: %v, want ErrNotFound", k, err)
		}
		if items, _, err := s.Items(ctx, k, 0); err != nil || items != nil {
			t.Errorf("Items %s after expiry = %v, %v; want nothing", k, items, err)
		}
	}
	sp, err := s.List(ctx, "p", recall.ListOptions{Parent: "idle"})
	if err != nil || len(sp.Sessions) != 0 {
		t.Errorf("subagent List after expiry = %+v, %v", sp.Sessions, err)
	}
	// An expired session written again starts a new log.
	if last := mustAppend(t, s, idle, item("again").Entry()); last != 1 {
		t.Errorf("append to an expired session returned seq %d, want 1", last)
	}
	verify(t, s)

	// A store without a TTL writing to the same session makes it permanent.
	forever := New(adminClient(t), Options{Prefix: s.k.prefix})
	mustAppend(t, forever, busy, item("keep").Entry())
	if pt := adminClient(t).PTTL(ctx, s.k.meta(busy)).Val(); pt != -1 {
		t.Errorf("PTTL after an append without TTL = %v, want none (-1)", pt)
	}
	if got := zmembers(t, s.k.prefix+"expiry"); slices.Contains(got, member(busy)) {
		t.Errorf("a permanent session is still in the expiry index: %q", got)
	}
}

// TestExpiryPrunedByWrites checks that expired sessions nobody lists are
// unindexed by later writes, so an index never grows without bound.
func TestExpiryPrunedByWrites(t *testing.T) {
	t.Parallel()
	const ttl = 200 * time.Millisecond
	s := newStore(t, Options{TTL: ttl})
	for i := range 3 {
		mustAppend(t, s, recall.Key{Project: "p", Session: fmt.Sprintf("old%d", i)}, item("x").Entry())
	}
	waitExpired(t, s, recall.Key{Project: "p", Session: "old0"}, recall.Key{Project: "p", Session: "old1"}, recall.Key{Project: "p", Session: "old2"})
	for i := range 2 { // each write prunes up to two expired sessions
		mustAppend(t, s, recall.Key{Project: "p", Session: fmt.Sprintf("new%d", i)}, item("x").Entry())
	}
	for _, m := range zmembers(t, s.k.all("")) {
		if strings.Contains(m, " old") {
			t.Errorf("expired member %q is still indexed after two writes", m)
		}
	}
}

// waitExpired waits until the sessions have expired: their keys are gone
// and their members of the expiry index are due on the server's clock, so
// that the next read or write prunes them.
func waitExpired(t testing.TB, s *Store, keys ...recall.Key) {
	t.Helper()
	ctx := context.Background()
	admin := adminClient(t)
	testkit.Eventually(t, 30*time.Second, "the sessions expire", func() bool {
		for _, k := range keys {
			if n := admin.Exists(ctx, s.k.meta(k), s.k.log(k)).Val(); n != 0 {
				return false
			}
			now, err := admin.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			score, err := admin.ZScore(ctx, s.k.prefix+"expiry", member(k)).Result()
			if err == nil && score > float64(now.UnixMilli()) {
				return false
			}
		}
		return true
	})
}

// TestPrefixIsolation checks that stores on different prefixes share
// nothing, and that removing everything leaves no key behind.
func TestPrefixIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newStore(t, Options{})
	b := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "same"}
	sub := recall.Key{Project: "p", Session: "same", Subpath: "subagents/x"}
	mustAppend(t, a, k, item("from a").Entry())
	mustAppend(t, a, sub, item("a's record").Entry())
	mustAppend(t, b, k, recall.ItemEntries(item("from b"), item("more b"))...)
	mustAppend(t, b, recall.Key{Project: "other", Session: "x"}, item("b only").Entry())

	ia, _, _ := a.Items(ctx, k, 0)
	ib, _, _ := b.Items(ctx, k, 0)
	if len(ia) != 1 || ia[0].Item.Text() != "from a" || len(ib) != 2 || ib[0].Item.Text() != "from b" {
		t.Fatalf("items leak across prefixes: a %v, b %v", ia, ib)
	}
	pa, _ := recall.Projects(ctx, a)
	pb, _ := recall.Projects(ctx, b)
	if len(pa) != 1 || len(pb) != 2 {
		t.Fatalf("projects leak across prefixes: a %+v, b %+v", pa, pb)
	}
	if _, err := b.Stat(ctx, sub); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("b sees a's subagent record: %v", err)
	}
	rep, err := recall.Cleanup(ctx, a, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour), Purge: true})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("cleanup of a = %+v, %v", rep, err)
	}
	if keys := prefixKeys(t, a.k.prefix); len(keys) != 0 {
		t.Errorf("a's prefix still holds keys after everything was removed: %q", keys)
	}
	if m, err := b.Stat(ctx, k); err != nil || m.ItemCount != 2 {
		t.Fatalf("b's session after a's cleanup: %+v, %v", m, err)
	}
	if err := b.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, recall.Key{Project: "other", Session: "x"}); err != nil {
		t.Fatal(err)
	}
	if keys := prefixKeys(t, b.k.prefix); len(keys) != 0 {
		t.Errorf("b's prefix still holds keys after everything was removed: %q", keys)
	}
	if New(adminClient(t), Options{}).k.prefix != DefaultPrefix {
		t.Error("the default prefix is not DefaultPrefix")
	}
}

// TestRemoveLeavesNoKeys removes sessions with records and checks that no
// key or index member survives.
func TestRemoveLeavesNoKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	main := recall.Key{Project: "p", Session: "m"}
	mustAppend(t, s, main, item("x").Entry())
	for _, sp := range []string{"subagents/a", "subagents/b/c"} {
		mustAppend(t, s, recall.Key{Project: "p", Session: "m", Subpath: sp}, item("y").Entry())
	}
	if _, err := recall.NewSession(s, main).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	only := recall.Key{Project: "p", Session: "orphan", Subpath: "subagents/a"} // a record without its main session
	mustAppend(t, s, only, item("z").Entry())
	verify(t, s)
	if err := s.Remove(ctx, recall.Key{Project: "p", Session: "m", Subpath: "subagents/a"}); err != nil {
		t.Fatal(err)
	}
	if got := zmembers(t, s.k.sub(main)); len(got) != 1 || !strings.HasSuffix(got[0], " subagents/b/c") {
		t.Fatalf("record index after removing one record: %q", got)
	}
	if err := s.Remove(ctx, main); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, main); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("second Remove: %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, recall.Key{Project: "p", Session: "orphan"}); err != nil {
		t.Fatalf("Remove of a session that only has a record: %v", err)
	}
	if keys := prefixKeys(t, s.k.prefix); len(keys) != 0 {
		t.Errorf("keys left after removing everything: %q", keys)
	}
}

// TestListOrderAndCursor lists sessions with equal update times across
// projects, page by page, and demands exactly memstore's pages (the
// reference of List order and cursors).
func TestListOrderAndCursor(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Options{})
	ref := memstore.New(memstore.Options{})
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	for _, p := range []string{"b", "a", "a-b", "ab", "a.b"} {
		for _, id := range []string{"x", "x-1", "x1", "X", "y"} {
			n++
			// three sessions in four share a time: ties decided by key
			at := base.Add(time.Duration(n/4) * time.Microsecond)
			e := item(p + id).Entry()
			e.Seq, e.Time = 1, at
			for _, st := range []recall.Store{s, ref} {
				if _, err := st.Import(ctx, recall.Key{Project: p, Session: id}, e); err != nil {
					t.Fatal(err)
				}
			}
			if n%5 == 0 {
				for _, st := range []recall.Store{s, ref} {
					if _, err := st.Import(ctx, recall.Key{Project: p, Session: id}, recall.Entry{Seq: 2, Kind: recall.KindMeta, Time: at, Data: json.RawMessage(`{"archived":true}`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	// subagent records of a/x, with ties and archived ones
	for i, sp := range []string{"subagents/b", "subagents/a", "subagents/a/b", "subagents/a-b", "subagents/c"} {
		at := base.Add(time.Duration(i/2) * time.Microsecond)
		es := []recall.Entry{{Seq: 1, Kind: recall.KindItem, Time: at, Data: json.RawMessage(item(sp))}}
		if i%2 == 0 {
			es = append(es, recall.Entry{Seq: 2, Kind: recall.KindMeta, Time: at, Data: json.RawMessage(`{"archived":true}`)})
		}
		for _, st := range []recall.Store{s, ref} {
			if _, err := st.Import(ctx, recall.Key{Project: "a", Session: "x", Subpath: sp}, es...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// a session that vanished behind the index (as after an eviction)
	// is dropped from the page and from the index, wherever it sits
	if err := adminClient(t).Del(ctx, s.k.meta(recall.Key{Project: "ab", Session: "x1"})).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ref.Remove(ctx, recall.Key{Project: "ab", Session: "x1"}); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{1000, 2} { // 2: every page takes several script calls
		s.scanBudget = budget
		for _, c := range []struct {
			project string
			opts    recall.ListOptions
		}{
			{"", recall.ListOptions{}}, {"", recall.ListOptions{IncludeArchived: true}},
			{"a", recall.ListOptions{}}, {"a", recall.ListOptions{IncludeArchived: true}},
			{"a", recall.ListOptions{Parent: "x"}}, {"a", recall.ListOptions{Parent: "x", IncludeArchived: true}},
		} {
			project := c.project
			for _, limit := range []int{1, 3, 7, -1} {
				opts := c.opts
				opts.Limit = limit
				for page := 0; ; page++ {
					got, err := s.List(ctx, project, opts)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := ref.List(ctx, project, opts)
					if fmt.Sprint(keysOf(got.Sessions)) != fmt.Sprint(keysOf(want.Sessions)) || got.Next != want.Next {
						t.Fatalf("List(%q, %+v) page %d:\n got %v next %q\nwant %v next %q", project, opts, page, keysOf(got.Sessions), got.Next, keysOf(want.Sessions), want.Next)
					}
					if got.Next == "" {
						break
					}
					opts.Cursor = got.Next
				}
			}
		}
	}
	if slices.Contains(zmembers(t, s.k.all("")), "ab x1") {
		t.Error("the vanished session is still indexed after List read past it")
	}
	// A cursor between stored times (finer than a µs) still splits the list right.
	c := storekit.Cursor{Updated: base.Add(2*time.Microsecond + 500*time.Nanosecond), Project: "zzz", Session: "zzz"}
	got, err := s.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true, Cursor: c.String()})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true, Cursor: c.String()})
	if fmt.Sprint(keysOf(got.Sessions)) != fmt.Sprint(keysOf(want.Sessions)) {
		t.Fatalf("List after a sub-µs cursor:\n got %v\nwant %v", keysOf(got.Sessions), keysOf(want.Sessions))
	}
	// Cleanup reads the same index from the cutoff, still in small calls.
	for _, st := range []recall.Store{s, ref} {
		if _, err := st.Import(ctx, recall.Key{Project: "b", Session: "X"}, recall.Entry{Seq: 2, Kind: recall.KindMeta, Time: base, Data: json.RawMessage(`{"pinned":true}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cut := range []time.Time{base.Add(3 * time.Microsecond), base.Add(4*time.Microsecond + time.Nanosecond), base.Add(time.Hour)} {
		for _, dry := range []bool{true, false} {
			opts := recall.CleanupOptions{OlderThan: cut, DryRun: dry}
			got, err := recall.Cleanup(ctx, s, opts)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := recall.Cleanup(ctx, ref, opts)
			if fmt.Sprint(keysOf(got.Removed)) != fmt.Sprint(keysOf(want.Removed)) || got.Kept != want.Kept {
				t.Fatalf("Cleanup(%+v):\n got %v kept %d\nwant %v kept %d", opts, keysOf(got.Removed), got.Kept, keysOf(want.Removed), want.Kept)
			}
		}
	}
	verify(t, s)
	if _, err := s.List(ctx, "", recall.ListOptions{Cursor: "not a cursor"}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("bad cursor: %v, want ErrInvalidKey", err)
	}
}

func keysOf(ms []recall.Meta) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key.String() + "@" + m.Updated.Format(".000000")
	}
	return out
}

// TestTimesOutsideRange checks that an entry time the store cannot order
// exactly is refused before anything is written.
func TestTimesOutsideRange(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{})
	e := item("x").Entry()
	e.Time = time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Append(context.Background(), recall.Key{Project: "p", Session: "s"}, recall.Guard{}, item("ok").Entry(), e); !errors.Is(err, recall.ErrInvalidItem) {
		t.Fatalf("append of a year-1500 entry: %v, want ErrInvalidItem", err)
	}
	if keys := prefixKeys(t, s.k.prefix); len(keys) != 0 {
		t.Fatalf("a refused batch wrote %q", keys)
	}
}

// TestOversizedItem checks that an item over the limit is refused before
// any write, with the configured limit and the default one.
func TestOversizedItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := recall.Key{Project: "p", Session: "s"}
	small := newStore(t, Options{MaxItemSize: 64})
	big := recall.Item(`{"type":"message","content":"` + strings.Repeat("x", 64) + `"}`)
	if _, err := small.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("fine"), big)...); !errors.Is(err, recall.ErrTooLarge) {
		t.Fatalf("append over MaxItemSize: %v, want ErrTooLarge", err)
	}
	if _, err := small.Import(ctx, k, recall.Entry{Seq: 1, Kind: recall.KindItem, Time: time.Now(), Data: json.RawMessage(big)}); !errors.Is(err, recall.ErrTooLarge) {
		t.Fatalf("import over MaxItemSize: %v, want ErrTooLarge", err)
	}
	def := newStore(t, Options{})
	huge := recall.Item(`{"c":"` + strings.Repeat("x", recall.DefaultMaxItemSize) + `"}`)
	if _, err := def.Append(ctx, k, recall.Guard{}, huge.Entry()); !errors.Is(err, recall.ErrTooLarge) || !strings.Contains(err.Error(), "redisstore") {
		t.Fatalf("append over the default limit: %v, want ErrTooLarge naming the store", err)
	}
	for _, s := range []*Store{small, def} {
		if keys := prefixKeys(t, s.k.prefix); len(keys) != 0 {
			t.Fatalf("a refused batch wrote %q", keys)
		}
	}
}

// TestBadURL checks that a wrong or unreachable URL gives one line naming
// the store, with the password redacted.
func TestBadURL(t *testing.T) {
	t.Parallel()
	testURL(t) // some cases need the server
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ url, want string }{
		{"redis://:s3cret@127.0.0.1:1/0", "connection refused"},
		{"redis://bob:s3cret@127.0.0.1:6379/0", "WRONGPASS"},
		{"redis://u:s3cret@[::1", "invalid URL"},
		{"http://u:s3cret@127.0.0.1:6379", "scheme"},
		{"redis://127.0.0.1:6379/99", "DB index"},
		{"redis://:s3cret@127.0.0.1:6379/0?nonsense=1", "unexpected option"},
	} {
		_, err := Open(ctx, tc.url, Options{})
		if err == nil {
			t.Errorf("Open(%q) succeeded", tc.url)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "redisstore: open ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
			t.Errorf("Open(%q) error %q: want one line starting redisstore: open, saying %q, without the password", tc.url, msg, tc.want)
		}
	}
}

// TestConcurrentAppends has writers race on one session: seqs stay dense
// and every item lands exactly once.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "race"}
	const writers, batches = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				n := 1 + b%3
				items := make([]recall.Item, n)
				for i := range items {
					items[i] = item(fmt.Sprintf("w%d-b%d-i%d", w, b, i))
				}
				if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m, entries, err := s.Load(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		txt := recall.Item(e.Data).Text()
		if seen[txt] {
			t.Fatalf("item %s stored twice", txt)
		}
		seen[txt] = true
	}
	want := writers * (batches/3*6 + []int{0, 1, 3}[batches%3])
	if len(seen) != want || m.ItemCount != want {
		t.Fatalf("%d distinct items, count %d; want %d", len(seen), m.ItemCount, want)
	}
	verify(t, s)
}

// TestConcurrentPops pops from many goroutines while others append: no
// item is popped twice and none is lost.
func TestConcurrentPops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "pops"}
	const n = 60
	for i := range n / 2 {
		mustAppend(t, s, k, item(fmt.Sprint("i", i)).Entry())
	}
	var mu sync.Mutex
	popped := map[string]int{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := n / 2; i < n; i++ {
			if _, err := s.Append(ctx, k, recall.Guard{}, item(fmt.Sprint("i", i)).Entry()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 6 {
		wg.Go(func() {
			for range n / 4 {
				it, err := s.Pop(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				if it != nil {
					mu.Lock()
					popped[it.Text()]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	left, _, err := s.Items(ctx, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		popped[l.Item.Text()]++
	}
	for i := range n {
		if c := popped[fmt.Sprint("i", i)]; c != 1 {
			t.Errorf("item i%d popped or left %d times, want once", i, c)
		}
	}
	verify(t, s)
}

// TestRetriedAppendAppliesOnce replays the exact script call of an append,
// as go-redis does after a lost reply: the batch is not written twice.
func TestRetriedAppendAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "retry"}
	mustAppend(t, s, k, item("first").Entry())
	keys, args, err := s.writeArgs(k, modeAppend, -1, recall.Guard{}, stamp(recall.ItemEntries(item("a"), item("b"))))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		last, err := appendScript.Run(ctx, s.rdb, keys, args...).Int64()
		if err != nil || last != 3 {
			t.Fatalf("script run = %d, %v; want 3 both times", last, err)
		}
	}
	mustAppend(t, s, k, item("later").Entry())
	// a retry arriving after another batch still finds its token
	if last, err := appendScript.Run(ctx, s.rdb, keys, args...).Int64(); err != nil || last != 3 {
		t.Fatalf("late retry = %d, %v; want 3", last, err)
	}
	if m, _ := s.Stat(ctx, k); m.LastSeq != 4 || m.ItemCount != 4 {
		t.Fatalf("after retries: last %d, %d items; want 4 and 4", m.LastSeq, m.ItemCount)
	}
	verify(t, s)
}

// TestLongLog reads views that span many chunks of the list.
func TestLongLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "long"}
	for b := range 10 {
		items := make([]recall.Item, 500)
		for i := range items {
			items[i] = item(fmt.Sprint(b*500 + i))
		}
		mustAppend(t, s, k, recall.ItemEntries(items...)...)
	}
	for range 300 {
		if _, err := s.Pop(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	_, entries, err := s.Load(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	_, live := recall.Replay(k, entries)
	for _, limit := range []int{0, 1, 10, 700, 5000} {
		got, _, err := s.Items(ctx, k, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := live
		if limit > 0 && len(want) > limit {
			want = want[len(want)-limit:]
		}
		if len(got) != len(want) || len(got) > 0 && (got[0].Ref != want[0].Ref || got[len(got)-1].Ref != want[len(want)-1].Ref) {
			t.Fatalf("Items(%d): %d items, want %d", limit, len(got), len(want))
		}
	}
	page, err := s.Entries(ctx, k, 4990, 20)
	if err != nil || len(page) != 20 || page[0].Seq != 4991 {
		t.Fatalf("Entries(4990, 20) = %d entries, %v", len(page), err)
	}
	verify(t, s)
}

// TestNoKeyspaceScans records every command the store sends during a
// workload: none is KEYS or SCAN, and the scripts hold neither.
func TestNoKeyspaceScans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o, _ := redis.ParseURL(testURL(t))
	client := redis.NewClient(o)
	defer client.Close()
	var mu sync.Mutex
	var sent []string
	client.AddHook(recorder{func(name string) { mu.Lock(); sent = append(sent, name); mu.Unlock() }})
	s := New(client, Options{Prefix: testPrefix(t), TTL: time.Hour})
	for i := range 5 {
		mustAppend(t, s, recall.Key{Project: "p", Session: fmt.Sprint("s", i)}, item("x").Entry())
	}
	if _, err := s.List(ctx, "", recall.ListOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.Projects(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.Cleanup(ctx, s, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if len(sent) == 0 {
		t.Fatal("the hook saw no command")
	}
	for _, name := range sent {
		if name == "keys" || name == "scan" {
			t.Errorf("the store sent %s", strings.ToUpper(name))
		}
	}
	for _, src := range []string{luaCommon, luaAppend, luaRemove, luaList, luaProjects, luaPrune, luaUpgrade, luaSchema} {
		if strings.Contains(src, "'KEYS'") || strings.Contains(src, "'SCAN'") {
			t.Error("a script calls KEYS or SCAN")
		}
	}
}

type recorder struct{ seen func(string) }

func (r recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.seen(cmd.Name())
		return next(ctx, cmd)
	}
}
func (r recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			r.seen(c.Name())
		}
		return next(ctx, cmds)
	}
}

// TestClosed checks calls after Close.
func TestClosed(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), recall.Key{Project: "p", Session: "s"}, recall.Guard{}, item("x").Entry()); !errors.Is(err, recall.ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}
	if _, err := s.List(context.Background(), "", recall.ListOptions{}); !errors.Is(err, recall.ErrClosed) {
		t.Fatalf("list after Close: %v", err)
	}
}

// TestItemsAcrossRecreation removes and re-creates a session between the
// chunks of one Items read: the read must return the new session's items,
// never a mix of the two logs.
func TestItemsAcrossRecreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	o, _ := redis.ParseURL(testURL(t))
	client := redis.NewClient(o)
	defer client.Close()
	other := New(adminClient(t), Options{Prefix: prefix})
	k := recall.Key{Project: "p", Session: "again"}
	batch := func(tag string, n int) []recall.Entry {
		items := make([]recall.Item, n)
		for i := range items {
			items[i] = item(fmt.Sprint(tag, i))
		}
		return recall.ItemEntries(items...)
	}
	mustAppend(t, other, k, batch("old", 600)...) // more than the first chunk
	var once sync.Once
	client.AddHook(pipelineHook(func(cmds []redis.Cmder) {
		for _, c := range cmds {
			if c.Name() == "hget" { // a later chunk of Items
				once.Do(func() {
					if err := other.Remove(ctx, k); err != nil {
						t.Error(err)
					}
					mustAppend(t, other, k, batch("new", 500)...)
				})
			}
		}
	}))
	s := New(client, Options{Prefix: prefix})
	got, _, err := s.Items(ctx, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	fired := false
	once.Do(func() { fired = true })
	if fired {
		t.Fatal("the read took one chunk; the test did not re-create the session mid-read")
	}
	if len(got) != 500 {
		t.Fatalf("Items across a re-creation returned %d items, want the new session's 500", len(got))
	}
	for i, l := range got {
		if l.Item.Text() != fmt.Sprint("new", i) {
			t.Fatalf("item %d is %q: the read mixed two logs", i, l.Item.Text())
		}
	}
}

// pipelineHook calls before on each transaction or pipeline the client
// sends, before sending it.
type pipelineHook func(cmds []redis.Cmder)

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h(cmds)
		return next(ctx, cmds)
	}
}
