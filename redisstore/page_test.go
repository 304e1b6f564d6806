package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// wantControls checks key's control record against its log: the record
// holds the seqs of the view's pops and removals (those whose ref
// decodes), after the clear or usable compaction the view starts at, which
// it holds first; the hash field ctl says it covers the last seq; and it
// expires with the session. A missing session has no record.
func wantControls(t *testing.T, s *Store, key recall.Key) {
	t.Helper()
	ctx := context.Background()
	rdb := adminClient(t)
	got, err := rdb.LRange(ctx, s.k.ctl(key), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	h := rdb.HMGet(ctx, s.k.meta(key), "last", "ctl").Val()
	if h[0] == nil {
		if len(got) != 0 {
			t.Fatalf("%s is gone, yet its control record is %v", key, got)
		}
		return
	}
	_, entries, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range slices.Backward(entries) {
		switch e.Kind {
		case recall.KindPop, recall.KindRemove:
			if json.Unmarshal(e.Data, new(recall.ItemRef)) == nil {
				want = append(want, strconv.FormatInt(e.Seq, 10))
			}
			continue
		case recall.KindCompaction:
			if json.Unmarshal(e.Data, new(recall.Compaction)) != nil {
				continue
			}
		case recall.KindClear:
		default:
			continue
		}
		want = append(want, strconv.FormatInt(e.Seq, 10))
		break
	}
	slices.Reverse(want)
	if !slices.Equal(got, want) || h[1] != h[0] {
		t.Fatalf("%s: control record %v covering seq %v, want %v covering %v", key, got, h[1], want, h[0])
	}
	if len(got) > 0 {
		mt, ct := rdb.PTTL(ctx, s.k.meta(key)).Val(), rdb.PTTL(ctx, s.k.ctl(key)).Val()
		if (mt < 0) != (ct < 0) || ct > mt+time.Second || ct < mt-time.Minute {
			t.Fatalf("%s: the control record expires in %v, the session in %v", key, ct, mt)
		}
	}
}

// wantPages reads the whole view of key with ReadItems, in both orders,
// and compares it with Items. (The conformance model pages views with
// cursors.)
func wantPages(t *testing.T, s *Store, key recall.Key) {
	t.Helper()
	ctx := context.Background()
	view, last, err := s.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, oldest := range []bool{false, true} {
		want := slices.Clone(view)
		if !oldest {
			slices.Reverse(want)
		}
		page, err := s.ReadItems(ctx, key, recall.ItemPageOptions{Oldest: oldest})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(refsOf(page.Items)); got != fmt.Sprint(refsOf(want)) || page.LastSeq != last || page.More {
			t.Fatalf("%s: ReadItems(oldest %v) = %s, LastSeq %d, More %v; want %v, LastSeq %d", key, oldest, got, page.LastSeq, page.More, refsOf(want), last)
		}
	}
}

func refsOf(live []recall.LiveItem) []recall.ItemRef {
	var out []recall.ItemRef
	for _, l := range live {
		out = append(out, l.Ref)
	}
	return out
}

func compaction(through int64, items ...recall.Item) recall.Entry {
	return recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: through, Items: items})
}

