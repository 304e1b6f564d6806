package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testSeqs checks that the store assigns seqs densely from 1, whatever the
// caller put in Seq, and that Append returns the last one.
func testSeqs(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	batch := recall.ItemEntries(msgs("a", 3)...)
	batch[0].Seq, batch[1].Seq, batch[2].Seq = 99, 7, -3 // the store ignores these
	if seq := e.mustAppend(key, batch...); seq != 3 {
		t.Errorf("first batch of 3: Append = %d, want 3", seq)
	}
	if seq := e.mustAdd(key, msgs("b", 2)...); seq != 5 {
		t.Errorf("second batch of 2: Append = %d, want 5", seq)
	}
	if _, err := e.s.Pop(e.ctx, key); err != nil {
		t.Fatalf("Pop: %v", err)
	}
	if err := recall.NewSession(e.s, key).Clear(e.ctx); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "t", recall.TitleUser); err != nil {
		t.Fatalf("SetTitle: %v", err)
	}
	if seq := e.mustAdd(key, msg("c")); seq != 9 {
		t.Errorf("Append after a pop, a clear and a title = %d, want 9", seq)
	}
	m, log := e.mustLoad(key)
	if m.LastSeq != 9 {
		t.Errorf("LastSeq = %d, want 9", m.LastSeq)
	}
	kinds := []recall.Kind{"item", "item", "item", "item", "item", "pop", "clear", "title", "item"}
	for i, ent := range log {
		if ent.Seq != int64(i+1) {
			t.Errorf("entry %d has seq %d, want %d", i, ent.Seq, i+1)
		}
		if i < len(kinds) && ent.Kind != kinds[i] {
			t.Errorf("entry %d has kind %q, want %q", i, ent.Kind, kinds[i])
		}
	}
	if len(log) != len(kinds) {
		t.Errorf("log has %d entries, want %d", len(log), len(kinds))
	}
	// The pop names the item it removed.
	if len(log) > 5 {
		var ref recall.ItemRef
		if err := json.Unmarshal(log[5].Data, &ref); err != nil || ref != (recall.ItemRef{Seq: 5}) {
			t.Errorf("pop entry data %s, want a ref to seq 5", log[5].Data)
		}
	}
	// Item refs point at the entries that hold the items.
	live := e.mustItems(key, 0)
	if len(live) != 1 || live[0].Ref != (recall.ItemRef{Seq: 9}) {
		t.Errorf("Items refs = %v, want [{Seq: 9}]", live)
	}
}

// testTimes checks the times a store records: its own clock when an entry
// carries none, the caller's time when it does, and Created <= Updated.
func testTimes(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("a"))
	m1 := e.mustStat(key)
	if !plausibleTime(m1.Created) || !m1.Updated.Equal(m1.Created) {
		t.Errorf("after one append Created = %v, Updated = %v; want both now", m1.Created, m1.Updated)
	}
	e.mustAdd(key, msg("b"))
	m2 := e.mustStat(key)
	if !m2.Created.Equal(m1.Created) || m2.Updated.Before(m1.Updated) {
		t.Errorf("after a second append Created = %v, Updated = %v; was %v, %v", m2.Created, m2.Updated, m1.Created, m1.Updated)
	}
	_, log := e.mustLoad(key)
	for _, ent := range log {
		if !plausibleTime(ent.Time) {
			t.Errorf("entry %d has time %v, want about now", ent.Seq, ent.Time)
		}
	}
	if len(log) == 2 && log[1].Time.Before(log[0].Time) {
		t.Errorf("entry 2 time %v is before entry 1 time %v", log[1].Time, log[0].Time)
	}

	// A time the caller set is kept, to the microsecond.
	given := msg("given").Entry()
	given.Time = time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)
	e.mustAppend(key, given)
	m3, log := e.mustLoad(key)
	if got := log[len(log)-1].Time; !got.Equal(given.Time) {
		t.Errorf("an entry appended with time %v came back with %v", given.Time, got)
	}
	if !m3.Updated.Equal(given.Time) {
		t.Errorf("Updated = %v, want the newest entry time %v", m3.Updated, given.Time)
	}
}

