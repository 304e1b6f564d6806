package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// RunModel is the model-based test: rapid draws random sequences of
// operations (append batches, bad batches, pop, clear, titles, archive,
// pin, labels, fork, remove, import, compaction, list pages, projects,
// cleanup, item and entry reads) and runs each against the store under
// test and against a memstore, the reference. Every observable result must
// agree: returned seqs and items, error classes (see [ErrorClass]), the
// metadata of every session except its times, list membership, cleanup
// reports. The store under test must also keep List order by its own
// times and pass recall.Verify after every sequence.
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
	sut := newStore(t)
	if sut == nil {
		t.Fatal("storetest: newStore returned nil")
	}
	t.Cleanup(func() {
		if err := sut.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	rapid.Check(t, func(rt *rapid.T) {
		m := &model{t: rt, ctx: rt.Context(), sut: sut, ref: memstore.New(memstore.Options{})}
		defer m.ref.Close()
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
		}
		m.compareAll()
		if err := recall.Verify(m.ctx, sut); err != nil {
			rt.Fatalf("recall.Verify of the store under test: %v", err)
		}
		if err := recall.Verify(m.ctx, m.ref); err != nil {
			rt.Fatalf("the reference fails recall.Verify (a bug in memstore or the core): %v", err)
		}
	})
}

// maxModelOps bounds the length of one sequence.
const maxModelOps = 30

