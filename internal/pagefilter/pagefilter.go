// Package pagefilter pages through a store's sessions (List) and search
// hits (Search) keeping only those of the sessions a predicate accepts,
// such as the sessions of one source (importer.Source), a page at a time.
//
// A filtered page is as long as the page asked for unless the listing
// ends first, and its cursor never skips a session or hit that the
// predicate accepts: the next page starts right after the last one
// returned, not after the last one read. Each read is at most a page of
// the size asked for, so a call holds a page, however many sessions the
// predicate turns away (it reads more pages when it turns many away).
package pagefilter

import (
	"context"
	"errors"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/search"
)

// Keep reports whether a session belongs in a filtered page.
type Keep func(recall.Meta) bool

// OfSource returns the Keep of the sessions of source, the tool they came
// from (importer.Source); nil, which keeps every session, for "".
func OfSource(source string) Keep {
	if source == "" {
		return nil
	}
	return func(m recall.Meta) bool { return importer.Source(m) == source }
}

// List returns the page of st.List(ctx, project, opts) that holds only
// the sessions keep accepts: up to opts.Limit of them (a negative limit:
// every one), from opts.Cursor on, and the cursor of the page after them.
// A nil keep accepts every session: it is st.List.
//
// A store's List cursors are opaque, so the page ends at a cursor the
// store gave: it reads pages of opts.Limit sessions, and when a page
// holds more accepted sessions than the filtered page has room for, it
// reads that page again cut after the last one that fits, whose cursor is
// then the store's. Every page it returns sessions from is consumed whole.
func List(ctx context.Context, st recall.Store, project string, opts recall.ListOptions, keep Keep) (recall.Page, error) {
	if keep == nil {
		return st.List(ctx, project, opts)
	}
	want := opts.Limit
	if want == 0 {
		want = recall.DefaultListLimit
	}
	out := recall.Page{Sessions: []recall.Meta{}}
	size := want
	for {
		read := opts
		read.Limit = size
		page, err := st.List(ctx, project, read)
		if err != nil {
			return recall.Page{}, err
		}
		need := want - len(out.Sessions)
		if i := nth(page.Sessions, keep, need); want > 0 && i >= 0 && i < len(page.Sessions)-1 {
			size = i + 1 // read again, cut after the last session that fits
			continue
		}
		for _, m := range page.Sessions {
			if keep(m) {
				out.Sessions = append(out.Sessions, m)
			}
		}
		if page.Next == "" || len(page.Sessions) == 0 || len(out.Sessions) == want {
			out.Next = page.Next
			return out, nil
		}
		opts.Cursor, size = page.Next, want
	}
}

// nth returns the index in metas of the nth session keep accepts (n from
// 1), or -1 when fewer are accepted.
func nth(metas []recall.Meta, keep Keep, n int) int {
	for i, m := range metas {
		if keep(m) {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// SearchPage is a page of hits with the metadata of their sessions.
type SearchPage struct {
	recall.SearchPage
	// Sessions holds the metadata of the session of every hit, read once
	// a session (one Stat), when the hit was read.
	Sessions map[recall.Key]recall.Meta
}

// Search returns the page of recall.Search(ctx, st, opts) that holds only
// the hits of sessions keep accepts (a nil keep accepts every session),
// with those sessions' metadata: up to opts' page size of them, from
// opts.Cursor on, and the cursor of the page after them. A hit of a
// session removed since the search read it is left out.
//
// It reads pages of hits of opts' page size, and the metadata of each
// session of them once, until the page is full or the hits end; a page
// that fills up before its last hit ends at the search cursor of the last
// hit kept (search.CursorAt), where every Searcher continues.
func Search(ctx context.Context, st recall.Store, opts recall.SearchOptions, keep Keep) (SearchPage, error) {
	want := opts.PageSize()
	out := SearchPage{SearchPage: recall.SearchPage{Hits: []recall.Hit{}}, Sessions: map[recall.Key]recall.Meta{}}
	turned := map[recall.Key]bool{} // sessions left out: refused by keep, or gone
	for {
		page, err := recall.Search(ctx, st, opts)
		if err != nil {
			return SearchPage{}, err
		}
		for i, h := range page.Hits {
			if turned[h.Key] {
				continue
			}
			if _, ok := out.Sessions[h.Key]; !ok {
				m, err := st.Stat(ctx, h.Key)
				if errors.Is(err, recall.ErrNotFound) || err == nil && keep != nil && !keep(m) {
					turned[h.Key] = true
					continue
				}
				if err != nil {
					return SearchPage{}, err
				}
				out.Sessions[h.Key] = m
			}
			out.Hits = append(out.Hits, h)
			if len(out.Hits) < want {
				continue
			}
			out.Next = page.Next
			if i < len(page.Hits)-1 {
				out.Next = search.CursorAt(h).String()
			}
			return out, nil
		}
		if page.Next == "" || len(page.Hits) == 0 {
			return out, nil
		}
		opts.Cursor = page.Next
	}
}