// testEntries checks paging through the log with after and limit.
func testEntries(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	for i := range 7 {
		e.mustAdd(key, msg("m%d", i))
	}
	_, log := e.mustLoad(key)
	cases := []struct {
		after      int64
		limit      int
		start, end int // log[start:end]
	}{
		{0, 0, 0, 7},
		{-5, 0, 0, 7},
		{0, 3, 0, 3},
		{3, 3, 3, 6},
		{6, 3, 6, 7},
		{7, 3, 7, 7},
		{100, 0, 7, 7},
		{2, -1, 2, 7},
		{0, 100, 0, 7},
	}
	for _, c := range cases {
		got, err := e.s.Entries(e.ctx, key, c.after, c.limit)
		if err != nil {
			t.Errorf("Entries(after %d, limit %d): %v", c.after, c.limit, err)
			continue
		}
		wantLog(t, fmt.Sprintf("Entries(after %d, limit %d)", c.after, c.limit), got, log[c.start:c.end], true)
	}
	// Paging from 0 with a small limit visits the log once, in order.
	var all []recall.Entry
	for after := int64(0); ; {
		page, err := e.s.Entries(e.ctx, key, after, 2)
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
		if len(all) > len(log) {
			t.Fatalf("paging with Entries returns more than %d entries", len(log))
		}
	}
	wantLog(t, "paging with Entries", all, log, true)
}

// testUnknownKind checks that an entry of a kind recall does not know is
// kept in the log and skipped by every reader.
func testUnknownKind(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	future := recall.Entry{Kind: "x-future", Data: []byte(`{"what":"a kind from a newer recall"}`)}
	e.mustAdd(key, msg("a"))
	if seq := e.mustAppend(key, future, msg("b").Entry()); seq != 3 {
		t.Errorf("Append = %d, want 3", seq)
	}
	e.mustAppend(key, recall.Entry{Kind: "x-future"})
	e.wantView(key, []recall.Item{msg("a"), msg("b")})
	m, log := e.mustLoad(key)
	if m.LastSeq != 4 {
		t.Errorf("LastSeq = %d, want 4", m.LastSeq)
	}
	if len(log) == 4 {
		if d := EntryDiff(log[1], recall.Entry{Seq: 2, Kind: "x-future", Data: future.Data}, false); d != "" {
			t.Errorf("unknown entry: %s", d)
		}
		if log[3].Kind != "x-future" {
			t.Errorf("entry 4 kind %q, want x-future", log[3].Kind)
		}
	} else {
		t.Errorf("log has %d entries, want 4", len(log))
	}
	if got, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(got, msg("b")) {
		t.Errorf("Pop = %s, %v; want b", clip(got), err)
	}
}

// testUsage checks that token usage is summed into Meta.Usage.
func testUsage(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	batch := recall.ItemEntries(msgs("a", 3)...)
	batch[0].Usage = &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	batch[2].Usage = &recall.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}
	e.mustAppend(key, batch...)
	more := msg("b").Entry()
	more.Usage = &recall.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}
	e.mustAppend(key, more)
	if _, err := e.s.Pop(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	want := recall.Usage{InputTokens: 111, OutputTokens: 222, TotalTokens: 333}
	if m := e.mustStat(key); m.Usage != want {
		t.Errorf("Usage = %+v, want %+v (popping does not refund tokens)", m.Usage, want)
	}
	p, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(p.Sessions) != 1 {
		t.Fatalf("List = %v, %v", p.Sessions, err)
	}
	if p.Sessions[0].Usage != want {
		t.Errorf("List Usage = %+v, want %+v", p.Sessions[0].Usage, want)
	}
	_, log := e.mustLoad(key)
	if len(log) >= 4 {
		if log[0].Usage == nil || *log[0].Usage != *batch[0].Usage || log[1].Usage != nil && !log[1].Usage.IsZero() {
			t.Errorf("entry usages = %v, %v; want %v, none", log[0].Usage, log[1].Usage, *batch[0].Usage)
		}
	}
}

// importLog is a log as a replica would receive it, with fixed old times.
func importLog() []recall.Entry {
	yes := true
	entries := []recall.Entry{
		msg("i1").Entry(),
		recall.Item(" {\"odd\" : \"spacing\"}\n").Entry(),
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "Imported", Source: recall.TitleUser}),
		msg("i4").Entry(),
		recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes, Labels: []string{"x"}}),
		recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 4}),
		msg("i7").Entry(),
	}
	entries[3].Usage = &recall.Usage{InputTokens: 5, OutputTokens: 6, TotalTokens: 11}
	for i := range entries {
		entries[i].Seq = int64(i + 1)
		entries[i].Time = oldTime(i)
	}
	return entries
}

