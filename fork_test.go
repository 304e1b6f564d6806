package recall_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// A fork at any seq holds the view of its source at that seq, as a log of
// its own: a fork entry, then one item entry per item, numbered from 1.
func TestForkLogProperty(t *testing.T) {
	now := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		log := logGen(true).Draw(t, "log")
		last := int64(len(log))
		at := rapid.Int64Range(-1, last+1).Draw(t, "atSeq")
		fork, err := storekit.ForkLog(testKey, log, at, now)
		if at > last {
			if !errors.Is(err, recall.ErrNotFound) {
				t.Fatalf("ForkLog past the end (%d > %d) = %v, want ErrNotFound", at, last, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ForkLog at %d: %v", at, err)
		}
		wantAt := at
		if at <= 0 {
			wantAt = last
		}
		var prefix []recall.Entry
		for _, e := range log {
			if e.Seq <= wantAt {
				prefix = append(prefix, e)
			}
		}
		_, want := recall.Replay(testKey, prefix)

		newKey := recall.Key{Project: "p", Session: "fork"}
		meta, got := recall.Replay(newKey, fork)
		if !slices.EqualFunc(recall.PlainItems(got), recall.PlainItems(want), func(a, b recall.Item) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("fork view %v, source view at %d %v", texts(got), wantAt, texts(want))
		}
		if meta.ForkedFrom == nil || *meta.ForkedFrom != (recall.ForkOrigin{Key: testKey, Seq: wantAt}) {
			t.Fatalf("ForkedFrom = %v, want %s@%d", meta.ForkedFrom, testKey, wantAt)
		}
		if meta.ItemCount != len(want) || meta.LastSeq != int64(len(want)+1) {
			t.Fatalf("fork meta: %d items, last seq %d; want %d, %d", meta.ItemCount, meta.LastSeq, len(want), len(want)+1)
		}
		for i, e := range fork {
			if e.Seq != int64(i+1) || !e.Time.Equal(now) {
				t.Fatalf("fork entry %d: seq %d time %v", i, e.Seq, e.Time)
			}
			if (i == 0) != (e.Kind == recall.KindFork) || i > 0 && e.Kind != recall.KindItem {
				t.Fatalf("fork entry %d has kind %q", i, e.Kind)
			}
		}
	})
}

// ForkLog's items are the source's bytes (shared, as documented: a store
// reads its log afresh for a fork), after a fork entry naming the source.
func TestForkLogEntries(t *testing.T) {
	log := numbered(recall.Item(`{"a":1}`).Entry())
	fork, err := storekit.ForkLog(testKey, log, 0, time.Now())
	if err != nil || len(fork) != 2 {
		t.Fatal(fork, err)
	}
	if string(fork[1].Data) != `{"a":1}` || fork[1].Kind != recall.KindItem || fork[1].Seq != 2 {
		t.Errorf("fork item %+v", fork[1])
	}
	var origin recall.ForkOrigin
	if err := json.Unmarshal(fork[0].Data, &origin); err != nil || origin != (recall.ForkOrigin{Key: testKey, Seq: 1}) {
		t.Errorf("fork entry data %s", fork[0].Data)
	}
	// An empty log forks at 0 into a session with only the fork entry.
	empty, err := storekit.ForkLog(testKey, nil, 0, time.Now())
	if err != nil || len(empty) != 1 {
		t.Errorf("ForkLog of an empty log = %v, %v", empty, err)
	}
}

