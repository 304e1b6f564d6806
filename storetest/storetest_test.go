package storetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// A suite that cannot fail proves nothing. TestSuiteCatchesBugs runs the
// suite, in a child process, against memstore with one bug planted at a
// time, and checks that the subtests meant to catch that bug fail.

const bugEnv = "STORETEST_PLANTED_BUG"

// plantedBugs maps each bug to subtests of Run that must fail on it.
var plantedBugs = map[string][]string{
	"pop-oldest":          {"Session/AddGetPopClear", "Model"},
	"shared-items":        {"Items/Copies", "Model"},
	"partial-batch":       {"Items/InvalidRefused", "Model"},
	"list-archived":       {"Meta/ArchivePinLabels", "List/Pagination", "Model"},
	"cursor-drops-ties":   {"List/Pagination", "Model"},
	"no-compaction-guard": {"Log/Compaction", "Model"},
	"remove-keeps-subs":   {"Subagents", "Cleanup/Purge", "Model"},
	"cleanup-pinned":      {"Cleanup/Purge", "Model"},
	"bad-key-not-found":   {"Keys/Invalid"},
	"racy-append":         {"Concurrent/OneSession", "Model"},
	"fork-off-by-one":     {"Fork", "Model"},
	"import-no-dedup":     {"Log/Import", "Model"},
	"lost-title-source":   {"Meta/Titles", "Model"},
	"guard-ignored":       {"Guard", "Guard/Concurrent", "Ghosts", "Create", "Log/Compaction", "Model"},
	"ctx-ignored":         {"Context"},
	"meta-moves-updated":  {"Updated", "List/Order"},
	"items-stale-seq":     {"Views/Concurrent"},
	"remove-wrong-item":   {"RemoveItem", "Model"},
	"metadata-dropped":    {"Metadata", "List/Fields", "Model"},
}

// shortBugs are the planted bugs the fast tier (-short) plants, one for
// each kind of check of the suite: the log and its view, the guards,
// concurrency, and metadata. The long tier plants them all.
var shortBugs = []string{"pop-oldest", "guard-ignored", "racy-append", "metadata-dropped"}

func TestSuiteCatchesBugs(t *testing.T) {
	if os.Getenv(bugEnv) != "" {
		t.Skip("in a child process")
	}
	bugs := make([]string, 0, len(plantedBugs))
	for b := range plantedBugs {
		bugs = append(bugs, b)
	}
	slices.Sort(bugs)
	if testing.Short() {
		for _, b := range shortBugs {
			if _, ok := plantedBugs[b]; !ok {
				t.Fatalf("shortBugs names %q, which is not a planted bug", b)
			}
		}
		bugs = shortBugs
	}
	for _, bug := range bugs {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			run := "^TestPlantedBug$"
			if testing.Short() {
				// only the groups of subtests that must fail
				groups := map[string]bool{}
				for _, sub := range plantedBugs[bug] {
					group, _, _ := strings.Cut(sub, "/")
					groups[regexp.QuoteMeta(group)] = true
				}
				run += "/^(" + strings.Join(slices.Sorted(maps.Keys(groups)), "|") + ")$"
			}
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-rapid.checks=200")
			cmd.Env = append(os.Environ(), bugEnv+"="+bug, "RAPID_NOFAILFILE=1", "RAPID_SHRINKTIME=10ms")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with bug %q", bug)
			}
			for _, sub := range plantedBugs[bug] {
				if !regexp.MustCompile(`--- FAIL: TestPlantedBug/` + regexp.QuoteMeta(sub) + ` `).Match(out) {
					t.Errorf("bug %q: subtest %s did not fail", bug, sub)
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", tail(out, 60))
			}
		})
	}
}