// modelOps are the operations the model draws from; a name listed twice is
// drawn twice as often.
var modelOps = []string{
	"append", "append", "append", "appendInvalid", "pop", "pop", "clear",
	"title", "meta", "meta", "fork", "fork", "remove", "import", "import",
	"compact", "list", "projects", "cleanup", "cleanup", "items", "entries",
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
// reference (ref).
type model struct {
	t    *rapid.T
	ctx  context.Context
	sut  recall.Store
	ref  recall.Store
	next int // numbers items so that each is distinct
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

// do runs one operation on both stores and compares the outcome.
func (m *model) do(op string) {
	t := m.t
	switch op {
	case "append":
		key := m.anyKey()
		n := rapid.IntRange(1, 3).Draw(t, "n")
		entries := make([]recall.Entry, n)
		for i := range entries {
			entries[i] = recall.ItemEntry(m.item())
			if rapid.Bool().Draw(t, "usage") {
				entries[i].Usage = &recall.Usage{InputTokens: int64(m.next), OutputTokens: 1, TotalTokens: int64(m.next) + 1}
			}
		}
		m.sameSeq("Append", key, func(s recall.Store) (int64, error) { return s.Append(m.ctx, key, entries...) })
		m.compare(key)

	case "appendInvalid":
		key := m.anyKey()
		bad := rapid.SampledFrom(InvalidItems()).Draw(t, "bad")
		entries := recall.ItemEntries(m.item(), bad)
		m.sameSeq("Append with a bad item", key, func(s recall.Store) (int64, error) { return s.Append(m.ctx, key, entries...) })
		m.compare(key)

	case "pop":
		key := m.anyKey()
		got, errS := m.sut.Pop(m.ctx, key)
		want, errR := m.ref.Pop(m.ctx, key)
		m.sameErr("Pop "+key.String(), errS, errR)
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("Pop %s = %s, reference %s", key, clip(got), clip(want))
		}
		m.compare(key)

	case "clear":
		key := m.anyKey()
		m.sameErr("Clear "+key.String(), recall.Clear(m.ctx, m.sut, key), recall.Clear(m.ctx, m.ref, key))
		m.compare(key)

	case "title":
		key := m.anyKey()
		title := rapid.SampledFrom([]string{"", "Alpha", "Beta", "multi\nline  title", "Ünïcode ✓"}).Draw(t, "title")
		source := rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(t, "source")
		m.sameMeta("SetTitle", key, func(s recall.Store) (recall.Meta, error) {
			return recall.SetTitle(m.ctx, s, key, title, source)
		})

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
		m.sameMeta("Update", key, func(s recall.Store) (recall.Meta, error) { return recall.Update(m.ctx, s, key, c) })

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
		got, errS := m.sut.Fork(m.ctx, src, at, dst)
		want, errR := m.ref.Fork(m.ctx, src, at, dst)
		m.sameErr(fmt.Sprintf("Fork %s at %d onto %s", src, at, dst), errS, errR)
		if errS == nil {
			if d := MetaDiff(got, want, false); d != "" {
				t.Fatalf("Fork %s at %d onto %s returned %s", src, at, dst, d)
			}
		}
		m.compare(src, dst)

	case "remove":
		key := m.anyKey()
		m.sameErr("Remove "+key.String(), m.sut.Remove(m.ctx, key), m.ref.Remove(m.ctx, key))
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
		m.sameSeq("Import", key, func(s recall.Store) (int64, error) { return s.Import(m.ctx, key, entries...) })
		m.compare(key)

	case "compact":
		key := m.anyKey()
		through := m.lastSeq(key)
		if rapid.Bool().Draw(t, "stale") {
			through += int64(rapid.SampledFrom([]int{-1, 1}).Draw(t, "off"))
		}
		live, err := m.ref.Items(m.ctx, key, 0)
		if err != nil {
			t.Fatalf("reference Items: %v", err)
		}
		keep := rapid.IntRange(0, min(2, len(live))).Draw(t, "keep")
		items := []recall.Item{recall.Item(fmt.Sprintf(`{"type":"message","role":"system","content":"summary %d"}`, m.next))}
		items = append(items, recall.Items(live[len(live)-keep:])...)
		m.next++
		e := compaction(through, len(live), items...)
		m.sameSeq("compaction", key, func(s recall.Store) (int64, error) { return s.Append(m.ctx, key, e) })
		m.compare(key)

	case "list":
		project := rapid.SampledFrom(append([]string{""}, modelProjects...)).Draw(t, "project")
		opts := recall.ListOptions{
			Limit:           rapid.SampledFrom([]int{1, 2, 3, -1, 0}).Draw(t, "limit"),
			IncludeArchived: rapid.Bool().Draw(t, "archived"),
			Parent:          rapid.SampledFrom([]string{"", "", "a", "b"}).Draw(t, "parent"),
		}
		m.compareList(project, opts)

	case "projects":
		got, errS := m.sut.Projects(m.ctx)
		want, errR := m.ref.Projects(m.ctx)
		m.sameErr("Projects", errS, errR)
		slices.SortFunc(got, func(a, b recall.ProjectInfo) int { return strings.Compare(a.Project, b.Project) })
		if len(got) != len(want) {
			t.Fatalf("Projects = %+v, reference %+v", got, want)
		}
		for i := range got {
			if got[i].Project != want[i].Project || got[i].Sessions != want[i].Sessions {
				t.Fatalf("Projects = %+v, reference %+v", got, want)
			}
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
		}
		got, errS := m.sut.Cleanup(m.ctx, opts)
		want, errR := m.ref.Cleanup(m.ctx, opts)
		m.sameErr("Cleanup", errS, errR)
		gk, wk := keysOf(got.Removed), keysOf(want.Removed)
		slices.SortFunc(gk, compareKeys)
		slices.SortFunc(wk, compareKeys)
		if !slices.Equal(gk, wk) || got.Kept != want.Kept {
			t.Fatalf("Cleanup(%+v) removed %v and kept %d; reference %v and %d", opts, gk, got.Kept, wk, want.Kept)
		}
		m.compareAll()

	case "items":
		key := m.anyKey()
		limit := rapid.IntRange(-1, 4).Draw(t, "limit")
		got, errS := m.sut.Items(m.ctx, key, limit)
		want, errR := m.ref.Items(m.ctx, key, limit)
		m.sameErr(fmt.Sprintf("Items(%s, %d)", key, limit), errS, errR)
		if d := liveDiff(got, want); d != "" {
			t.Fatalf("Items(%s, %d): %s", key, limit, d)
		}

	case "entries":
		key := m.anyKey()
		after := rapid.Int64Range(-1, m.lastSeq(key)+1).Draw(t, "after")
		limit := rapid.IntRange(-1, 3).Draw(t, "limit")
		got, errS := m.sut.Entries(m.ctx, key, after, limit)
		want, errR := m.ref.Entries(m.ctx, key, after, limit)
		what := fmt.Sprintf("Entries(%s, after %d, limit %d)", key, after, limit)
		m.sameErr(what, errS, errR)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, reference %d", what, len(got), len(want))
		}
		for i := range got {
			if d := EntryDiff(got[i], want[i], false); d != "" {
				t.Fatalf("%s: entry %d: %s", what, i, d)
			}
		}

	default:
		t.Fatalf("unknown model op %q", op)
	}
}