// TestControlRecord checks the control record after each kind of write:
// items, a pop, a removal, a clear, a compaction, an import (of a purged log, which starts at a compaction), a fork, a TTL,
// a removal of the session and of a subagent record, and a session
// created where a leftover record lay.
func TestControlRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{TTL: time.Hour})
	k := recall.Key{Project: "p", Session: "ctl"}
	sub := recall.Key{Project: "p", Session: "ctl", Subpath: "subagents/a"}
	check := func(keys ...recall.Key) {
		t.Helper()
		for _, key := range keys {
			wantControls(t, s, key)
			wantPages(t, s, key)
		}
	}

	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"), item("c"), item("d"))...)
	check(k)
	if _, err := s.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	check(k)
	if _, err := recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: 2}); err != nil {
		t.Fatal(err)
	}
	check(k)
	last := mustAppend(t, s, k, item("e").Entry())
	// one batch: a pop, a compaction that starts the record again, a pop
	mustAppend(t, s, k, recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: last}), compaction(last+1, item("s1"), item("s2")),
		item("f").Entry(), recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: last + 2, Index: 1}))
	check(k)
	if err := recall.NewSession(s, k).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	check(k)
	mustAppend(t, s, k, recall.ItemEntries(item("g"), item("h"))...)
	if _, err := s.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	check(k)

	// a subagent record, popped; a fork of the session
	mustAppend(t, s, sub, recall.ItemEntries(item("x"), item("y"))...)
	if _, err := s.Pop(ctx, sub); err != nil {
		t.Fatal(err)
	}
	fork := recall.Key{Project: "p", Session: "fork"}
	if _, err := s.Fork(ctx, k, 0, fork); err != nil {
		t.Fatal(err)
	}
	check(sub, fork)

	// an import of a purged log: it starts at a compaction, then a pop
	imp := recall.Key{Project: "p", Session: "imported"}
	t0 := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(seq int64, e recall.Entry) recall.Entry {
		e.Seq, e.Time = seq, t0.Add(time.Duration(seq)*time.Second)
		return e
	}
	if _, err := s.Import(ctx, imp, at(10, compaction(9, item("i1"), item("i2"))), at(11, item("i3").Entry()),
		at(12, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: 10}))); err != nil {
		t.Fatal(err)
	}
	check(imp)
	if _, err := s.Import(ctx, imp, at(13, recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 11}))); err != nil {
		t.Fatal(err)
	}
	check(imp)

	// Remove takes the records of the session and of its subagent records.
	if err := s.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	for _, key := range []recall.Key{k, sub} {
		if n := adminClient(t).Exists(ctx, s.k.ctl(key)).Val(); n != 0 {
			t.Fatalf("Remove left the control record of %s", key)
		}
	}
	// A record left behind (of a session that expired, say) is not the
	// new session's.
	if err := adminClient(t).RPush(ctx, s.k.ctl(k), "1", "2").Err(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, k, recall.ItemEntries(item("new"))...)
	check(k)
	if _, err := s.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	check(k, fork, imp)

	// Without a TTL, the next append makes the record persist too.
	s2 := New(adminClient(t), Options{Prefix: s.k.prefix})
	mustAppend(t, s2, k, item("kept").Entry())
	check(k)
	verify(t, s)
}

// writePreviousData writes sessions as the version before the control
// record left them: no record, no hash field ctl. It returns the keys.
func writePreviousData(t *testing.T, s *Store) []recall.Key {
	t.Helper()
	ctx := context.Background()
	keys := []recall.Key{
		{Project: "p", Session: "items"},
		{Project: "p", Session: "popped"},
		{Project: "p", Session: "compacted"},
		{Project: "p", Session: "compacted", Subpath: "subagents/a"},
	}
	mustAppend(t, s, keys[0], recall.ItemEntries(item("a"), item("b"))...)
	mustAppend(t, s, keys[1], recall.ItemEntries(item("a"), item("b"), item("c"))...)
	for range 2 {
		if _, err := s.Pop(ctx, keys[1]); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, s, keys[2], recall.ItemEntries(item("a"), item("b"))...)
	mustAppend(t, s, keys[2], recall.Entry{Kind: recall.KindClear}, item("c").Entry(), recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 4}))
	mustAppend(t, s, keys[2], compaction(5, item("s")), item("d").Entry())
	if _, err := recall.NewSession(s, keys[2]).RemoveItem(ctx, recall.ItemRef{Seq: 6, Index: 0}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, keys[3], recall.ItemEntries(item("x"), item("y"))...)
	if _, err := s.Pop(ctx, keys[3]); err != nil {
		t.Fatal(err)
	}
	forget(t, s, keys...)
	return keys
}

