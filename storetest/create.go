package storetest

import (
	"fmt"
	"maps"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// createCase is one way testCreate creates a session: the options it
// passes to recall.StoreSession.Create and what the session holds afterwards.
type createCase struct {
	name      string
	opts      recall.CreateOptions
	wantTitle string
	wantKinds []recall.Kind
}

// testCreate checks sessions created with recall.StoreSession.Create: empty, with a
// title and metadata, with items. Each is listed at once (an empty one
// with 0 items, Created equal to Updated), its log starts with a create
// entry, and Items of an empty one is empty at LastSeq 1. Creating a key
// that exists is ErrConflict and changes nothing.
func testCreate(e *env) {
	md := map[string]string{"customer": "acme", "ticket": "R-11"}
	cases := []createCase{
		{"empty", recall.CreateOptions{}, "", []recall.Kind{recall.KindCreate}},
		{"titled", recall.CreateOptions{Title: " A  new\nsession ", Metadata: md}, "A new session",
			[]recall.Kind{recall.KindCreate, recall.KindTitle, recall.KindMeta}},
		{"with-items", recall.CreateOptions{Items: msgs("i", 2)}, "",
			[]recall.Kind{recall.KindCreate, recall.KindItem, recall.KindItem}},
	}
	for _, c := range cases {
		checkCreated(e, c)
	}
	checkCreatedListed(e, len(cases))
	empty := recall.Key{Project: "p", Session: "empty"}
	checkCreatedEmpty(e, empty)
	checkCreateExisting(e)
	checkCreateRefused(e)
	checkEmptyGoesOn(e, empty)
	checkCreateRaced(e)
}

// checkCreated creates the session p/c.name with c.opts and checks that
// Create returns what Stat does, the session's key, title, metadata,
// counts and times, the kinds of its log's entries, its view, and that
// storekit.VerifySession finds it healthy.
func checkCreated(e *env, c createCase) {
	t := e.t
	key := recall.Key{Project: "p", Session: c.name}
	m, err := recall.NewSession(e.s, key).Create(e.ctx, c.opts)
	if err != nil {
		t.Errorf("Create %s: %v", c.name, err)
		return
	}
	stat := e.mustStat(key)
	if d := MetaDiff(m, stat, true); d != "" {
		t.Errorf("Create %s returned metadata that differs from Stat: %s", c.name, d)
	}
	wantSrc := recall.TitleNone
	if c.wantTitle != "" {
		wantSrc = recall.TitleUser
	}
	switch {
	case stat.Key != key:
		t.Errorf("Create %s: Key %s", c.name, stat.Key)
	case stat.Title != c.wantTitle || stat.TitleSource != wantSrc:
		t.Errorf("Create %s: title %q/%q, want %q/%q", c.name, stat.Title, stat.TitleSource, c.wantTitle, wantSrc)
	case !maps.Equal(stat.Metadata, c.opts.Metadata):
		t.Errorf("Create %s: metadata %v, want %v", c.name, stat.Metadata, c.opts.Metadata)
	case stat.LastSeq != int64(len(c.wantKinds)) || stat.ItemCount != len(c.opts.Items):
		t.Errorf("Create %s: LastSeq %d, ItemCount %d; want %d, %d", c.name, stat.LastSeq, stat.ItemCount, len(c.wantKinds), len(c.opts.Items))
	case !plausibleTime(stat.Created) || !stat.Updated.Equal(stat.Created):
		t.Errorf("Create %s: Created %v, Updated %v; want both now", c.name, stat.Created, stat.Updated)
	}
	_, log := e.mustLoad(key)
	if len(log) != len(c.wantKinds) {
		t.Errorf("Create %s: log %s, want kinds %v", c.name, kinds(log), c.wantKinds)
	} else {
		for i, ent := range log {
			if ent.Kind != c.wantKinds[i] || ent.Seq != int64(i+1) {
				t.Errorf("Create %s: log %s, want kinds %v", c.name, kinds(log), c.wantKinds)
				break
			}
		}
	}
	e.wantView(key, c.opts.Items)
	if err := storekit.VerifySession(e.ctx, e.s, key); err != nil {
		t.Errorf("VerifySession of a session created %s: %v", c.name, err)
	}
}

// checkCreatedListed checks that the n sessions created in project "p"
// are listed at once, with every field as Stat returns it.
func checkCreatedListed(e *env, n int) {
	t := e.t
	listed := listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1})
	if len(listed) != n {
		t.Errorf("List after Create = %v, want %d sessions", keysOf(listed), n)
	}
	for _, m := range listed {
		if d := MetaDiff(m, e.mustStat(m.Key), true); d != "" {
			t.Errorf("List: %s: %s", m.Key, d)
		}
	}
}

