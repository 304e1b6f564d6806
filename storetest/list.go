package storetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testListFields checks that List returns every metadata field, equal to
// what Stat returns.
func testListFields(e *env) {
	t := e.t
	a := recall.Key{Project: "p", Session: "a"}
	b := recall.Key{Project: "p", Session: "b"}
	c := recall.Key{Project: "p", Session: "c"}
	d := recall.Key{Project: "q", Session: "d"}
	sub := recall.Key{Project: "p", Session: "a", Subpath: "subagents/x"}

	e.mustAdd(a, msg("a1"), msg("a2"))
	if _, err := recall.NewSession(e.s, a).SetTitle(e.ctx, "Title A", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"l1", "l2"}, SetLabels: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"team": new("core"), "ticket": new("R-11")}}); err != nil {
		t.Fatal(err)
	}
	e.mustAdd(b, msg("b1"))
	if _, err := recall.NewSession(e.s, b).SetTitle(e.ctx, "Title B", recall.TitleAuto); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, b).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, a).Fork(e.ctx, 1, c); err != nil {
		t.Fatal(err)
	}
	withUsage := msg("d1").Entry()
	withUsage.Usage = &recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
	if _, err := e.s.Import(e.ctx, d, imported(1, 0, withUsage)...); err != nil {
		t.Fatal(err)
	}
	e.mustAdd(sub, msg("sub"))

	want := map[recall.Key]recall.Meta{}
	for _, k := range []recall.Key{a, b, c, d} {
		want[k] = e.mustStat(k)
	}
	checks := []struct {
		ok   bool
		what string
	}{
		{want[a].Title == "Title A" && want[a].TitleSource == recall.TitleUser, "a has its user title"},
		{want[a].ItemCount == 2 && want[a].LastSeq == 6, "a has 2 items and 6 entries"},
		{maps.Equal(want[a].Metadata, map[string]string{"team": "core", "ticket": "R-11"}), "a has its metadata"},
		{want[b].Metadata == nil && want[c].Metadata == nil, "b and c have no metadata (nil)"},
		{want[a].Pinned && !want[a].Archived, "a is pinned"},
		{slices.Equal(want[a].Labels, []string{"l1", "l2"}), "a has its labels"},
		{want[b].Title == "Title B" && want[b].TitleSource == recall.TitleAuto, "b has its auto title"},
		{want[b].Archived, "b is archived"},
		{want[c].ForkedFrom != nil && *want[c].ForkedFrom == recall.ForkOrigin{Key: a, Seq: 1}, "c was forked from p/a at 1"},
		{want[c].ItemCount == 1 && want[c].Title == "", "c holds one item and no title"},
		{want[d].Usage == recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}, "d has its usage"},
		{want[d].Created.Equal(oldTime(0)) && want[d].Updated.Equal(oldTime(0)), "d has its imported times"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("Stat: want %s", c.what)
		}
	}
	for k, m := range want {
		if m.Key != k {
			t.Errorf("Stat(%s).Key = %s", k, m.Key)
		}
		if m.Created.IsZero() || m.Updated.Before(m.Created) {
			t.Errorf("%s: Created %v, Updated %v", k, m.Created, m.Updated)
		}
	}

	for _, project := range []string{"", "p", "q"} {
		for _, archived := range []bool{false, true} {
			got := listAll(t, e.ctx, e.s, project, recall.ListOptions{Limit: -1, IncludeArchived: archived})
			var wantKeys []recall.Key
			for k, m := range want {
				if (project == "" || k.Project == project) && (archived || !m.Archived) {
					wantKeys = append(wantKeys, k)
				}
			}
			gotKeys := keysOf(got)
			slices.SortFunc(gotKeys, compareKeys)
			slices.SortFunc(wantKeys, compareKeys)
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("List(%q, archived %t) = %v, want %v", project, archived, gotKeys, wantKeys)
			}
			for _, m := range got {
				if d := MetaDiff(m, want[m.Key], true); d != "" {
					t.Errorf("List(%q): %s: %s", project, m.Key, d)
				}
			}
			wantListOrder(t, fmt.Sprintf("List(%q)", project), got)
		}
	}
}

