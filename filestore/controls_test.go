package filestore

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// The controls a writer's record carries are those a scan of the log from
// its start finds, after every kind of batch: items, pops, removes (more
// than maxControls of them, once), clears, compactions, and a compaction
// another program wrote that does not decode (the view skips it). Its
// journal line keeps them. And the pages read with them hold the view.
func TestControlsFollowWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Dir: t.TempDir(), Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := recall.Key{Project: "p", Session: "s", Subpath: "agents/a1"}
	l, err := s.locate(key)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	last := int64(0)
	appendAll := func(es ...recall.Entry) {
		t.Helper()
		var err error
		if last, err = s.Append(ctx, key, recall.Guard{}, es...); err != nil {
			t.Fatal(err)
		}
	}
	remove := func() recall.Entry {
		return recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: 1 + rng.Int64N(max(last, 1))})
	}
	item := recall.Message("user", "hi").Entry()
	overCap := false
	for step := range 300 {
		switch op := rng.IntN(12); {
		case op < 5:
			appendAll(item, item)
		case op < 8:
			appendAll(remove(), item)
		case op == 8:
			if _, err := s.Pop(ctx, key); err != nil && step > 0 {
				t.Fatal(err)
			}
		case op == 9 && !overCap:
			overCap = true
			var es []recall.Entry
			for range maxControls + 5 {
				es = append(es, remove())
			}
			appendAll(es...)
		case op == 10:
			if rng.IntN(2) == 0 {
				appendAll(recall.NewEntry(recall.KindClear, nil))
			} else {
				appendAll(recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last, Items: []recall.Item{recall.Message("user", "summary")}}))
			}
		default:
			// another program's compaction that is not one
			e := recall.Entry{Seq: last + 1, Kind: recall.KindCompaction, Time: storekit.Now(), Data: []byte(`"not a compaction"`)}
			line, err := appendLine(nil, e, false)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				continue // no log yet
			}
			f.Write(line)
			f.Close()
			last++
			appendAll(item) // the writer derives the bytes it did not write
		}
		f, st, _, err := openLog(l)
		if err != nil {
			t.Fatal(err)
		}
		// what the process holds, or the journal: a background check of
		// the directory drops what it loaded (see settleDir), and when
		// the journal is long cachedRecord leaves it unread, so it is read
		// here whole
		p := s.project("p")
		rec := s.cachedRecord(p, l.rel, st.Size)
		if rec == nil {
			p.mu.Lock()
			if err := p.refresh(); err != nil {
				t.Fatal(err)
			}
			rec = p.recs[l.rel]
			p.mu.Unlock()
		}
		want, err := derive(ctx, f, key, l.rel, st, nil)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			t.Fatalf("step %d: no record, in the process or the journal", step)
		}
		if rec.st != st {
			t.Fatalf("step %d: the record is of the log at %+v, the log is at %+v", step, rec.st, st)
		}
		if !equalControls(rec.ctl, want.ctl) {
			t.Fatalf("step %d: the writer's controls %+v, a scan's %+v", step, rec.ctl, want.ctl)
		}
		parsed, _, ok := parseRecord(appendRecord(nil, rec)[:len(appendRecord(nil, rec))-1])
		if !ok || !equalControls(parsed.ctl, rec.ctl) {
			t.Fatalf("step %d: the journal line keeps controls %+v, want %+v", step, parsed, rec.ctl)
		}
	}
	if !overCap {
		t.Fatal("the controls never went over the cap")
	}
	_, entries, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	_, view := recall.Replay(key, entries)
	slices.Reverse(view)
	got, _ := pageThrough(t, s, key, 5, false)
	if !slices.EqualFunc(got, view, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref }) {
		t.Fatalf("paged %d items, want %d", len(got), len(view))
	}
}

func equalControls(a, b controlLines) bool {
	return a.known == b.known && slices.Equal(a.lines, b.lines)
}

// A view with more pops and removes than a record keeps is paged from a
// backward read of its controls, and correctly; once a clear starts a new
// view, its pages read the record's lines again.
func TestControlsOverTheCap(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := recall.Key{Project: "p", Session: "s"}
	item := recall.Message("user", "hi").Entry()
	check := func(wantScans int64) {
		t.Helper()
		_, entries, err := s.Load(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		_, view := recall.Replay(key, entries)
		for _, oldest := range []bool{false, true} {
			want := slices.Clone(view)
			if !oldest {
				slices.Reverse(want)
			}
			before := controlScans.Load()
			got, _ := pageThrough(t, s, key, 4, oldest)
			if !slices.EqualFunc(got, want, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref }) {
				t.Fatalf("oldest %v: paged %d items, want %d", oldest, len(got), len(want))
			}
			if scans := controlScans.Load() - before; (scans > 0) != (wantScans > 0) {
				t.Fatalf("oldest %v: %d pages read their controls backwards, want pages that do: %v", oldest, scans, wantScans > 0)
			}
		}
	}
	var es []recall.Entry
	for i := range 2 * maxControls {
		es = append(es, item, item, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: int64(3*i + 1)}))
	}
	if _, err := s.Append(ctx, key, recall.Guard{}, es...); err != nil {
		t.Fatal(err)
	}
	check(1)
	es = []recall.Entry{recall.NewEntry(recall.KindClear, nil), item, item, item}
	last, err := s.Append(ctx, key, recall.Guard{}, es...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, key, recall.Guard{}, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: last - 1})); err != nil {
		t.Fatal(err)
	}
	check(0)
}
