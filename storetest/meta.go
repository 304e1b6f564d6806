package storetest

import (
	"slices"
	"strings"

	"github.com/recallkit/recall"
)

// testTitles checks titles and their sources: a user title wins over auto
// titles, an empty title removes it, whitespace is folded.
func testTitles(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("a"))
	if m := e.mustStat(key); m.Title != "" || m.TitleSource != recall.TitleNone {
		t.Errorf("new session title = %q/%q, want none", m.Title, m.TitleSource)
	}

	steps := []struct {
		title     string
		source    recall.TitleSource
		want      string
		wantSrc   recall.TitleSource
		wantWrite bool // whether the call appends an entry
	}{
		{"First auto", recall.TitleAuto, "First auto", recall.TitleAuto, true},
		{"Second auto", recall.TitleAuto, "Second auto", recall.TitleAuto, true},
		{"Mine", recall.TitleUser, "Mine", recall.TitleUser, true},
		{"Auto again", recall.TitleAuto, "Mine", recall.TitleUser, false},
		{"  Multi\nline\t title ", recall.TitleUser, "Multi line title", recall.TitleUser, true},
		{"Über 世界 🎉", recall.TitleUser, "Über 世界 🎉", recall.TitleUser, true},
		{"Auto once more", recall.TitleAuto, "Über 世界 🎉", recall.TitleUser, false},
		{"", recall.TitleUser, "", recall.TitleNone, true}, // removes the title
		{"Auto after removal", recall.TitleAuto, "Auto after removal", recall.TitleAuto, true},
		{"", recall.TitleAuto, "", recall.TitleNone, true},
	}
	for _, st := range steps {
		before := e.mustStat(key)
		m, err := recall.NewSession(e.s, key).SetTitle(e.ctx, st.title, st.source)
		if err != nil {
			t.Errorf("SetTitle(%q, %s): %v", st.title, st.source, err)
			continue
		}
		if m.Title != st.want || m.TitleSource != st.wantSrc {
			t.Errorf("SetTitle(%q, %s) = %q/%q, want %q/%q", st.title, st.source, m.Title, m.TitleSource, st.want, st.wantSrc)
		}
		after := e.mustStat(key)
		if d := MetaDiff(after, m, true); d != "" {
			t.Errorf("SetTitle(%q) returned metadata that differs from Stat: %s", st.title, d)
		}
		if wrote := after.LastSeq > before.LastSeq; wrote != st.wantWrite {
			t.Errorf("SetTitle(%q, %s) wrote an entry: %t, want %t", st.title, st.source, wrote, st.wantWrite)
		}
	}
	e.wantView(key, []recall.Item{msg("a")}) // titles are not items

	// An auto title entry appended directly (bypassing SetTitle's check)
	// still never replaces a user title: the rule lives in the metadata.
	if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "User", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	e.mustAppend(key, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "Sneaky", Source: recall.TitleAuto}))
	if m := e.mustStat(key); m.Title != "User" || m.TitleSource != recall.TitleUser {
		t.Errorf("after a raw auto title entry: %q/%q, want User/user", m.Title, m.TitleSource)
	}
	p, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(p.Sessions) != 1 {
		t.Fatalf("List = %v, %v", p.Sessions, err)
	}
	if m := p.Sessions[0]; m.Title != "User" || m.TitleSource != recall.TitleUser {
		t.Errorf("List title = %q/%q, want User/user", m.Title, m.TitleSource)
	}
	if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "x", "robot"); err == nil {
		t.Errorf("SetTitle with an unknown source succeeded")
	}
}

// testArchivePinLabels checks archive, pin and labels, and that List
// leaves archived sessions out unless asked.
func testArchivePinLabels(e *env) {
	t := e.t
	a := recall.Key{Project: "p", Session: "a"}
	b := recall.Key{Project: "p", Session: "b"}
	e.mustAdd(a, msg("a"))
	e.mustAdd(b, msg("b"))

	listed := func(opts recall.ListOptions) []recall.Key {
		t.Helper()
		opts.Limit = -1
		p, err := e.s.List(e.ctx, "p", opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		keys := keysOf(p.Sessions)
		slices.SortFunc(keys, func(x, y recall.Key) int { return strings.Compare(x.Session, y.Session) })
		return keys
	}

	m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)})
	if err != nil || !m.Archived {
		t.Fatalf("SetArchived = %+v, %v", m, err)
	}
	if got := listed(recall.ListOptions{}); !slices.Equal(got, []recall.Key{b}) {
		t.Errorf("List without archived = %v, want [p/b]", got)
	}
	if got := listed(recall.ListOptions{IncludeArchived: true}); !slices.Equal(got, []recall.Key{a, b}) {
		t.Errorf("List with archived = %v, want [p/a p/b]", got)
	}
	e.wantView(a, []recall.Item{msg("a")}) // archived sessions still read
	e.mustAdd(a, msg("a2"))                // and write; they stay archived
	if m := e.mustStat(a); !m.Archived {
		t.Errorf("appending unarchived the session")
	}
	if m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(false)}); err != nil || m.Archived {
		t.Errorf("unarchive = %+v, %v", m, err)
	}
	if got := listed(recall.ListOptions{}); !slices.Equal(got, []recall.Key{a, b}) {
		t.Errorf("List after unarchive = %v, want [p/a p/b]", got)
	}

	if m, err := recall.NewSession(e.s, b).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil || !m.Pinned {
		t.Errorf("pin = %+v, %v", m, err)
	}
	if m, err := recall.NewSession(e.s, b).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil || !m.Pinned {
		t.Errorf("pin twice = %+v, %v", m, err)
	}
	if m := e.mustStat(b); !m.Pinned || m.Archived {
		t.Errorf("after pin: pinned %t archived %t", m.Pinned, m.Archived)
	}
	if m, err := recall.NewSession(e.s, b).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(false)}); err != nil || m.Pinned {
		t.Errorf("unpin = %+v, %v", m, err)
	}

	if m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"zeta", "alpha", "zeta"}, SetLabels: true}); err != nil || !slices.Equal(m.Labels, []string{"zeta", "alpha", "zeta"}) {
		t.Errorf("SetLabels = %q, %v; want the labels as given", m.Labels, err)
	}
	// A meta change that leaves labels alone keeps them.
	if m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil || !slices.Equal(m.Labels, []string{"zeta", "alpha", "zeta"}) {
		t.Errorf("labels after pin = %q, %v", m.Labels, err)
	}
	if m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"only"}, SetLabels: true}); err != nil || !slices.Equal(m.Labels, []string{"only"}) {
		t.Errorf("SetLabels replace = %q, %v", m.Labels, err)
	}
	if m, err := recall.NewSession(e.s, a).ChangeMeta(e.ctx, recall.MetaChange{SetLabels: true}); err != nil || len(m.Labels) != 0 {
		t.Errorf("SetLabels() = %q, %v; want no labels", m.Labels, err)
	}
	m = e.mustStat(a)
	if !m.Pinned || m.Archived || len(m.Labels) != 0 {
		t.Errorf("final a: pinned %t archived %t labels %q", m.Pinned, m.Archived, m.Labels)
	}
	e.wantView(a, []recall.Item{msg("a"), msg("a2")})
}