func tail(out []byte, lines int) string {
	l := strings.Split(string(out), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// TestPlantedBug is the child process of TestSuiteCatchesBugs.
func TestPlantedBug(t *testing.T) {
	bug := os.Getenv(bugEnv)
	if bug == "" {
		t.Skip("run by TestSuiteCatchesBugs")
	}
	if _, ok := plantedBugs[bug]; !ok {
		t.Fatalf("unknown bug %q", bug)
	}
	storetest.Run(t, func(t *testing.T) recall.Store {
		return &buggy{Store: memstore.New(memstore.Options{}), bug: bug}
	})
}

// buggy is memstore with one planted bug.
type buggy struct {
	*memstore.Store
	bug string
	mu  sync.Mutex
	// shared-items: the slices Items returned, handed out again
	cache map[recall.Key][]recall.LiveItem
}

func (b *buggy) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	switch b.bug {
	case "partial-batch": // writes the good entries before the bad one
		for i, e := range entries {
			if err := storekit.ValidateEntries([]recall.Entry{e}, 0); err != nil {
				if i > 0 {
					_, _ = b.Store.Append(ctx, key, recall.Guard{}, entries[:i]...)
				}
				return 0, err
			}
		}
	case "no-compaction-guard": // drops the guard of a batch holding a compaction
		if slices.ContainsFunc(entries, func(e recall.Entry) bool { return e.Kind == recall.KindCompaction }) {
			guard = recall.Guard{}
		}
	case "racy-append": // read-modify-write without a lock
		if len(entries) == 0 {
			break
		}
		m, err := b.Store.Stat(ctx, key)
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return 0, err
		}
		runtime.Gosched() // widens the window a real store's I/O would open
		out := make([]recall.Entry, len(entries))
		now := storekit.Now()
		for i, e := range entries {
			e.Seq, e.Time = m.LastSeq+int64(i)+1, now
			out[i] = e
		}
		if err := storekit.ValidateEntries(entries, 0); err != nil {
			return 0, err
		}
		last, err := b.Store.Import(ctx, key, out...)
		if errors.Is(err, recall.ErrConflict) {
			return last, nil // lost: "someone else wrote that seq"
		}
		return last, err
	case "guard-ignored": // writes whatever the guard says
		guard = recall.Guard{}
	case "ctx-ignored": // writes under an ended context
		ctx = context.Background()
	case "remove-wrong-item": // a removal takes the newest item instead
		for i, e := range entries {
			if e.Kind == recall.KindRemove {
				if live, _, err := b.Store.Items(ctx, key, 1); err == nil && len(live) == 1 {
					entries[i] = recall.NewEntry(recall.KindRemove, live[0].Ref)
				}
			}
		}
	case "lost-title-source": // records every title as auto
		for i, e := range entries {
			if e.Kind == recall.KindTitle {
				var c recall.TitleChange
				if json.Unmarshal(e.Data, &c) == nil {
					c.Source = recall.TitleAuto
					entries[i] = recall.NewEntry(recall.KindTitle, c)
				}
			}
		}
	}
	return b.Store.Append(ctx, key, guard, entries...)
}

func (b *buggy) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if b.bug != "pop-oldest" {
		return b.Store.Pop(ctx, key)
	}
	live, _, err := b.Store.Items(ctx, key, 0)
	if err != nil || len(live) == 0 {
		return nil, err
	}
	if _, err := b.Store.Append(ctx, key, recall.Guard{}, recall.NewEntry(recall.KindPop, live[0].Ref)); err != nil {
		return nil, err
	}
	return live[0].Item, nil
}

func (b *buggy) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if b.bug == "items-stale-seq" { // reads the seq apart from the view
		m, err := b.Store.Stat(ctx, key)
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return nil, 0, err
		}
		runtime.Gosched()
		live, _, err := b.Store.Items(ctx, key, limit)
		return live, m.LastSeq, err
	}
	if b.bug != "shared-items" {
		return b.Store.Items(ctx, key, limit)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	all, last, err := b.Store.Items(ctx, key, 0)
	if err != nil {
		return nil, 0, err
	}
	if b.cache == nil {
		b.cache = map[recall.Key][]recall.LiveItem{}
	}
	if old := b.cache[key]; len(old) == len(all) {
		all = old // hands out the same memory again
	}
	b.cache[key] = all
	if limit > 0 && limit < len(all) {
		return all[len(all)-limit:], last, nil
	}
	return all, last, nil
}

func (b *buggy) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if b.bug == "bad-key-not-found" && key.Validate() != nil {
		return recall.Meta{}, recall.ErrNotFound
	}
	m, err := b.Store.Stat(ctx, key)
	if err == nil && b.bug == "meta-moves-updated" {
		m = b.touched(ctx, m)
	}
	return m, err
}

func (b *buggy) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	m, es, err := b.Store.Load(ctx, key)
	if err == nil && b.bug == "meta-moves-updated" && len(es) > 0 {
		m.Updated = es[len(es)-1].Time
	}
	return m, es, err
}

// touched returns m with Updated at its newest entry's time, whatever its
// kind: the rule before title and meta changes stopped moving it.
func (b *buggy) touched(ctx context.Context, m recall.Meta) recall.Meta {
	if _, es, err := b.Store.Load(ctx, m.Key); err == nil && len(es) > 0 {
		m.Updated = es[len(es)-1].Time
	}
	return m
}

