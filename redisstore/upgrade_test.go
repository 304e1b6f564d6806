package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// writeOldData writes sessions under prefix as the code before schema 2
// left them: the same logs and hashes, but every session's updated time
// (and index score) is its newest entry's time, whatever the kind, no
// first prompt (field fp, schema 3), no index of pinned sessions (schema
// 4), and there is no schema key. It returns the keys written.
func writeOldData(t *testing.T, prefix string) []recall.Key {
	t.Helper()
	ctx := context.Background()
	s := New(adminClient(t), Options{Prefix: prefix})
	t0 := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(e recall.Entry, d time.Duration) recall.Entry { e.Time = t0.Add(d); return e }
	yes := true
	pin := recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes})
	archive := recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes})
	title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser})
	labels := recall.NewEntry(recall.KindMeta, recall.MetaChange{Labels: []string{"l"}})
	long := make([]recall.Entry, 2500) // longer than one upgrade read
	for i := range long {
		long[i] = at(item(fmt.Sprint(i)).Entry(), time.Duration(i)*time.Millisecond)
	}
	logs := []struct {
		key     recall.Key
		entries []recall.Entry
	}{
		// its newest entry is a pin: the old rule moved it past the others
		{recall.Key{Project: "p", Session: "pinned"}, []recall.Entry{at(item("x").Entry(), 0), at(pin, time.Hour)}},
		{recall.Key{Project: "p", Session: "talked"}, []recall.Entry{at(title, 5*time.Minute), at(item("y").Entry(), 10*time.Minute)}},
		{recall.Key{Project: "q", Session: "archived"}, []recall.Entry{at(item("z").Entry(), 20*time.Minute), at(archive, 2*time.Hour)}},
		{recall.Key{Project: "p", Session: "pinned", Subpath: "subagents/a"}, []recall.Entry{at(item("s").Entry(), time.Minute), at(labels, 3*time.Hour)}},
		{recall.Key{Project: "q", Session: "long"}, append(long, at(title, 4*time.Hour))},
	}
	var keys []recall.Key
	for _, l := range logs {
		mustAppend(t, s, l.key, l.entries...)
		newest := slices.MaxFunc(l.entries, func(a, b recall.Entry) int { return a.Time.Compare(b.Time) }).Time.UnixMicro()
		if err := adminClient(t).HSet(ctx, s.k.meta(l.key), "updated", newest).Err(); err != nil {
			t.Fatal(err)
		}
		// schema 3's first prompt: not there before
		if err := adminClient(t).HDel(ctx, s.k.meta(l.key), "fp").Err(); err != nil {
			t.Fatal(err)
		}
		for _, idx := range s.k.indexes(l.key) {
			if err := adminClient(t).ZAddXX(ctx, idx, redis.Z{Score: float64(-newest), Member: member(l.key)}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		keys = append(keys, l.key)
	}
	if err := adminClient(t).Del(ctx, s.k.schema(), s.k.pinned(""), s.k.pinned("p"), s.k.pinned("q")).Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// wantUpgraded checks every session of keys against recall.Replay of its
// log: the hash's updated time, its first prompt and each index score;
// that nothing else changed is Verify's part. The schema key must say
// schemaVersion.
func wantUpgraded(t *testing.T, s *Store, keys []recall.Key) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		m, entries, err := s.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := recall.Replay(k, entries)
		if d := storetest.MetaDiff(m, want, true); d != "" {
			t.Errorf("%s after the upgrade: %s", k, d)
		}
		for _, idx := range s.k.indexes(k) {
			score, err := adminClient(t).ZScore(ctx, idx, member(k)).Result()
			if m.Archived && (idx == s.k.active("") || idx == s.k.active(k.Project)) ||
				!m.Pinned && (idx == s.k.pinned("") || idx == s.k.pinned(k.Project)) {
				if err != redis.Nil {
					t.Errorf("%s (archived %t, pinned %t) is in %s: %v", k, m.Archived, m.Pinned, idx, err)
				}
				continue
			}
			if err != nil || int64(score) != -want.Updated.UnixMicro() {
				t.Errorf("%s in %s: score %v, %v; want -%d", k, idx, score, err, want.Updated.UnixMicro())
			}
		}
	}
	if v := adminClient(t).Get(ctx, s.k.schema()).Val(); v != fmt.Sprint(schemaVersion) {
		t.Errorf("schema key = %q, want %d", v, schemaVersion)
	}
}