func compareKeys(a, b recall.Key) int {
	if c := strings.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	return strings.Compare(a.Subpath, b.Subpath)
}

// testListOrder checks the order of List on sessions whose times the test
// controls: newest updated first, ties by project then ID. Conversation
// activity (an append, a pop, a clear) moves a session to the front; title
// and meta changes (title, pin, archive, labels, metadata) leave it where
// it is.
func testListOrder(e *env) {
	t := e.t
	at := func(project, id string, minute int) recall.Key {
		k := recall.Key{Project: project, Session: id}
		if _, err := e.s.Import(e.ctx, k, imported(1, minute, msg("%s", id).Entry())...); err != nil {
			t.Fatalf("Import %s: %v", k, err)
		}
		return k
	}
	x1 := at("p", "x1", 50)
	x2 := at("p", "x2", 40)
	x3 := at("p", "x3", 60)
	x4 := at("p", "x0", 50) // ties with x1, sorts before it by ID
	y1 := at("q", "y1", 50) // ties with x1, sorts after it by project

	order := func(what, project string, want ...recall.Key) {
		t.Helper()
		for _, limit := range []int{-1, 1, 2} {
			got := keysOf(listAll(t, e.ctx, e.s, project, recall.ListOptions{Limit: limit, IncludeArchived: true}))
			if !slices.Equal(got, want) {
				t.Errorf("%s: List(%q, limit %d) = %v, want %v", what, project, limit, got, want)
			}
		}
	}
	order("imported", "p", x3, x4, x1, x2)
	order("imported", "", x3, x4, x1, y1, x2)
	order("imported", "q", y1)

	e.mustAdd(x2, msg("now")) // now is after every imported time
	order("after an append to x2", "p", x2, x3, x4, x1)
	order("after an append to x2", "", x2, x3, x4, x1, y1)

	// Title and meta changes to the sessions at the back move nothing.
	md := map[string]string{"k": "v"}
	for _, ch := range []struct {
		what string
		fn   func() error
	}{
		{"SetTitle(y1)", func() error {
			_, err := recall.NewSession(e.s, y1).SetTitle(e.ctx, "touched", recall.TitleUser)
			return err
		}},
		{"SetPinned(y1)", e.changeMeta(y1, recall.MetaChange{Pinned: new(true)})},
		{"SetArchived(x1)", e.changeMeta(x1, recall.MetaChange{Archived: new(true)})},
		{"SetLabels(x4)", e.changeMeta(x4, recall.MetaChange{Labels: []string{"l"}, SetLabels: true})},
		{"SetMetadata(x1)", e.changeMeta(x1, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(md)})},
		{"SetPinned(y1, false)", e.changeMeta(y1, recall.MetaChange{Pinned: new(false)})},
	} {
		e.later()
		if err := ch.fn(); err != nil {
			t.Fatalf("%s: %v", ch.what, err)
		}
		order("after "+ch.what, "", x2, x3, x4, x1, y1)
	}

	// Activity moves a session to the front, whatever its kind.
	e.later()
	if _, err := e.s.Pop(e.ctx, y1); err != nil {
		t.Fatal(err)
	}
	order("after a pop of y1", "", y1, x2, x3, x4, x1)
	e.later()
	if err := recall.NewSession(e.s, x1).Clear(e.ctx); err != nil {
		t.Fatal(err)
	}
	order("after a clear of x1", "", x1, y1, x2, x3, x4)
	order("after a clear of x1", "p", x1, x2, x3, x4)
}