// mainKey draws a main session key.
func (m *model) mainKey() recall.Key {
	return recall.Key{
		Project: rapid.SampledFrom(modelProjects).Draw(m.t, "project"),
		Session: rapid.SampledFrom(modelSessions).Draw(m.t, "session"),
	}
}

// anyKey draws a main session key, or a subagent record of a session that
// exists: a store need not support records without their session.
func (m *model) anyKey() recall.Key {
	k := m.mainKey()
	if rapid.IntRange(0, 3).Draw(m.t, "sub") == 0 {
		if _, err := m.ref.Stat(m.ctx, k); err == nil {
			k.Subpath = rapid.SampledFrom(modelSubpaths).Draw(m.t, "subpath")
		}
	}
	return k
}

// lastSeq returns the reference's LastSeq of key, 0 when it is missing.
func (m *model) lastSeq(key recall.Key) int64 {
	meta, err := m.ref.Stat(m.ctx, key)
	if err != nil {
		return 0
	}
	return meta.LastSeq
}

// item returns a new distinct item in one of a few byte layouts.
func (m *model) item() recall.Item {
	m.next++
	n := m.next
	layouts := []string{
		`{"type":"message","role":"user","content":"u%d"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a%d"}]}`,
		` { "type" : "function_call", "call_id" : "c%d", "name":"f","arguments":"{}" }` + "\n",
		"{\n  \"type\": \"reasoning\",\n  \"summary\": [\"r%d\"]\n}",
		`{"type":"x-unknown","n":%d,"dup":1,"dup":2}`,
	}
	return recall.Item(fmt.Sprintf(rapid.SampledFrom(layouts).Draw(m.t, "layout"), n))
}

// importEntry returns an entry for an import batch: an item, a title, a
// meta change or a clear. Pops are left out: a replicated pop names an item
// of the source's log, which the model does not reproduce.
func (m *model) importEntry() recall.Entry {
	switch rapid.IntRange(0, 5).Draw(m.t, "kind") {
	case 0:
		return recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "imported", Source: rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(m.t, "source")})
	case 1:
		v := rapid.Bool().Draw(m.t, "pinned")
		return recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &v})
	case 2:
		return recall.Entry{Kind: recall.KindClear}
	default:
		return recall.ItemEntry(m.item())
	}
}

// sameErr fails unless both errors have the same class, and neither is
// outside recall's sentinels.
func (m *model) sameErr(what string, got, want error) {
	m.t.Helper()
	gc, wc := ErrorClass(got), ErrorClass(want)
	if strings.HasPrefix(gc, "other") {
		m.t.Fatalf("%s: error %v wraps no recall sentinel; the reference returned %s", what, got, wc)
	}
	if gc != wc {
		m.t.Fatalf("%s: got %s (%v), reference %s (%v)", what, gc, got, wc, want)
	}
}