// checkCreatedEmpty checks the session empty, created with no options:
// Items returns no items at LastSeq 1, and Pop returns nil and writes
// nothing.
func checkCreatedEmpty(e *env, empty recall.Key) {
	t := e.t
	if live, last, err := e.s.Items(e.ctx, empty, 0); len(live) != 0 || last != 1 || err != nil {
		t.Errorf("Items of an empty session = %d items, LastSeq %d, %v; want none, 1, nil", len(live), last, err)
	}
	if it, err := e.s.Pop(e.ctx, empty); it != nil || err != nil {
		t.Errorf("Pop of an empty session = %s, %v; want nil, nil", clip(it), err)
	}
	if m := e.mustStat(empty); m.LastSeq != 1 {
		t.Errorf("a Pop of an empty session wrote: LastSeq %d", m.LastSeq)
	}
}

// checkCreateExisting checks that creating a key that exists, however it
// was created (by Create, or by an append to p/appended), is ErrConflict
// and changes nothing.
func checkCreateExisting(e *env) {
	appended := recall.Key{Project: "p", Session: "appended"}
	e.mustAdd(appended, msg("x"))
	for _, name := range []string{"empty", "titled", "with-items", "appended"} {
		key := recall.Key{Project: "p", Session: name}
		before := e.state(key)
		_, err := recall.NewSession(e.s, key).Create(e.ctx, recall.CreateOptions{Title: "again", Items: msgs("again", 1)})
		wantErr(e.t, "Create of the existing session "+name, err, recall.ErrConflict)
		e.wantState("a refused Create of "+name, key, before)
	}
}

// checkCreateRefused checks that a Create refused for a bad item, a bad
// metadata key or a title that is not UTF-8 writes nothing.
func checkCreateRefused(e *env) {
	t := e.t
	bad := recall.Key{Project: "p", Session: "bad"}
	_, err := recall.NewSession(e.s, bad).Create(e.ctx, recall.CreateOptions{Items: []recall.Item{msg("ok"), recall.Item("[1]")}})
	wantErr(t, "Create with a bad item", err, recall.ErrInvalidItem)
	_, err = recall.NewSession(e.s, bad).Create(e.ctx, recall.CreateOptions{Metadata: map[string]string{"": "v"}})
	wantErr(t, "Create with an empty metadata key", err, recall.ErrInvalidMetadata)
	_, err = recall.NewSession(e.s, bad).Create(e.ctx, recall.CreateOptions{Title: "caf\xe9"})
	wantErr(t, "Create with a title that is not UTF-8", err, recall.ErrInvalidItem)
	e.wantAbsent("a refused Create", bad)
}

// checkEmptyGoesOn checks that the empty session empty goes on like any
// other: items, a fork, removal, and creation again under the same key.
func checkEmptyGoesOn(e *env, empty recall.Key) {
	t := e.t
	if seq := e.mustAdd(empty, msg("first")); seq != 2 {
		t.Errorf("Append to an empty session = %d, want 2", seq)
	}
	e.wantView(empty, []recall.Item{msg("first")})
	emptyFork := recall.Key{Project: "p", Session: "fork-of-empty"}
	if m, err := recall.NewSession(e.s, empty).Fork(e.ctx, 1, emptyFork); err != nil || m.ItemCount != 0 {
		t.Errorf("Fork of an empty session at its create entry = %d items, %v; want 0, nil", m.ItemCount, err)
	}
	e.wantView(emptyFork, nil)
	if err := e.s.Remove(e.ctx, empty); err != nil {
		t.Fatal(err)
	}
	if m, err := recall.NewSession(e.s, empty).Create(e.ctx, recall.CreateOptions{}); err != nil || m.LastSeq != 1 || m.ItemCount != 0 {
		t.Errorf("Create after Remove = LastSeq %d, %d items, %v; want a new empty session", m.LastSeq, m.ItemCount, err)
	}
	e.wantView(empty, nil)
}

// checkCreateRaced checks that of many goroutines creating one key,
// exactly one succeeds, and the session holds one create entry and one
// title.
func checkCreateRaced(e *env) {
	t := e.t
	for r := range 3 {
		key := recall.Key{Project: "p", Session: fmt.Sprintf("raced-%d", r)}
		ok, conflicts := race(t, writers, "racing Create of "+key.String(), func(w int) error {
			_, err := recall.NewSession(e.s, key).Create(e.ctx, recall.CreateOptions{Title: fmt.Sprintf("by %d", w)})
			return err
		})
		if ok != 1 || conflicts != writers-1 {
			t.Errorf("%d goroutines creating %s: %d succeeded, %d conflicts; want exactly 1 success", writers, key, ok, conflicts)
		}
		if m := e.mustStat(key); m.LastSeq != 2 {
			t.Errorf("%s created by racing goroutines: LastSeq %d, want 2 (one create, one title)", key, m.LastSeq)
		}
	}
}