func (b *buggy) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	switch b.bug {
	case "metadata-dropped":
		p, err := b.Store.List(ctx, project, opts)
		for i := range p.Sessions {
			p.Sessions[i].Metadata = nil
		}
		return p, err
	case "meta-moves-updated":
		if err := storekit.CheckListOptions(project, opts); err != nil {
			return recall.Page{}, err
		}
		all, err := b.Store.List(ctx, project, recall.ListOptions{Limit: -1, IncludeArchived: opts.IncludeArchived, Parent: opts.Parent})
		if err != nil {
			return recall.Page{}, err
		}
		for i, m := range all.Sessions {
			all.Sessions[i] = b.touched(ctx, m)
		}
		return storekit.Paginate(all.Sessions, opts)
	case "list-archived":
		opts.IncludeArchived = true
	case "cursor-drops-ties": // a keyset on Updated alone skips ties
		if err := storekit.CheckListOptions(project, opts); err != nil {
			return recall.Page{}, err
		}
		all, err := b.Store.List(ctx, project, recall.ListOptions{Limit: -1, IncludeArchived: opts.IncludeArchived, Parent: opts.Parent})
		if err != nil {
			return recall.Page{}, err
		}
		metas := all.Sessions
		if opts.Cursor != "" {
			c, err := storekit.ParseCursor(opts.Cursor)
			if err != nil {
				return recall.Page{}, err
			}
			metas = slices.DeleteFunc(metas, func(m recall.Meta) bool { return !m.Updated.Before(c.Updated) })
		}
		limit := opts.Limit
		if limit == 0 {
			limit = recall.DefaultListLimit
		}
		var p recall.Page
		if limit > 0 && len(metas) > limit {
			metas = metas[:limit]
			p.Next = storekit.CursorAt(metas[limit-1]).String()
		}
		p.Sessions = metas
		return p, nil
	}
	return b.Store.List(ctx, project, opts)
}

func (b *buggy) Remove(ctx context.Context, key recall.Key) error {
	if b.bug == "ctx-ignored" {
		ctx = context.Background()
	}
	if b.bug != "remove-keeps-subs" || !key.IsMain() {
		return b.Store.Remove(ctx, key)
	}
	// Saves the subagent records and puts them back.
	subs, err := b.Store.List(ctx, key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: key.Session})
	if err != nil {
		return err
	}
	logs := map[recall.Key][]recall.Entry{}
	for _, m := range subs.Sessions {
		_, es, err := b.Store.Load(ctx, m.Key)
		if err != nil {
			return err
		}
		logs[m.Key] = es
	}
	if err := b.Store.Remove(ctx, key); err != nil {
		return err
	}
	for k, es := range logs {
		if _, err := b.Store.Import(ctx, k, es...); err != nil {
			return err
		}
	}
	return nil
}

func (b *buggy) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if b.bug == "remove-keeps-subs" {
		rep, err := recall.Cleanup(ctx, b.Store, recall.CleanupOptions{OlderThan: opts.OlderThan, Project: opts.Project, DryRun: true})
		if err != nil || opts.DryRun {
			return rep, err
		}
		for _, m := range rep.Removed {
			if err := b.Remove(ctx, m.Key); err != nil {
				return rep, err
			}
		}
		return rep, nil
	}
	if b.bug != "cleanup-pinned" {
		return recall.Cleanup(ctx, b.Store, opts)
	}
	all, err := b.Store.List(ctx, opts.Project, recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		return recall.CleanupReport{}, err
	}
	var rep recall.CleanupReport
	for _, m := range all.Sessions {
		if m.Updated.Before(opts.OlderThan) {
			rep.Removed = append(rep.Removed, m)
			if !opts.DryRun {
				if err := b.Store.Remove(ctx, m.Key); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, nil
}

func (b *buggy) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	if b.bug == "fork-off-by-one" && atSeq > 1 {
		atSeq--
	}
	return recall.NewSession(b.Store, key).Fork(ctx, atSeq, newKey)
}

func (b *buggy) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if b.bug != "import-no-dedup" || len(entries) == 0 {
		return b.Store.Import(ctx, key, entries...)
	}
	// Renumbers what it gets after the last seq instead of skipping it.
	m, err := b.Store.Stat(ctx, key)
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		return 0, err
	}
	out := slices.Clone(entries)
	for i := range out {
		out[i].Seq = m.LastSeq + int64(i) + 1
	}
	return b.Store.Import(ctx, key, out...)
}