func TestImportPlan(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	e := func(seq int64) recall.Entry {
		return recall.Entry{Seq: seq, Kind: recall.KindItem, Time: t0, Data: json.RawMessage(`{}`)}
	}
	seqs := func(es []recall.Entry) []int64 {
		out := []int64{}
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	ok := []struct {
		last    int64
		entries []recall.Entry
		want    []int64
	}{
		{0, nil, []int64{}},
		{0, []recall.Entry{e(1), e(2)}, []int64{1, 2}},
		{3, []recall.Entry{e(1), e(2), e(3)}, []int64{}},
		{3, []recall.Entry{e(2), e(3), e(4), e(5)}, []int64{4, 5}},
		{3, []recall.Entry{e(4)}, []int64{4}},
		{3, []recall.Entry{e(3), e(1), e(4)}, []int64{4}}, // old ones are skipped wherever they are
	}
	// a purged log starts at a compaction entry that read the seq before it
	comp := func(seq, through int64) recall.Entry {
		c := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: through, Replaced: 2, Items: []recall.Item{recall.Item(`{}`)}})
		c.Seq, c.Time = seq, t0
		return c
	}
	ok = append(ok, []struct {
		last    int64
		entries []recall.Entry
		want    []int64
	}{
		{0, []recall.Entry{comp(5, 4), e(6)}, []int64{5, 6}},
		{6, []recall.Entry{comp(5, 4), e(6), e(7)}, []int64{7}},
		{4, []recall.Entry{comp(5, 4), e(6)}, []int64{5, 6}},
	}...)
	for _, c := range ok {
		got, err := storekit.ImportPlan(c.last, c.entries)
		if err != nil || !slices.Equal(seqs(got), c.want) {
			t.Errorf("ImportPlan(%d, %v) = %v, %v; want %v", c.last, seqs(c.entries), seqs(got), err, c.want)
		}
	}
	noTime := e(4)
	noTime.Time = time.Time{}
	bad := []struct {
		last    int64
		entries []recall.Entry
	}{
		{0, []recall.Entry{e(2)}},
		{3, []recall.Entry{e(5)}},
		{3, []recall.Entry{e(4), e(6)}},
		{3, []recall.Entry{e(5), e(4)}},
		{3, []recall.Entry{e(4), e(4)}},
		{3, []recall.Entry{noTime}},
		{0, []recall.Entry{comp(5, 3)}},       // it did not read the seq before it
		{0, []recall.Entry{e(2), comp(3, 2)}}, // only a compaction entry starts a log past seq 1
		{2, []recall.Entry{comp(5, 4)}},       // an existing session is continued without a gap
		{0, []recall.Entry{{Seq: 5, Kind: recall.KindCompaction, Time: t0, Data: json.RawMessage(`[]`)}}}, // undecodable
	}
	for _, c := range bad {
		if _, err := storekit.ImportPlan(c.last, c.entries); !errors.Is(err, recall.ErrConflict) {
			t.Errorf("ImportPlan(%d, %v) = %v, want ErrConflict", c.last, seqs(c.entries), err)
		}
	}
}

func TestGuardCheck(t *testing.T) {
	cases := []struct {
		name   string
		g      recall.Guard
		exists bool
		last   int64
		want   error // nil, ErrNotFound or ErrConflict
	}{
		{"zero on missing", recall.Guard{}, false, 0, nil},
		{"zero on existing", recall.Guard{}, true, 7, nil},
		{"exists on existing", recall.IfExists(), true, 7, nil},
		{"exists on missing", recall.IfExists(), false, 0, recall.ErrNotFound},
		{"new on missing", recall.IfNew(), false, 0, nil},
		{"new on existing", recall.IfNew(), true, 1, recall.ErrConflict},
		{"seq equal", recall.IfLastSeq(7), true, 7, nil},
		{"seq moved", recall.IfLastSeq(7), true, 8, recall.ErrConflict},
		{"seq behind", recall.IfLastSeq(7), true, 6, recall.ErrConflict},
		{"seq 0 on missing", recall.IfLastSeq(0), false, 0, nil},
		{"seq 0 on existing", recall.IfLastSeq(0), true, 1, recall.ErrConflict},
		{"seq on removed", recall.IfLastSeq(7), false, 0, recall.ErrNotFound},
		{"exists and seq", recall.Guard{Exists: true, CheckSeq: true, LastSeq: 3}, true, 3, nil},
	}
	for _, c := range cases {
		err := c.g.Check(c.exists, c.last)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if !(recall.Guard{}).IsZero() || recall.IfExists().IsZero() {
		t.Error("IsZero")
	}
}
