package storetest

import (
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// The model's checks: what the store under test answered, against the
// reference.

// wantClass fails unless err has the error class want (see ErrorClass).
func (m *model) wantClass(what string, err error, want string) {
	m.t.Helper()
	if got := ErrorClass(err); got != want {
		m.t.Fatalf("%s: got %s (%v), want %s", what, got, err, want)
	}
}

// wantMeta checks a write that returns metadata: its error class, the
// metadata against the reference (times aside), then the session.
func (m *model) wantMeta(what string, key recall.Key, got recall.Meta, err error, want string) {
	m.t.Helper()
	m.wantClass(what+" "+key.String(), err, want)
	if err == nil {
		ref, _, _ := m.refMeta(key)
		if d := MetaDiff(got, ref, false); d != "" {
			m.t.Fatalf("%s %s returned %s", what, key, d)
		}
	}
	m.compare(key)
}

// sameLog compares a log the store returned with the reference's. Times
// compare only where the model chose them (imported entries, stamped by
// oldTime); the store's clock stamps the rest.
func (m *model) sameLog(what string, got, want []recall.Entry) {
	m.t.Helper()
	if len(got) != len(want) {
		m.t.Fatalf("%s: %d entries %s, want %d %s", what, len(got), kinds(got), len(want), kinds(want))
	}
	for i := range got {
		if d := EntryDiff(got[i], want[i], want[i].Time.Before(oldTime(24*60))); d != "" {
			m.t.Fatalf("%s: entry %d: %s", what, i, d)
		}
	}
}

// compare checks that the store under test holds each key as the
// reference does: the same log (Load), the metadata Replay derives from it
// (times aside) in Stat and Load, and the same view, refs included, at the
// same LastSeq.
func (m *model) compare(keys ...recall.Key) {
	m.t.Helper()
	for _, key := range keys {
		want, wantLive, exists := m.refMeta(key)
		got, err := m.sut.Stat(m.ctx, key)
		if !exists {
			m.wantClass("Stat "+key.String(), err, "ErrNotFound")
		} else {
			m.wantClass("Stat "+key.String(), err, "nil")
			if d := MetaDiff(got, want, false); d != "" {
				m.t.Fatalf("Stat %s: %s", key, d)
			}
			if got.Created.IsZero() || got.Updated.Before(got.Created) {
				m.t.Fatalf("Stat %s: Created %v, Updated %v", key, got.Created, got.Updated)
			}
			lm, log, err := m.sut.Load(m.ctx, key)
			m.wantClass("Load "+key.String(), err, "nil")
			if d := MetaDiff(lm, want, false); d != "" {
				m.t.Fatalf("Load %s: %s", key, d)
			}
			m.sameLog("Load "+key.String(), log, m.logs[key])
		}
		live, last, err := m.sut.Items(m.ctx, key, 0)
		m.wantClass("Items "+key.String(), err, "nil")
		if d := liveDiff(live, wantLive); d != "" {
			m.t.Fatalf("Items %s: %s", key, d)
		}
		if last != want.LastSeq {
			m.t.Fatalf("Items %s returned LastSeq %d, want %d", key, last, want.LastSeq)
		}
		m.comparePages(key, wantLive, want.LastSeq)
	}
}

// wantPage is the page of view that opts selects, found item by item.
func wantPage(view []recall.LiveItem, opts recall.ItemPageOptions) recall.ItemPage {
	var page recall.ItemPage
	for i := range view {
		l := view[i]
		if !opts.Oldest {
			l = view[len(view)-1-i]
		}
		if opts.After != (recall.ItemRef{}) {
			if c := l.Ref.Compare(opts.After); opts.Oldest && c <= 0 || !opts.Oldest && c >= 0 {
				continue
			}
		}
		if opts.Limit > 0 && len(page.Items) == opts.Limit {
			page.More = true
			break
		}
		page.Items = append(page.Items, l)
	}
	return page
}

// comparePages pages through the view of key with recall.StoreSession.ReadItems in
// both orders, two items a page, each page after the last one's last
// item, and compares the pages with the view.
func (m *model) comparePages(key recall.Key, view []recall.LiveItem, last int64) {
	m.t.Helper()
	for _, oldest := range []bool{false, true} {
		want := slices.Clone(view)
		if !oldest {
			slices.Reverse(want)
		}
		var got []recall.LiveItem
		opts := recall.ItemPageOptions{Limit: 2, Oldest: oldest}
		for range len(view) + 2 {
			page, err := recall.NewSession(m.sut, key).ReadItems(m.ctx, opts)
			what := fmt.Sprintf("ReadItems(%s, %+v)", key, opts)
			m.wantClass(what, err, "nil")
			if page.LastSeq != last {
				m.t.Fatalf("%s: LastSeq %d, want %d", what, page.LastSeq, last)
			}
			got = append(got, page.Items...)
			if !page.More {
				break
			}
			if len(page.Items) == 0 {
				m.t.Fatalf("%s: an empty page with More", what)
			}
			opts.After = page.Items[len(page.Items)-1].Ref
		}
		if d := liveDiff(got, want); d != "" {
			m.t.Fatalf("ReadItems(%s, oldest %v), page by page: %s", key, oldest, d)
		}
	}
}

// compareAll compares every key of the model and the full listings.
func (m *model) compareAll() {
	m.t.Helper()
	m.compare(modelKeys()...)
	for _, project := range append([]string{""}, modelProjects...) {
		m.compareList(project, recall.ListOptions{Limit: -1, IncludeArchived: true})
		m.compareList(project, recall.ListOptions{Limit: -1, Pinned: true})
		m.compareList(project, recall.ListOptions{Limit: -1, Trashed: true})
	}
}

// compareList walks every page of a listing in the store under test and
// compares the sessions found with the reference's: the same keys with the
// same metadata (times aside), in the store's own List order.
func (m *model) compareList(project string, opts recall.ListOptions) {
	m.t.Helper()
	what := fmt.Sprintf("List(%q, %+v)", project, opts)
	_, err := m.sut.List(m.ctx, project, opts)
	if opts.Parent != "" && project == "" {
		m.wantClass(what, err, "ErrInvalidKey")
		return
	}
	m.wantClass(what, err, "nil")
	got := listAll(m.t, m.ctx, m.sut, project, opts)
	want := m.refList(project, opts)
	wantListOrder(m.t, what, got)
	gk, wk := keysOf(got), keysOf(want)
	slices.SortFunc(gk, compareKeys)
	slices.SortFunc(wk, compareKeys)
	if !slices.Equal(gk, wk) {
		m.t.Fatalf("%s = %v, want %v", what, gk, wk)
	}
	byKey := map[recall.Key]recall.Meta{}
	for _, w := range want {
		byKey[w.Key] = w
	}
	for _, g := range got {
		if d := MetaDiff(g, byKey[g.Key], false); d != "" {
			m.t.Fatalf("%s: %s: %s", what, g.Key, d)
		}
	}
}

// liveDiff compares two item views, refs included.
func liveDiff(got, want []recall.LiveItem) string {
	if d := itemsDiff(recall.PlainItems(got), recall.PlainItems(want)); d != "" {
		return d
	}
	for i := range got {
		if got[i].Ref != want[i].Ref {
			return fmt.Sprintf("item %d has ref %+v, want %+v", i, got[i].Ref, want[i].Ref)
		}
	}
	return ""
}