// TestUpgradeFromOldData opens data written under the old rule of
// Updated: the first operation recomputes every session's time and index
// score from its log (a session whose newest entry is a pin falls back to
// its last item), so List's order is by conversation activity; the logs
// and everything else are as they were.
func TestUpgradeFromOldData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	keys := writeOldData(t, prefix)
	before := map[recall.Key][]recall.Entry{}
	old := New(adminClient(t), Options{Prefix: prefix})
	old.upgraded.Store(true) // reads the data as it lies, without upgrading it
	for _, k := range keys {
		_, before[k], _ = old.Load(ctx, k)
	}
	p, _ := old.List(ctx, "", recall.ListOptions{IncludeArchived: true})
	if got := fmt.Sprint(keysOf(p.Sessions)); got != "[q/long@.000000 q/archived@.000000 p/pinned@.000000 p/talked@.000000]" {
		t.Fatalf("the old data is not in the old order: %s", got)
	}

	s := newStore(t, Options{Prefix: prefix})
	p, err := s.List(ctx, "", recall.ListOptions{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keysOf(p.Sessions)); got != "[q/archived@.000000 p/talked@.000000 q/long@.499000 p/pinned@.000000]" {
		t.Errorf("List after the upgrade: %s", got)
	}
	if p, _ := s.List(ctx, "p", recall.ListOptions{}); len(p.Sessions) != 2 {
		t.Errorf("List(p) of the active sessions: %v", keysOf(p.Sessions))
	}
	wantUpgraded(t, s, keys)
	for _, k := range keys {
		_, after, _ := s.Load(ctx, k)
		if len(after) != len(before[k]) {
			t.Fatalf("%s: %d entries after the upgrade, %d before", k, len(after), len(before[k]))
		}
		for i := range after {
			if d := storetest.EntryDiff(after[i], before[k][i], true); d != "" {
				t.Fatalf("%s: entry %d changed: %s", k, i, d)
			}
		}
	}
	if ps, err := recall.Projects(ctx, s); err != nil || len(ps) != 2 || !ps[0].Updated.Equal(time.Date(2025, 5, 1, 12, 10, 0, 0, time.UTC)) {
		t.Errorf("Projects after the upgrade = %+v, %v", ps, err)
	}
	verify(t, s)
}

// TestUpgradeByManyAtOnce opens old data from three stores (separate
// clients, as separate processes would) at once, one of them appending to
// the session whose newest entry is a pin: every session ends with the
// time its log gives.
func TestUpgradeByManyAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	keys := writeOldData(t, prefix)
	var stores []*Store
	for range 3 {
		o, _ := redis.ParseURL(testURL(t))
		client := redis.NewClient(o)
		t.Cleanup(func() { _ = client.Close() })
		stores = append(stores, New(client, Options{Prefix: prefix}))
	}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			if i == 0 {
				for n := range 20 {
					if _, err := s.Append(ctx, keys[0], recall.IfExists(), item(fmt.Sprint("more", n)).Entry()); err != nil {
						t.Error(err)
						return
					}
				}
				return
			}
			if _, err := s.List(ctx, "", recall.ListOptions{IncludeArchived: true}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wantUpgraded(t, stores[1], keys)
	verify(t, stores[2])
}