// testImport checks Import: entries keep their seqs and times, replays are
// idempotent by seq, and overlapping batches add only what is new.
func testImport(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	src := importLog()
	wantMeta, wantLive := recall.Replay(key, src)

	steps := []struct {
		batch []recall.Entry
		last  int64
	}{
		{src[:3], 3},
		{src[:3], 3},  // the same batch again
		{src[:1], 3},  // an old prefix
		{src[1:5], 5}, // overlapping
		{nil, 5},      // nothing
		{src[5:], 7},
		{src, 7}, // everything again
	}
	for i, st := range steps {
		last, err := e.s.Import(e.ctx, key, st.batch...)
		if err != nil || last != st.last {
			t.Errorf("import step %d = %d, %v; want %d, nil", i, last, err, st.last)
		}
	}
	m, log := e.mustLoad(key)
	wantLog(t, "imported log", log, src, true)
	if d := MetaDiff(m, wantMeta, true); d != "" {
		t.Errorf("imported session metadata: %s", d)
	}
	e.wantView(key, recall.PlainItems(wantLive))
	if !m.Created.Equal(oldTime(0)) || !m.Updated.Equal(oldTime(6)) {
		t.Errorf("Created, Updated = %v, %v; want the imported times %v, %v", m.Created, m.Updated, oldTime(0), oldTime(6))
	}

	// Import continues a log that was appended to; seqs decide, not content.
	other := recall.Key{Project: "p", Session: "appended"}
	e.mustAdd(other, msg("local-1"), msg("local-2"))
	batch := imported(1, 10, msg("remote-1").Entry(), msg("remote-2").Entry(), msg("remote-3").Entry())
	if last, err := e.s.Import(e.ctx, other, batch...); last != 3 || err != nil {
		t.Errorf("Import over appended entries = %d, %v; want 3, nil", last, err)
	}
	e.wantView(other, []recall.Item{msg("local-1"), msg("local-2"), msg("remote-3")})
	// and Append continues an imported log
	if seq := e.mustAdd(key, msg("after")); seq != 8 {
		t.Errorf("Append after Import = %d, want 8", seq)
	}

	// An empty import of a missing session writes nothing.
	missing := recall.Key{Project: "p", Session: "missing"}
	if last, err := e.s.Import(e.ctx, missing); last != 0 || err != nil {
		t.Errorf("empty Import of a missing session = %d, %v; want 0, nil", last, err)
	}
	if _, err := e.s.Stat(e.ctx, missing); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("an empty Import created the session: %v", err)
	}
}

// testImportRefused checks that an import with a gap or without times
// fails whole.
func testImportRefused(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	src := importLog()
	if _, err := e.s.Import(e.ctx, key, src[:3]...); err != nil {
		t.Fatal(err)
	}
	before, log := e.mustLoad(key)

	noTime := src[3]
	noTime.Time = time.Time{}
	bad := []struct {
		name  string
		batch []recall.Entry
		want  []error
	}{
		{"a gap after the last seq", src[4:6], []error{recall.ErrConflict}},
		{"a gap inside the batch", []recall.Entry{src[3], src[5]}, []error{recall.ErrConflict}},
		{"seqs out of order", []recall.Entry{src[4], src[3]}, []error{recall.ErrConflict}},
		{"a repeated seq", []recall.Entry{src[3], src[3]}, []error{recall.ErrConflict}},
		{"an entry without a time", []recall.Entry{noTime}, []error{recall.ErrConflict, recall.ErrInvalidItem}},
		{"a bad item after a good one", []recall.Entry{src[3], {Seq: 5, Kind: recall.KindItem, Time: oldTime(1), Data: []byte("[]")}}, []error{recall.ErrInvalidItem}},
	}
	for _, b := range bad {
		_, err := e.s.Import(e.ctx, key, b.batch...)
		if !slices.ContainsFunc(b.want, func(w error) bool { return errors.Is(err, w) }) {
			t.Errorf("Import of %s: got %v, want %v", b.name, err, b.want)
		}
		after, got := e.mustLoad(key)
		if d := MetaDiff(after, before, true); d != "" {
			t.Errorf("refused Import of %s changed the session: %s", b.name, d)
		}
		wantLog(t, "log after a refused Import of "+b.name, got, log, true)
	}

	// A new session's import must start at seq 1 (or at the compaction
	// entry a purged log starts with; see testImportPurged).
	fresh := recall.Key{Project: "p", Session: "fresh"}
	_, err := e.s.Import(e.ctx, fresh, src[1:3]...)
	wantErr(t, "Import into a new session from seq 2", err, recall.ErrConflict)
	if _, err := e.s.Stat(e.ctx, fresh); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("a refused Import created the session: %v", err)
	}
}

