package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// storeOf makes the one store a model-based test reuses for every
// sequence, closed (and checked to close) when the test ends.
func storeOf(t *testing.T, newStore func(t *testing.T) recall.Store) recall.Store {
	t.Helper()
	sut := newStore(t)
	if sut == nil {
		t.Fatal("storetest: newStore returned nil")
	}
	t.Cleanup(func() {
		if err := sut.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sut
}

// RunModel is the model-based test: rapid draws random sequences of
// operations (appends with and without a guard, empty and bad batches,
// pop, clear, create, titles, archive, pin, labels, metadata set and
// merged, item removal, fork, remove, import, compaction, list pages,
// projects, cleanup, item and entry reads) and runs each against the store
// under test and against a reference: a plain log per session that the
// test keeps itself, whose metadata and view are what recall.Replay
// derives from it. Every observable result must agree: returned seqs and
// items, error classes (see [ErrorClass]), each session's log, metadata
// (times aside) and view with its LastSeq, list membership, cleanup
// reports. The store under test must also keep List order by its own
// times and pass storekit.Verify after every sequence.
//
// RunModel makes one store with newStore and reuses it for every sequence:
// it removes the sessions a sequence may have created before the next one
// starts, so a store that is costly to create is created once. The number
// of sequences is rapid's (-rapid.checks, default 100; a fifth of that
// with -short); each sequence runs at most 30 operations on 2 projects of 3
// sessions with 2 subagent records each. On failure rapid shrinks the
// sequence and prints the steps.
func RunModel(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	sut := storeOf(t, newStore)
	rapid.Check(t, func(rt *rapid.T) {
		m := &model{t: rt, ctx: rt.Context(), sut: sut, logs: map[recall.Key][]recall.Entry{}}
		m.reset()
		// Start from a few old sessions, imported with times the model
		// controls: they tie on Updated and fall before cleanup cutoffs.
		for range rapid.IntRange(0, 4).Draw(rt, "imported") {
			m.do("import")
		}
		for range rapid.IntRange(1, maxModelOps).Draw(rt, "ops") {
			m.do(rapid.SampledFrom(modelOps).Draw(rt, "op"))
			// Listings are cheap and every operation may change them;
			// small pages put ties on page boundaries.
			m.compareList("", recall.ListOptions{Limit: 2})
			m.compareList("", recall.ListOptions{Limit: 3, IncludeArchived: true})
			m.compareList("", recall.ListOptions{Limit: 1, Pinned: true})
			m.compareList(modelProjects[0], recall.ListOptions{Limit: 2, IncludeArchived: true, Pinned: true})
		}
		m.compareAll()
		if err := storekit.Verify(m.ctx, sut); err != nil {
			rt.Fatalf("storekit.Verify of the store under test: %v", err)
		}
	})
}

// maxModelOps bounds the length of one sequence.
const maxModelOps = 30

// modelOps are the operations the model draws from; a name listed twice is
// drawn twice as often.
var modelOps = []string{
	"append", "append", "append", "appendGuarded", "appendGuarded", "appendInvalid",
	"pop", "pop", "clear", "create", "title", "meta", "meta", "metadata", "metadata",
	"removeItem", "removeItem", "fork", "fork", "remove", "import", "import",
	"compact", "list", "projects", "cleanup", "cleanup", "items", "entries",
	"readItems", "readItems", "trash", "restore",
}

// The key space of the model: small, so operations collide.
var (
	modelProjects = []string{"p1", "p2"}
	modelSessions = []string{"a", "b", "c"}
	modelSubpaths = []string{"subagents/x", "subagents/y"}
)

// modelKeys returns every key of the model, main sessions first.
func modelKeys() []recall.Key {
	var mains, subs []recall.Key
	for _, p := range modelProjects {
		for _, s := range modelSessions {
			mains = append(mains, recall.Key{Project: p, Session: s})
			for _, sub := range modelSubpaths {
				subs = append(subs, recall.Key{Project: p, Session: s, Subpath: sub})
			}
		}
	}
	return append(mains, subs...)
}

// model runs one sequence against the store under test (sut) and the
// reference logs.
type model struct {
	t    *rapid.T
	ctx  context.Context
	sut  recall.Store
	logs map[recall.Key][]recall.Entry // the reference: every session's log
	next int                           // numbers items so that each is distinct
}

// reset removes everything an earlier sequence may have left in sut, then
// checks that sut is as empty as the new reference.
func (m *model) reset() {
	keys := modelKeys()
	for i := len(keys) - 1; i >= 0; i-- { // records first, then sessions
		if err := m.sut.Remove(m.ctx, keys[i]); err != nil && !errors.Is(err, recall.ErrNotFound) {
			m.t.Fatalf("reset: Remove %s: %v", keys[i], err)
		}
	}
	m.compareAll()
}

// do runs one operation on the store under test and the reference, and
// compares the outcome.
func (m *model) do(op string) {
	t := m.t
	switch op {
	case "append":
		key := m.anyKey()
		m.appendWith(key, recall.Guard{}, m.itemEntries(rapid.IntRange(1, 3).Draw(t, "n")))

	case "appendGuarded":
		key := m.anyKey()
		last := m.lastSeq(key)
		guard := rapid.SampledFrom([]recall.Guard{
			recall.IfExists(), recall.IfNew(), recall.IfLastSeq(last), recall.IfLastSeq(last),
			recall.IfLastSeq(last - 1), recall.IfLastSeq(last + 1), {Exists: true, CheckSeq: true, LastSeq: last},
		}).Draw(t, "guard")
		m.appendWith(key, guard, m.itemEntries(rapid.IntRange(0, 2).Draw(t, "n")))

	case "appendInvalid":
		key := m.anyKey()
		bad := rapid.SampledFrom(InvalidItems()).Draw(t, "bad")
		entries := recall.ItemEntries(m.item(), bad)
		_, err := m.sut.Append(m.ctx, key, recall.Guard{}, entries...)
		m.wantClass("Append with a bad item to "+key.String(), err, "ErrInvalidItem")
		m.compare(key)

	case "pop":
		key := m.anyKey()
		got, err := m.sut.Pop(m.ctx, key)
		m.wantClass("Pop "+key.String(), err, "nil")
		var want recall.Item
		if _, live, _ := m.refMeta(key); len(live) > 0 {
			newest := live[len(live)-1]
			want = newest.Item
			m.write(key, recall.NewEntry(recall.KindPop, newest.Ref))
		}
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("Pop %s = %s, want %s", key, clip(got), clip(want))
		}
		m.compare(key)

	case "clear":
		key := m.anyKey()
		m.wantClass("Clear "+key.String(), recall.NewSession(m.sut, key).Clear(m.ctx), "nil")
		if _, ok := m.refLog(key); ok {
			m.write(key, recall.Entry{Kind: recall.KindClear})
		}
		m.compare(key)

	case "create":
		key := m.anyKey()
		opts := recall.CreateOptions{
			Title: rapid.SampledFrom([]string{"", "", "Created", " two\nlines "}).Draw(t, "title"),
		}
		if rapid.Bool().Draw(t, "withMetadata") {
			opts.Metadata = map[string]string{"k1": "x", "k2": "y"}
		}
		for range rapid.IntRange(0, 2).Draw(t, "items") {
			opts.Items = append(opts.Items, m.item())
		}
		want := "ErrConflict"
		if _, ok := m.refLog(key); !ok {
			want = "nil"
			entries := []recall.Entry{{Kind: recall.KindCreate}}
			if opts.Title != "" {
				entries = append(entries, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: foldTitle(opts.Title), Source: recall.TitleUser}))
			}
			if opts.Metadata != nil {
				entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: pointersOf(opts.Metadata)}))
			}
			m.write(key, append(entries, recall.ItemEntries(opts.Items...)...)...)
		}
		got, err := recall.NewSession(m.sut, key).Create(m.ctx, opts)
		m.wantMeta("Create", key, got, err, want)

	case "title":
		key := m.anyKey()
		title := rapid.SampledFrom([]string{"", "Alpha", "Beta", "multi\nline  title", "Ünïcode ✓"}).Draw(t, "title")
		source := rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(t, "source")
		want := "ErrNotFound"
		if meta, _, ok := m.refMeta(key); ok {
			want = "nil"
			if meta.TitleSource.Yields(source) {
				m.write(key, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: foldTitle(title), Source: source}))
			}
		}
		got, err := recall.NewSession(m.sut, key).SetTitle(m.ctx, title, source)
		m.wantMeta("SetTitle", key, got, err, want)

	case "meta":
		key := m.anyKey()
		var c recall.MetaChange
		switch rapid.SampledFrom([]string{"pin", "archive", "labels"}).Draw(t, "what") {
		case "pin":
			v := rapid.Bool().Draw(t, "pinned")
			c.Pinned = &v
		case "archive":
			v := rapid.Bool().Draw(t, "archived")
			c.Archived = &v
		default:
			c.Labels = rapid.SliceOfN(rapid.SampledFrom([]string{"red", "green", "blue"}), 0, 3).Draw(t, "labels")
			c.SetLabels = true
		}
		want := "ErrNotFound"
		if _, ok := m.refLog(key); ok {
			want = "nil"
			m.write(key, recall.NewEntry(recall.KindMeta, c))
		}
		got, err := recall.NewSession(m.sut, key).ChangeMeta(m.ctx, c)
		m.wantMeta("ChangeMeta", key, got, err, want)

	case "trash", "restore":
		key := m.anyKey()
		meta, _, ok := m.refMeta(key)
		on := op == "trash"
		want := "ErrNotFound"
		switch {
		case !key.IsMain():
			want = "ErrInvalidKey"
		case ok && meta.Trashed.IsZero() == on:
			want = "nil"
			m.write(key, recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &on}))
		}
		sess := recall.NewSession(m.sut, key)
		trash := sess.Restore
		if on {
			trash = sess.Trash
		}
		got, err := trash(m.ctx)
		m.wantMeta(op, key, got, err, want)
		m.compareAll()

	case "metadata":
		m.doMetadata()

	case "removeItem":
		key := m.anyKey()
		meta, live, _ := m.refMeta(key)
		refs := []recall.ItemRef{{Seq: 1}, {Seq: meta.LastSeq, Index: 1}, {Seq: meta.LastSeq + 1}}
		for _, l := range live {
			refs = append(refs, l.Ref, l.Ref) // in the view: drawn more often
		}
		ref := rapid.SampledFrom(refs).Draw(t, "ref")
		want, class := recall.Item(nil), "ErrNotFound"
		if i := slices.IndexFunc(live, func(l recall.LiveItem) bool { return l.Ref == ref }); i >= 0 {
			want, class = live[i].Item, "nil"
			m.write(key, recall.NewEntry(recall.KindRemove, ref))
		}
		got, err := recall.NewSession(m.sut, key).RemoveItem(m.ctx, ref)
		m.wantClass(fmt.Sprintf("RemoveItem %s %+v", key, ref), err, class)
		if !bytes.Equal(got, want) {
			t.Fatalf("RemoveItem %s %+v = %s, want %s", key, ref, clip(got), clip(want))
		}
		m.compare(key)

	case "fork":
		src := m.mainKey()
		dst := m.mainKey()
		// Seqs near the end are the interesting ones, and rapid favours
		// the first elements of a list: count down.
		var seqs []int64
		for seq := m.lastSeq(src) + 1; seq >= -1; seq-- {
			seqs = append(seqs, seq)
		}
		at := rapid.SampledFrom(seqs).Draw(t, "atSeq")
		want := m.refFork(src, at, dst)
		got, err := recall.NewSession(m.sut, src).Fork(m.ctx, at, dst)
		m.wantMeta(fmt.Sprintf("Fork %s at %d onto", src, at), dst, got, err, want)
		m.compare(src)

	case "remove":
		key := m.anyKey()
		want := "ErrNotFound"
		if m.remove(key) {
			want = "nil"
		}
		m.wantClass("Remove "+key.String(), m.sut.Remove(m.ctx, key), want)
		m.compareAll()

	case "import":
		key := m.anyKey()
		last := m.lastSeq(key)
		var first int64
		switch rapid.SampledFrom([]string{"next", "overlap", "gap"}).Draw(t, "import") {
		case "next":
			first = last + 1
		case "overlap":
			first = max(1, last-1)
		default:
			first = last + 2
		}
		n := rapid.IntRange(1, 3).Draw(t, "n")
		entries := make([]recall.Entry, n)
		// Few distinct times, so that sessions often tie on Updated.
		minute := rapid.SampledFrom([]int{0, 10, 20}).Draw(t, "minute")
		for i := range entries {
			entries[i] = m.importEntry()
			entries[i].Seq = first + int64(i)
			entries[i].Time = oldTime(minute + i)
		}
		fresh, want := m.importOutcome(key, entries)
		got, err := m.sut.Import(m.ctx, key, entries...)
		m.wantClass("Import "+key.String(), err, want)
		if want == "nil" {
			if len(fresh) > 0 {
				m.logs[key] = append(m.logs[key], fresh...)
			}
			if got != m.lastSeq(key) {
				t.Fatalf("Import %s returned %d, want %d", key, got, m.lastSeq(key))
			}
		}
		m.compare(key)

	case "compact":
		key := m.anyKey()
		through := m.lastSeq(key)
		if rapid.Bool().Draw(t, "stale") {
			through += int64(rapid.SampledFrom([]int{-1, 1}).Draw(t, "off"))
		}
		_, live, _ := m.refMeta(key)
		keep := rapid.IntRange(0, min(2, len(live))).Draw(t, "keep")
		items := []recall.Item{recall.Item(fmt.Sprintf(`{"type":"message","role":"system","content":"summary %d"}`, m.next))}
		items = append(items, recall.PlainItems(live[len(live)-keep:])...)
		m.next++
		// written as a compactor writes it: guarded by the seq it read
		m.appendWith(key, recall.IfLastSeq(through), []recall.Entry{compaction(through, len(live), items...)})

	case "list":
		project := rapid.SampledFrom(append([]string{""}, modelProjects...)).Draw(t, "project")
		opts := recall.ListOptions{
			Limit:           rapid.SampledFrom([]int{1, 2, 3, -1, 0}).Draw(t, "limit"),
			IncludeArchived: rapid.Bool().Draw(t, "archived"),
			Parent:          rapid.SampledFrom([]string{"", "", "a", "b"}).Draw(t, "parent"),
			Pinned:          rapid.Bool().Draw(t, "pinned"),
			Trashed:         rapid.Bool().Draw(t, "trashed"),
		}
		m.compareList(project, opts)

	case "projects":
		got, err := recall.Projects(m.ctx, m.sut)
		m.wantClass("Projects", err, "nil")
		want := map[string]int{}
		for k := range m.logs {
			if k.IsMain() {
				want[k.Project]++
			}
		}
		gotCounts := map[string]int{}
		for _, p := range got {
			gotCounts[p.Project] = p.Sessions
		}
		if !maps.Equal(gotCounts, want) {
			t.Fatalf("Projects = %+v, want sessions per project %v", got, want)
		}

	case "cleanup":
		// The cutoff falls among the imported times, or after everything:
		// then every unpinned session goes.
		cutoff := time.Now().Add(time.Hour)
		if rapid.Bool().Draw(t, "oldCutoff") {
			cutoff = oldTime(rapid.IntRange(0, 25).Draw(t, "cutoff"))
		}
		opts := recall.CleanupOptions{
			OlderThan: cutoff,
			DryRun:    rapid.Bool().Draw(t, "dryRun"),
			Project:   rapid.SampledFrom(append([]string{""}, modelProjects...)).Draw(t, "project"),
			Purge:     rapid.Bool().Draw(t, "purge"),
		}
		var wantGone []recall.Key
		wantKept := 0
		for _, k := range m.refKeys() {
			meta, _, _ := m.refMeta(k)
			if !k.IsMain() || opts.Project != "" && k.Project != opts.Project || !meta.Updated.Before(cutoff) ||
				!opts.Purge && !meta.Trashed.IsZero() {
				continue
			}
			if meta.Pinned {
				wantKept++
				continue
			}
			wantGone = append(wantGone, k)
		}
		if !opts.DryRun {
			yes := true
			for _, k := range wantGone {
				if opts.Purge {
					m.remove(k)
				} else {
					m.write(k, recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &yes}))
				}
			}
		}
		got, err := recall.Cleanup(m.ctx, m.sut, opts)
		m.wantClass("Cleanup", err, "nil")
		gk := keysOf(got.Removed)
		slices.SortFunc(gk, compareKeys)
		if !slices.Equal(gk, wantGone) || got.Kept != wantKept {
			t.Fatalf("Cleanup(%+v) removed %v and kept %d; want %v and %d", opts, gk, got.Kept, wantGone, wantKept)
		}
		m.compareAll()

	case "items":
		key := m.anyKey()
		limit := rapid.IntRange(-1, 4).Draw(t, "limit")
		got, last, err := m.sut.Items(m.ctx, key, limit)
		m.wantClass(fmt.Sprintf("Items(%s, %d)", key, limit), err, "nil")
		_, want, _ := m.refMeta(key)
		if limit > 0 && len(want) > limit {
			want = want[len(want)-limit:]
		}
		if d := liveDiff(got, want); d != "" {
			t.Fatalf("Items(%s, %d): %s", key, limit, d)
		}
		if last != m.lastSeq(key) {
			t.Fatalf("Items(%s, %d) returned LastSeq %d, want %d", key, limit, last, m.lastSeq(key))
		}

	case "readItems":
		key := m.anyKey()
		_, view, _ := m.refMeta(key)
		opts := recall.ItemPageOptions{
			Limit:  rapid.IntRange(-1, 4).Draw(t, "limit"),
			Oldest: rapid.Bool().Draw(t, "oldest"),
		}
		// A place in the order: none, an item of the view, or any ref
		// (one of an item since removed, or of nothing).
		switch rapid.IntRange(0, 2).Draw(t, "after") {
		case 1:
			if len(view) > 0 {
				opts.After = rapid.SampledFrom(view).Draw(t, "item").Ref
			}
		case 2:
			opts.After = recall.ItemRef{
				Seq:   rapid.Int64Range(1, m.lastSeq(key)+1).Draw(t, "seq"),
				Index: rapid.IntRange(0, 2).Draw(t, "index"),
			}
		}
		got, err := recall.NewSession(m.sut, key).ReadItems(m.ctx, opts)
		what := fmt.Sprintf("ReadItems(%s, %+v)", key, opts)
		m.wantClass(what, err, "nil")
		want := wantPage(view, opts)
		if d := liveDiff(got.Items, want.Items); d != "" {
			t.Fatalf("%s: %s", what, d)
		}
		if got.More != want.More || got.LastSeq != m.lastSeq(key) {
			t.Fatalf("%s: More %v and LastSeq %d, want %v and %d", what, got.More, got.LastSeq, want.More, m.lastSeq(key))
		}

	case "entries":
		key := m.anyKey()
		after := rapid.Int64Range(-1, m.lastSeq(key)+1).Draw(t, "after")
		limit := rapid.IntRange(-1, 3).Draw(t, "limit")
		got, err := m.sut.Entries(m.ctx, key, after, limit)
		what := fmt.Sprintf("Entries(%s, after %d, limit %d)", key, after, limit)
		log, ok := m.refLog(key)
		if !ok {
			m.wantClass(what, err, "ErrNotFound")
			return
		}
		m.wantClass(what, err, "nil")
		var want []recall.Entry
		for _, e := range log {
			if e.Seq > after && (limit <= 0 || len(want) < limit) {
				want = append(want, e)
			}
		}
		m.sameLog(what, got, want)

	default:
		t.Fatalf("unknown model op %q", op)
	}
}