// sameSeq runs a write that returns a seq on both stores.
func (m *model) sameSeq(what string, key recall.Key, write func(recall.Store) (int64, error)) {
	m.t.Helper()
	got, errS := write(m.sut)
	want, errR := write(m.ref)
	m.sameErr(what+" "+key.String(), errS, errR)
	if errS == nil && got != want {
		m.t.Fatalf("%s %s returned seq %d, reference %d", what, key, got, want)
	}
}

// sameMeta runs a write that returns metadata on both stores.
func (m *model) sameMeta(what string, key recall.Key, write func(recall.Store) (recall.Meta, error)) {
	m.t.Helper()
	got, errS := write(m.sut)
	want, errR := write(m.ref)
	m.sameErr(what+" "+key.String(), errS, errR)
	if errS == nil {
		if d := MetaDiff(got, want, false); d != "" {
			m.t.Fatalf("%s %s returned %s", what, key, d)
		}
	}
	m.compare(key)
}

// compare checks that both stores hold the same session under each key:
// the same metadata (times aside) and the same items, refs included.
func (m *model) compare(keys ...recall.Key) {
	m.t.Helper()
	for _, key := range keys {
		got, errS := m.sut.Stat(m.ctx, key)
		want, errR := m.ref.Stat(m.ctx, key)
		m.sameErr("Stat "+key.String(), errS, errR)
		if errS == nil {
			if d := MetaDiff(got, want, false); d != "" {
				m.t.Fatalf("Stat %s: %s", key, d)
			}
			if got.Created.IsZero() || got.Updated.Before(got.Created) {
				m.t.Fatalf("Stat %s: Created %v, Updated %v", key, got.Created, got.Updated)
			}
		}
		gl, errS := m.sut.Items(m.ctx, key, 0)
		wl, errR := m.ref.Items(m.ctx, key, 0)
		m.sameErr("Items "+key.String(), errS, errR)
		if d := liveDiff(gl, wl); d != "" {
			m.t.Fatalf("Items %s: %s", key, d)
		}
	}
}

// compareAll compares every key of the model and the full listings.
func (m *model) compareAll() {
	m.t.Helper()
	m.compare(modelKeys()...)
	for _, project := range append([]string{""}, modelProjects...) {
		m.compareList(project, recall.ListOptions{Limit: -1, IncludeArchived: true})
	}
}

// compareList walks every page of a listing in both stores and compares
// the sessions found: the same keys with the same metadata (times aside),
// and the store under test's pages in its own List order.
func (m *model) compareList(project string, opts recall.ListOptions) {
	m.t.Helper()
	_, errS := m.sut.List(m.ctx, project, opts)
	_, errR := m.ref.List(m.ctx, project, opts)
	m.sameErr(fmt.Sprintf("List(%q, %+v)", project, opts), errS, errR)
	if errS != nil {
		return
	}
	got := listAll(m.t, m.ctx, m.sut, project, opts)
	want := listAll(m.t, m.ctx, m.ref, project, opts)
	wantListOrder(m.t, fmt.Sprintf("List(%q, %+v)", project, opts), got)
	gk, wk := keysOf(got), keysOf(want)
	slices.SortFunc(gk, compareKeys)
	slices.SortFunc(wk, compareKeys)
	if !slices.Equal(gk, wk) {
		m.t.Fatalf("List(%q, %+v) = %v, reference %v", project, opts, gk, wk)
	}
	byKey := map[recall.Key]recall.Meta{}
	for _, w := range want {
		byKey[w.Key] = w
	}
	for _, g := range got {
		if d := MetaDiff(g, byKey[g.Key], false); d != "" {
			m.t.Fatalf("List(%q): %s: %s", project, g.Key, d)
		}
	}
}

// liveDiff compares two item views, refs included.
func liveDiff(got, want []recall.LiveItem) string {
	if d := itemsDiff(recall.Items(got), recall.Items(want)); d != "" {
		return d
	}
	for i := range got {
		if got[i].Ref != want[i].Ref {
			return fmt.Sprintf("item %d has ref %+v, want %+v", i, got[i].Ref, want[i].Ref)
		}
	}
	return ""
}