// testImportPurged checks that a new session can be imported from a log a
// purge left, which starts at a compaction entry past seq 1: it is stored
// as given, its metadata and view are the original session's, and it
// takes appends, pops and forks like any other.
func testImportPurged(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "purged"}
	yes := true
	summary := recall.Item(`{"type":"message","role":"system","content":"summary of a"}`)
	orig := []recall.Entry{
		msg("a").Entry(),
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "Purged", Source: recall.TitleUser}),
		msg("b").Entry(),
		recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes, Labels: []string{"x"}}),
		compaction(4, 2, summary, msg("b")),
		msg("c").Entry(),
	}
	orig[2].Usage = &recall.Usage{InputTokens: 5, OutputTokens: 6, TotalTokens: 11}
	for i := range orig {
		orig[i].Seq = int64(i + 1)
		orig[i].Time = oldTime(i)
	}
	log, dropped, err := storekit.PurgeLog(key, orig)
	if err != nil || dropped != 4 || log[0].Seq != 5 {
		t.Fatalf("PurgeLog = %d entries from seq %d, %d dropped, %v", len(log), log[0].Seq, dropped, err)
	}
	wantMeta, wantLive := recall.Replay(key, log)

	// the compaction entry alone, then all of it, then all of it again
	for i, st := range []struct {
		batch []recall.Entry
		last  int64
	}{{log[:1], 5}, {log, log[len(log)-1].Seq}, {log, log[len(log)-1].Seq}} {
		last, err := e.s.Import(e.ctx, key, st.batch...)
		if err != nil || last != st.last {
			t.Fatalf("import step %d of a purged log = %d, %v; want %d, nil", i, last, err, st.last)
		}
	}
	m, got := e.mustLoad(key)
	wantLog(t, "imported purged log", got, log, true)
	if d := MetaDiff(m, wantMeta, true); d != "" {
		t.Errorf("imported purged session metadata: %s", d)
	}
	origMeta, origLive := recall.Replay(key, orig)
	if m.Title != origMeta.Title || m.ItemCount != origMeta.ItemCount || !m.Created.Equal(origMeta.Created) || m.Usage != origMeta.Usage || !m.Pinned {
		t.Errorf("imported purged session: %+v; the session before the purge: %+v", m, origMeta)
	}
	if !slices.EqualFunc(recall.PlainItems(wantLive), recall.PlainItems(origLive), func(a, b recall.Item) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("PurgeLog changed the view")
	}
	e.wantView(key, recall.PlainItems(origLive))
	es, err := e.s.Entries(e.ctx, key, 0, 2)
	if err != nil || len(es) != 2 || es[0].Seq != 5 || es[1].Seq != 6 {
		t.Errorf("Entries from the start of a purged log = %d entries (%v)", len(es), err)
	}

	// it goes on like any session
	last := m.LastSeq
	if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, msg("c")) {
		t.Errorf("Pop = %s, %v; want %s", clip(it), err, clip(msg("c")))
	}
	if seq := e.mustAdd(key, msg("d")); seq != last+2 {
		t.Errorf("Append after the import = %d, want %d", seq, last+2)
	}
	e.wantView(key, []recall.Item{summary, msg("b"), msg("d")})
	fork := recall.Key{Project: "p", Session: "fork"}
	if _, err := recall.NewSession(e.s, key).Fork(e.ctx, 0, fork); err != nil {
		t.Fatalf("Fork of an imported purged session: %v", err)
	}
	e.wantView(fork, []recall.Item{summary, msg("b"), msg("d")})
}

// compaction returns a compaction entry over a log read at seq through.
func compaction(through int64, replaced int, items ...recall.Item) recall.Entry {
	return recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: through, Replaced: replaced, Items: items, Strategy: "storetest"})
}