// forget removes keys' control records and their hash fields ctl, as a
// writer of the version before the record leaves a session.
func forget(t *testing.T, s *Store, keys ...recall.Key) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		if err := adminClient(t).Del(ctx, s.k.ctl(k)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := adminClient(t).HDel(ctx, s.k.meta(k), "ctl").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestControlRecordOfPreviousData opens sessions written before the
// control record: ReadItems reads their controls from the log, writes the
// record, and later writes keep it. A pop by an older writer on a session
// that has its record (simulated: the pop's seq left out of the record,
// the field ctl behind) makes the record stale: an append by this version
// leaves it so, the next page rebuilds it, and a clear starts it again.
func TestControlRecordOfPreviousData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{TTL: time.Hour})
	keys := writePreviousData(t, s)
	for _, k := range keys {
		wantPages(t, s, k)
		wantControls(t, s, k)
		if _, err := s.Pop(ctx, k); err != nil {
			t.Fatal(err)
		}
		wantControls(t, s, k)
		wantPages(t, s, k)
	}

	k := keys[1]
	mustAppend(t, s, k, recall.ItemEntries(item("o1"), item("o2"), item("o3"))...)
	// an older writer's pop
	last, err := s.Stat(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	rdb := adminClient(t)
	if err := rdb.RPop(ctx, s.k.ctl(k)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, s.k.meta(k), "ctl", last.LastSeq).Err(); err != nil {
		t.Fatal(err)
	}
	// this version's pop leaves the stale record as it is
	if _, err := s.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	if v := rdb.HGet(ctx, s.k.meta(k), "ctl").Val(); v != strconv.FormatInt(last.LastSeq, 10) {
		t.Fatalf("an append moved the field ctl of a stale record to %s", v)
	}
	wantPages(t, s, k)
	wantControls(t, s, k)

	forget(t, s, k)
	if err := recall.NewSession(s, k).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	wantControls(t, s, k)
	verify(t, s)
}

// TestReadItemsChecks: an invalid key is refused as Items refuses it, a
// missing session is an empty page, a closed store says so.
func TestReadItemsChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	bad := recall.Key{Project: "p", Session: "a b"}
	_, _, ierr := s.Items(ctx, bad, 0)
	if _, err := s.ReadItems(ctx, bad, recall.ItemPageOptions{}); err == nil || storetest.ErrorClass(err) != storetest.ErrorClass(ierr) {
		t.Fatalf("ReadItems of an invalid key = %v, Items says %v", err, ierr)
	}
	page, err := s.ReadItems(ctx, recall.Key{Project: "p", Session: "none"}, recall.ItemPageOptions{Limit: 3})
	if err != nil || len(page.Items) != 0 || page.More || page.LastSeq != 0 {
		t.Fatalf("ReadItems of a missing session = %+v, %v", page, err)
	}
	_ = s.Close()
	if _, err := s.ReadItems(ctx, recall.Key{Project: "p", Session: "none"}, recall.ItemPageOptions{}); !errors.Is(err, recall.ErrClosed) {
		t.Fatalf("ReadItems after Close = %v", err)
	}
}

// countReplies is a client hook that adds up the values of the replies of
// list reads and script calls: the log elements a store reads.
type countReplies struct{ n *int64 }

func (h countReplies) add(cmds ...redis.Cmder) {
	for _, c := range cmds {
		switch c := c.(type) {
		case *redis.StringSliceCmd:
			*h.n += int64(len(c.Val()))
		case *redis.Cmd:
			if v, ok := c.Val().([]any); ok {
				*h.n += int64(len(v))
			}
		}
	}
}

func (h countReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.add(cmd)
		return err
	}
}
func (h countReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.add(cmds...)
		return err
	}
}