// TestHelpers checks the exported comparison helpers.
func TestHelpers(t *testing.T) {
	wrapped := fmt.Errorf("x: %w", recall.ErrConflict)
	for err, want := range map[error]string{
		nil:                   "nil",
		wrapped:               "ErrConflict",
		recall.ErrInvalidKey:  "ErrInvalidKey",
		errors.New("plain"):   "other: plain",
		recall.ErrUnsupported: "ErrUnsupported",
	} {
		if got := storetest.ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, want)
		}
	}

	a := recall.Meta{Key: recall.Key{Project: "p", Session: "s"}, Title: "t", ItemCount: 2, Labels: []string{"x"}}
	if d := storetest.MetaDiff(a, a.Clone(), true); d != "" {
		t.Errorf("MetaDiff of equal metas: %s", d)
	}
	b := a.Clone()
	b.Labels = []string{"y"}
	b.ForkedFrom = &recall.ForkOrigin{Seq: 1}
	b.Updated = b.Updated.Add(1)
	if d := storetest.MetaDiff(a, b, true); !strings.Contains(d, "Labels") || !strings.Contains(d, "ForkedFrom") || !strings.Contains(d, "Updated") {
		t.Errorf("MetaDiff missed a difference: %q", d)
	}
	if d := storetest.MetaDiff(a, b, false); strings.Contains(d, "Updated") {
		t.Errorf("MetaDiff without times compared times: %q", d)
	}

	item := recall.Entry{Seq: 1, Kind: recall.KindItem, Data: []byte(`{"a":1, "b":2}`)}
	respaced := item
	respaced.Data = []byte(`{"a":1,"b":2}`)
	if d := storetest.EntryDiff(respaced, item, true); d == "" {
		t.Errorf("EntryDiff accepted an item with different bytes")
	}
	title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser})
	reordered := title
	reordered.Data = []byte(`{ "source":"user", "title":"t" }`)
	if d := storetest.EntryDiff(reordered, title, true); d != "" {
		t.Errorf("EntryDiff refused a re-encoded payload: %s", d)
	}

	// The corpora hold what they promise.
	for _, k := range storetest.InvalidKeys() {
		if err := k.Validate(); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("InvalidKeys holds %q, which validates", k)
		}
	}
	for _, k := range storetest.EdgeKeys() {
		if err := k.Validate(); err != nil {
			t.Errorf("EdgeKeys holds %q: %v", k, err)
		}
	}
	for _, it := range storetest.VerbatimItems() {
		if err := it.Validate(0); err != nil {
			t.Errorf("VerbatimItems holds %s: %v", it, err)
		}
	}
	for _, it := range storetest.InvalidItems() {
		if err := it.Validate(0); !errors.Is(err, recall.ErrInvalidItem) {
			t.Errorf("InvalidItems holds %q, which validates: %v", it, err)
		}
	}
	malformed := 0
	for _, d := range storetest.DamagedItems() {
		if err := recall.Item(d).Validate(0); !errors.Is(err, recall.ErrInvalidItem) {
			t.Errorf("DamagedItems holds %q, which validates: %v", d, err)
		}
		if _, ok := recall.Entry.Item(recall.Entry{Kind: recall.KindItem, Data: d}); ok {
			malformed++ // looks like an object by its ends: "{x}"
		}
	}
	if malformed == 0 {
		t.Errorf("DamagedItems holds no record that recall.Entry.Item takes for an object, such as {x}")
	}
}

// TestCheckNoGhost checks the ghost detector on a session as created, a
// missing one, and ghosts.
func TestCheckNoGhost(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(memstore.Options{})
	items := []recall.Item{recall.Item(`{"a":1}`), recall.Item(`{"b":2}`)}
	key := func(id string) recall.Key { return recall.Key{Project: "p", Session: id} }
	if _, err := s.Append(ctx, key("ok"), recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(s, key("ok")).SetTitle(ctx, "t", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CheckNoGhost(ctx, s, key("ok"), items); err != nil {
		t.Errorf("a session holding its items: %v", err)
	}
	if err := storetest.CheckNoGhost(ctx, s, key("missing"), items); err != nil {
		t.Errorf("a missing session: %v", err)
	}
	ghosts := map[string][]recall.Entry{
		"title-only":  {recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser})},
		"clear-only":  {{Kind: recall.KindClear}},
		"other-items": recall.ItemEntries(recall.Item(`{"c":3}`), recall.Item(`{"d":4}`)),
		"one-item":    recall.ItemEntries(items[0]),
	}
	for id, log := range ghosts {
		if _, err := s.Append(ctx, key(id), recall.Guard{}, log...); err != nil {
			t.Fatal(err)
		}
		if err := storetest.CheckNoGhost(ctx, s, key(id), items); err == nil {
			t.Errorf("CheckNoGhost missed the ghost %s", id)
		}
	}
}