// mustCompact appends a compaction of key read at seq through, guarded by
// recall.IfLastSeq(through) as a compactor writes it, and fails the test on
// error.
func (e *env) mustCompact(key recall.Key, through int64, replaced int, items ...recall.Item) int64 {
	e.t.Helper()
	seq, err := e.s.Append(e.ctx, key, recall.IfLastSeq(through), compaction(through, replaced, items...))
	if err != nil {
		e.t.Fatalf("compaction of %s through %d: %v", key, through, err)
	}
	return seq
}

// testCompaction checks a compaction written as a compactor writes it,
// guarded by recall.IfLastSeq(through) (a stale guard is ErrConflict and
// writes nothing), and the view after one: the snapshot, then later items;
// pops reach into the snapshot.
func testCompaction(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	it := msgs("m", 5)
	e.mustAdd(key, it...)         // seqs 1-5
	_, err := e.s.Pop(e.ctx, key) // seq 6
	e.must(err)
	summary := recall.Item(`{"type":"message","role":"system","content":"summary of m-0..m-2"}`)
	before, log := e.mustLoad(key)

	for _, stale := range []int64{5, 0, 7, -1} {
		_, err := e.s.Append(e.ctx, key, recall.IfLastSeq(stale), compaction(stale, 4, summary, it[3]))
		wantErr(t, fmt.Sprintf("compaction guarded at %d when the log is at 6", stale), err, recall.ErrConflict)
	}
	// A stale guard on a batch with items and a compaction writes none of
	// them.
	_, err = e.s.Append(e.ctx, key, recall.IfLastSeq(5), msg("x").Entry(), compaction(5, 4, summary))
	wantErr(t, "a batch holding a stale compaction", err, recall.ErrConflict)
	after, got := e.mustLoad(key)
	if d := MetaDiff(after, before, true); d != "" {
		t.Errorf("refused compactions changed the session: %s", d)
	}
	wantLog(t, "log after refused compactions", got, log, true)
	e.wantView(key, it[:4])

	if seq := e.mustCompact(key, 6, 4, summary, it[3]); seq != 7 {
		t.Errorf("compaction Append = %d, want 7", seq)
	}
	e.wantView(key, []recall.Item{summary, it[3]})
	live := e.mustItems(key, 0)
	if want := []recall.ItemRef{{Seq: 7}, {Seq: 7, Index: 1}}; len(live) != 2 || live[0].Ref != want[0] || live[1].Ref != want[1] {
		t.Errorf("refs after compaction = %v, want %v", live, want)
	}

	later := msgs("later", 2)
	e.mustAdd(key, later...)
	e.wantView(key, []recall.Item{summary, it[3], later[0], later[1]})
	if m := e.mustStat(key); m.ItemCount != 4 || m.LastSeq != 9 {
		t.Errorf("ItemCount, LastSeq = %d, %d; want 4, 9", m.ItemCount, m.LastSeq)
	}

	// Pops go back through the later items into the snapshot.
	for _, want := range []recall.Item{later[1], later[0], it[3], summary} {
		got, err := e.s.Pop(e.ctx, key)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Pop = %s, %v; want %s", clip(got), err, clip(want))
		}
	}
	if got, err := e.s.Pop(e.ctx, key); got != nil || err != nil {
		t.Errorf("Pop of an emptied compacted session = %s, %v; want nil, nil", clip(got), err)
	}
	e.wantView(key, nil)

	// A second compaction over the first, then a clear.
	e.mustAdd(key, later...)
	m := e.mustStat(key)
	e.mustCompact(key, m.LastSeq, 2, summary)
	e.wantView(key, []recall.Item{summary})
	if err := recall.NewSession(e.s, key).Clear(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.wantView(key, nil)

	// Through is a record, not a hidden guard: the store checks only the
	// Guard it is given, so a compaction appended without one is written
	// whatever its Through says (a replica receives it that way).
	m = e.mustStat(key)
	if seq, err := e.s.Append(e.ctx, key, recall.Guard{}, compaction(m.LastSeq-3, 0, summary)); err != nil || seq != m.LastSeq+1 {
		t.Errorf("an unguarded compaction with an old Through = %d, %v; want %d, nil", seq, err, m.LastSeq+1)
	}
	e.wantView(key, []recall.Item{summary})
}