// TestUpgradeWaitsForContext: an upgrade that cannot start because the
// context is done returns its error, and a later call does the upgrade.
func TestUpgradeWaitsForContext(t *testing.T) {
	t.Parallel()
	prefix := testPrefix(t)
	keys := writeOldData(t, prefix)
	s := newStore(t, Options{Prefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Stat(ctx, keys[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stat under a cancelled context = %v", err)
	}
	if v := adminClient(t).Exists(context.Background(), s.k.schema()).Val(); v != 0 {
		t.Fatal("a cancelled call upgraded the data")
	}
	if _, err := s.Stat(context.Background(), keys[0]); err != nil {
		t.Fatal(err)
	}
	wantUpgraded(t, s, keys)
}

// beforeScript is a client hook that calls fn before each script call
// with the given SHA and second to last argument (the upgrade script's
// session member) is sent.
type beforeScript struct {
	sha, last string
	fn        func()
}

func (h beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "evalsha" && len(args) > 1 && args[1] == h.sha && args[len(args)-2] == h.last {
			h.fn()
		}
		return next(ctx, cmd)
	}
}
func (h beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestUpgradeResumesAfterAWrite appends to a session (a pin, then an
// item) between the upgrade's read of its log and its write: the write is
// refused, the upgrade reads the new entries and writes the time the whole
// log gives.
func TestUpgradeResumesAfterAWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	keys := writeOldData(t, prefix)
	writer := New(adminClient(t), Options{Prefix: prefix})
	writer.upgraded.Store(true) // a process that writes meanwhile
	o, _ := redis.ParseURL(testURL(t))
	client := redis.NewClient(o)
	defer client.Close()
	calls := 0
	client.AddHook(beforeScript{sha: upgradeScript.Hash(), last: member(keys[0]), fn: func() {
		calls++
		switch calls {
		case 1:
			if _, err := recall.NewSession(writer, keys[0]).ChangeMeta(ctx, recall.MetaChange{Pinned: new(false)}); err != nil {
				t.Error(err)
			}
		case 2:
			mustAppend(t, writer, keys[0], item("meanwhile").Entry())
		}
	}})
	s := New(client, Options{Prefix: prefix})
	if _, err := s.Stat(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("%d upgrade writes of %s, want 3: two refused, the last one done", calls, keys[0])
	}
	wantUpgraded(t, s, keys)
	verify(t, s)
}

// TestUpgradeIndexesPinned opens data of schema 3, kept before the
// indexes of pinned sessions: the upgrade puts every pinned main session
// in them, so a pinned listing finds those pinned before it too.
func TestUpgradeIndexesPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	old := newStore(t, Options{Prefix: prefix})
	var pinned []recall.Key
	for i := range 12 {
		k := recall.Key{Project: fmt.Sprint("p", i%2), Session: fmt.Sprintf("s%02d", i)}
		mustAppend(t, old, k, item(k.Session).Entry())
		if i%3 == 0 {
			if _, err := recall.NewSession(old, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				t.Fatal(err)
			}
			pinned = append(pinned, k)
		}
	}
	if _, err := recall.NewSession(old, pinned[1]).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	// As schema 3 left it: no pinned indexes.
	if err := adminClient(t).Del(ctx, old.k.pinned(""), old.k.pinned("p0"), old.k.pinned("p1")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := adminClient(t).Set(ctx, old.k.schema(), 3, 0).Err(); err != nil {
		t.Fatal(err)
	}

	s := newStore(t, Options{Prefix: prefix})
	p, err := s.List(ctx, "", recall.ListOptions{Pinned: true, IncludeArchived: true, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var got []recall.Key
	for _, m := range p.Sessions {
		got = append(got, m.Key)
	}
	byName := func(a, b recall.Key) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(got, byName)
	if want := slices.SortedFunc(slices.Values(pinned), byName); !slices.Equal(got, want) {
		t.Errorf("pinned after the upgrade: %v, want %v", got, want)
	}
	if p, err := s.List(ctx, "p1", recall.ListOptions{Pinned: true}); err != nil || len(p.Sessions) != 1 || p.Sessions[0].Key != pinned[3] {
		t.Errorf("pinned of p1, not archived, after the upgrade: %v, %v; want %v", keysOf(p.Sessions), err, pinned[3])
	}
	if v := adminClient(t).Get(ctx, s.k.schema()).Val(); v != fmt.Sprint(schemaVersion) {
		t.Errorf("schema key = %q, want %d", v, schemaVersion)
	}
	verify(t, s)
}

// TestPinnedIndexHeals: a session an older writer unpinned (it keeps no
// pinned index, so the session stays in it) is not listed as pinned, and
// the pinned listing takes it out of both pinned indexes.
func TestPinnedIndexHeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	a := recall.Key{Project: "p", Session: "a"}
	b := recall.Key{Project: "p", Session: "b"}
	for _, k := range []recall.Key{a, b} {
		mustAppend(t, s, k, item(k.Session).Entry())
		if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
			t.Fatal(err)
		}
	}
	// what an older version's unpin leaves: the field, not the indexes
	if err := adminClient(t).HSet(ctx, s.k.meta(a), "pin", "0").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := s.List(ctx, "", recall.ListOptions{Pinned: true, Limit: 1})
	if err != nil || len(p.Sessions) != 1 || p.Sessions[0].Key != b || p.Next != "" {
		t.Fatalf("pinned: %v, next %q, %v; want only %s", keysOf(p.Sessions), p.Next, err, b)
	}
	for _, idx := range []string{s.k.pinned(""), s.k.pinned("p")} {
		if got := zmembers(t, idx); !slices.Equal(got, []string{member(b)}) {
			t.Errorf("%s holds %v, want only %s", idx, got, member(b))
		}
	}
}