// manySessions imports n sessions into project, their times spread over
// only a few distinct minutes so that many share their Updated time; every
// fifth is archived by an entry with the same time.
func manySessions(e *env, project string, n int) []recall.Key {
	e.t.Helper()
	yes := true
	keys := make([]recall.Key, n)
	for i := range keys {
		keys[i] = recall.Key{Project: project, Session: fmt.Sprintf("s%03d", (i*37)%n)}
		entries := []recall.Entry{msg("%s-%d", project, i).Entry()}
		if i%5 == 0 {
			entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes}))
		}
		if _, err := e.s.Import(e.ctx, keys[i], imported(1, i%3, entries...)...); err != nil {
			e.t.Fatalf("Import %s: %v", keys[i], err)
		}
	}
	return keys
}

// testListPagination walks every page for many page sizes and checks that
// each session is visited exactly once, in List order, even when many share
// their Updated time.
func testListPagination(e *env) {
	t := e.t
	keys := append(manySessions(e, "a", 23), manySessions(e, "b", 14)...)
	e.mustAdd(recall.Key{Project: "a", Session: "s001", Subpath: "subagents/x"}, msg("never listed as main"))
	metas := map[recall.Key]recall.Meta{}
	for _, k := range keys {
		metas[k] = e.mustStat(k)
	}
	for _, project := range []string{"", "a", "b"} {
		for _, archived := range []bool{false, true} {
			var want []recall.Meta
			for _, m := range metas {
				if (project == "" || m.Key.Project == project) && (archived || !m.Archived) {
					want = append(want, m)
				}
			}
			storekit.SortList(want)
			for _, limit := range []int{1, 2, 3, 5, 7, 50, -1} {
				what := fmt.Sprintf("List(%q, archived %t, limit %d)", project, archived, limit)
				got := listAll(t, e.ctx, e.s, project, recall.ListOptions{Limit: limit, IncludeArchived: archived})
				if !slices.Equal(keysOf(got), keysOf(want)) {
					t.Errorf("%s visits\n %v\nwant\n %v", what, keysOf(got), keysOf(want))
					continue
				}
				for i := range got {
					if d := MetaDiff(got[i], want[i], true); d != "" {
						t.Errorf("%s: %s: %s", what, got[i].Key, d)
					}
				}
			}
		}
	}

	// The last page has no next cursor, also when it is full.
	p, err := e.s.List(e.ctx, "b", recall.ListOptions{Limit: 7, IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err = e.s.List(e.ctx, "b", recall.ListOptions{Limit: 7, IncludeArchived: true, Cursor: p.Next})
	if err != nil || len(p.Sessions) != 7 || p.Next != "" {
		t.Errorf("last full page of 14 by 7: %d sessions, next %q, %v; want 7, no cursor", len(p.Sessions), p.Next, err)
	}

	_, err = e.s.List(e.ctx, "a", recall.ListOptions{Cursor: "not a cursor!"})
	wantErr(t, "List with a garbage cursor", err, recall.ErrInvalidKey)
}

// testListDefaultLimit checks that a zero Limit means DefaultListLimit.
func testListDefaultLimit(e *env) {
	t := e.t
	n := recall.DefaultListLimit + 5
	for i := range n {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%03d", i)}
		if _, err := e.s.Import(e.ctx, k, imported(1, i, msg("x").Entry())...); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(p.Sessions) != recall.DefaultListLimit || p.Next == "" {
		t.Fatalf("first default page: %d sessions, next %q, %v; want %d and a cursor", len(p.Sessions), p.Next, err, recall.DefaultListLimit)
	}
	p, err = e.s.List(e.ctx, "p", recall.ListOptions{Cursor: p.Next})
	if err != nil || len(p.Sessions) != 5 || p.Next != "" {
		t.Errorf("second default page: %d sessions, next %q, %v; want 5 and no cursor", len(p.Sessions), p.Next, err)
	}
	all, err := e.s.List(e.ctx, "p", recall.ListOptions{Limit: -1})
	if err != nil || len(all.Sessions) != n || all.Next != "" {
		t.Errorf("List without a limit: %d sessions, next %q, %v; want %d", len(all.Sessions), all.Next, err, n)
	}
}

// testListChanges checks keyset pagination while sessions change between
// pages: no session is returned twice, and every session that did not
// change is returned once.
func testListChanges(e *env) {
	t := e.t
	var keys []recall.Key
	for i := range 12 {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}
		if _, err := e.s.Import(e.ctx, k, imported(1, i, msg("x").Entry())...); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	seen := map[recall.Key]int{}
	changed := map[recall.Key]bool{}
	opts := recall.ListOptions{Limit: 3}
	for page := 0; ; page++ {
		p, err := e.s.List(e.ctx, "p", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Sessions {
			seen[m.Key]++
		}
		if p.Next == "" || page > 20 {
			break
		}
		opts.Cursor = p.Next
		switch page {
		case 0: // touch a session already seen, and one not yet seen
			for _, k := range []recall.Key{p.Sessions[0].Key, keys[1]} {
				e.mustAdd(k, msg("touch"))
				changed[k] = true
			}
		case 1: // a new session, and a removed one not yet seen
			fresh := recall.Key{Project: "p", Session: "fresh"}
			e.mustAdd(fresh, msg("new"))
			changed[fresh] = true
			if err := e.s.Remove(e.ctx, keys[0]); err != nil {
				t.Fatal(err)
			}
			changed[keys[0]] = true
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("List returned %s %d times while paging", k, n)
		}
	}
	for _, k := range keys {
		if !changed[k] && seen[k] != 1 {
			t.Errorf("List returned unchanged %s %d times while paging, want once", k, seen[k])
		}
	}
	if seen[keys[0]] != 0 {
		t.Errorf("List returned %s after it was removed", keys[0])
	}
}

// testProjects checks Projects: every project with a main session, with its
// count and newest update; subagent records alone do not make a project.
func testProjects(e *env) {
	t := e.t
	if ps, err := recall.Projects(e.ctx, e.s); err != nil || len(ps) != 0 {
		t.Errorf("Projects of an empty store = %v, %v", ps, err)
	}
	a1 := recall.Key{Project: "a", Session: "1"}
	a2 := recall.Key{Project: "a", Session: "2"}
	a3 := recall.Key{Project: "a", Session: "3"}
	b1 := recall.Key{Project: "b", Session: "1"}
	e.mustAdd(a1, msg("x"))
	if _, err := e.s.Import(e.ctx, a2, imported(1, 0, msg("x").Entry())...); err != nil {
		t.Fatal(err)
	}
	e.mustAdd(a3, msg("x"))
	if _, err := recall.NewSession(e.s, a3).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	e.mustAdd(b1, msg("x"))
	e.mustAdd(recall.Key{Project: "b", Session: "1", Subpath: "subagents/x"}, msg("x"))
	e.mustAdd(recall.Key{Project: "b", Session: "1", Subpath: "subagents/y"}, msg("x"))

	check := func(want ...recall.ProjectInfo) {
		t.Helper()
		got, err := recall.Projects(e.ctx, e.s)
		if err != nil {
			t.Fatalf("Projects: %v", err)
		}
		slices.SortFunc(got, func(x, y recall.ProjectInfo) int { return strings.Compare(x.Project, y.Project) })
		if len(got) != len(want) {
			t.Errorf("Projects = %v, want %v", got, want)
			return
		}
		for i := range got {
			if got[i].Project != want[i].Project || got[i].Sessions != want[i].Sessions || !got[i].Updated.Equal(want[i].Updated) {
				t.Errorf("Projects[%d] = %+v, want %+v", i, got[i], want[i])
			}
		}
	}
	newest := func(keys ...recall.Key) recall.ProjectInfo {
		t.Helper()
		info := recall.ProjectInfo{Project: keys[0].Project, Sessions: len(keys)}
		for _, k := range keys {
			if m := e.mustStat(k); m.Updated.After(info.Updated) {
				info.Updated = m.Updated
			}
		}
		return info
	}
	check(newest(a1, a2, a3), newest(b1))

	if err := e.s.Remove(e.ctx, b1); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Remove(e.ctx, a1); err != nil {
		t.Fatal(err)
	}
	check(newest(a2, a3))
}