// TestReadItemsReadsThePage counts what ReadItems reads of sessions of
// 200 and 20,000 items with a few pops and removals (BenchmarkReadItems'
// sessions): for the first, a middle and the last page, both orders, the
// values it reads follow the page and the controls (a few dozen), about
// the same for both lengths, and the pages are right.
func TestReadItemsReadsThePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 20
	prefix := testPrefix(t)
	o, err := redis.ParseURL(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(o)
	defer client.Close()
	var read int64
	client.AddHook(countReplies{&read})
	s := New(client, Options{Prefix: prefix})
	reads := map[string]int64{}
	for _, n := range []int{200, 20000} {
		k, view := pageSession(t, s, n)
		for _, p := range pagePlaces(view, limit) {
			read = 0
			page, err := s.ReadItems(ctx, k, p.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(view[p.at : p.at+limit])
			if !p.opts.Oldest {
				slices.Reverse(want)
			}
			if fmt.Sprint(refsOf(page.Items)) != fmt.Sprint(refsOf(want)) {
				t.Fatalf("%d/%s: ReadItems read %v, want %v", n, p.name, refsOf(page.Items), refsOf(want))
			}
			t.Logf("%d/%s: %d values read", n, p.name, read)
			if read > 4*limit {
				t.Errorf("%d/%s: ReadItems read %d values for a page of %d", n, p.name, read, limit)
			}
			if n == 200 {
				reads[p.name] = read
			} else if read > reads[p.name]+limit/2 {
				t.Errorf("%s: ReadItems read %d values of a session of %d items, %d of one of 200", p.name, read, n, reads[p.name])
			}
		}
	}
}

// beforePipeline is a client hook that calls fn before each pipeline
// that reads a list (a ReadItems' later read of the log) is sent.
type beforePipeline struct{ fn func() }

func (h beforePipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h beforePipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h beforePipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "lrange" }) {
			h.fn()
		}
		return next(ctx, cmds)
	}
}

// TestReadItemsSnapshot writes between a page's first read and its later
// reads of the log (a whole view of 600 items takes several): a clear, a
// compaction, items, pops and removals leave the page as it was at the
// first read; the session removed and created again makes the page start
// over and read the new one.
func TestReadItemsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := testPrefix(t)
	writer := New(adminClient(t), Options{Prefix: prefix})
	o, err := redis.ParseURL(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(o)
	defer client.Close()
	var meanwhile func()
	client.AddHook(beforePipeline{func() {
		if f := meanwhile; f != nil {
			meanwhile = nil
			f()
		}
	}})
	s := New(client, Options{Prefix: prefix})
	k := recall.Key{Project: "p", Session: "snap"}
	items := make([]recall.Item, 600)
	for i := range items {
		items[i] = item(fmt.Sprint(i))
	}
	write := func(entries ...recall.Entry) func() {
		return func() {
			if _, err := writer.Append(ctx, k, recall.Guard{}, entries...); err != nil {
				t.Error(err)
			}
		}
	}
	cases := []struct {
		name      string
		meanwhile func()
		recreated bool
	}{
		{"clear", write(recall.Entry{Kind: recall.KindClear}, item("x").Entry(), item("y").Entry(),
			recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 603})), false},
		{"compaction", write(recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: 5}), compaction(602, item("s")),
			item("x").Entry(), recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 603})), false},
		{"pops", write(recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: 5}), recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 599})), false},
		{"recreated", func() {
			if err := writer.Remove(ctx, k); err != nil {
				t.Error(err)
			}
			write(recall.ItemEntries(items[:300]...)...)()
		}, true},
	}
	for _, oldest := range []bool{false, true} {
		for _, c := range cases {
			_ = writer.Remove(ctx, k)
			mustAppend(t, writer, k, recall.ItemEntries(items...)...)
			if _, err := writer.Pop(ctx, k); err != nil {
				t.Fatal(err)
			}
			view, last, err := writer.Items(ctx, k, 0)
			if err != nil {
				t.Fatal(err)
			}
			meanwhile = c.meanwhile
			page, err := s.ReadItems(ctx, k, recall.ItemPageOptions{Oldest: oldest})
			if err != nil {
				t.Fatal(err)
			}
			if meanwhile != nil {
				t.Fatalf("%s, oldest %v: ReadItems read the log in one call", c.name, oldest)
			}
			if c.recreated {
				if view, last, err = writer.Items(ctx, k, 0); err != nil || len(view) != 300 {
					t.Fatalf("the session created again has %d items, %v", len(view), err)
				}
			}
			want := slices.Clone(view)
			if !oldest {
				slices.Reverse(want)
			}
			if fmt.Sprint(refsOf(page.Items)) != fmt.Sprint(refsOf(want)) || page.LastSeq != last || page.More {
				t.Fatalf("%s, oldest %v: ReadItems read %d items, last %d; want %d, last %d", c.name, oldest, len(page.Items), page.LastSeq, len(want), last)
			}
		}
	}
}
