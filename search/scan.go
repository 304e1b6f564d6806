package search

import (
	"github.com/recallkit/recall"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// scanListPage is how many sessions Scan asks List for at a time.
const scanListPage = 256

// Scan searches any store without an index, and is the reference every
// recall.Searcher is checked against (see storetest): it lists the sessions opts select,
// newest-updated first, loads each and matches the text of its items (see
// Text) and its title against the query. Its Rank is the number of
// times the terms occur.
//
// It stops early once it holds a full page and the sessions left are all
// older than the page's last hit: an item is never newer than its
// session's Updated time (recall.Meta.Apply), and a title hit carries
// that time. A session removed while it runs is skipped.
func Scan(ctx context.Context, s recall.Store, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := Check(opts); err != nil {
		return recall.SearchPage{}, err
	}
	q, _ := Parse(opts.Query)
	var cursor *Cursor
	if opts.Cursor != "" {
		c, _ := ParseCursor(opts.Cursor)
		cursor = &c
	}
	top := topHits{keep: opts.PageSize() + 1}
	lopts := recall.ListOptions{Limit: scanListPage, IncludeArchived: opts.IncludeArchived}
pages:
	for {
		page, err := s.List(ctx, opts.Project, lopts)
		if err != nil {
			return recall.SearchPage{}, fmt.Errorf("recall: search: %w", err)
		}
		for _, m := range page.Sessions {
			if !m.Key.IsMain() {
				continue
			}
			if top.full() && m.Updated.Before(top.last().Time) || !opts.Since.IsZero() && m.Updated.Before(opts.Since) {
				break pages // every session left is older
			}
			if err := ctx.Err(); err != nil {
				return recall.SearchPage{}, fmt.Errorf("recall: search: %w", err)
			}
			meta, entries, err := s.Load(ctx, m.Key)
			if errors.Is(err, recall.ErrNotFound) {
				continue
			}
			if err != nil {
				return recall.SearchPage{}, fmt.Errorf("recall: search %s: %w", m.Key, err)
			}
			if meta.Archived && !opts.IncludeArchived || !meta.Trashed.IsZero() {
				continue // archived or trashed since List
			}
			for _, c := range SessionHits(meta, entries, q, opts) {
				if cursor == nil || cursor.After(c.Hit) {
					top.add(c)
				}
			}
		}
		if page.Next == "" {
			break
		}
		lopts.Cursor = page.Next
	}
	hits := top.sorted()
	var out recall.SearchPage
	if len(hits) == top.keep {
		hits = hits[:len(hits)-1]
		out.Next = CursorAt(hits[len(hits)-1].Hit).String()
	}
	out.Hits = make([]recall.Hit, len(hits))
	for i, c := range hits {
		c.Snippet, c.Matches = Snippet(c.Text, q)
		out.Hits[i] = c.Hit
	}
	return out, nil
}

// Candidate is a hit before its snippet is cut: the recall.Hit with every field
// but Snippet and Matches, and the text Snippet cuts them from.
type Candidate struct {
	recall.Hit
	Text string
}

// SessionHits returns every hit of one session's log for the query and
// the filters of opts (role, time range, live view or WholeLog; not the
// project, archive or cursor filters), in no particular order, without
// snippets: the matching rule of search, written once. meta is the
// session's metadata (recall.Replay of entries), entries its whole log in Seq
// order.
func SessionHits(meta recall.Meta, entries []recall.Entry, q Query, opts recall.SearchOptions) []Candidate {
	var out []Candidate
	match := func(ref recall.ItemRef, role, text string, e recall.Entry) {
		if text == "" || opts.Role != "" && role != opts.Role ||
			!opts.Since.IsZero() && e.Time.Before(opts.Since) ||
			!opts.Until.IsZero() && !e.Time.Before(opts.Until) {
			return
		}
		norm := Normalize(text)
		if !q.Match(norm) {
			return
		}
		out = append(out, Candidate{
			Hit: recall.Hit{Key: meta.Key, Title: meta.Title, Ref: ref, Role: role, Time: e.Time,
				Rank: float64(Occurrences(norm, q))},
			Text: text,
		})
	}
	item := func(ref recall.ItemRef, it recall.Item, e recall.Entry) {
		role, text := Text(it)
		match(ref, role, text, e)
	}
	if opts.WholeLog {
		for _, e := range entries {
			switch e.Kind {
			case recall.KindItem:
				if it, ok := e.Item(); ok {
					item(recall.ItemRef{Seq: e.Seq}, it, e)
				}
			case recall.KindCompaction:
				var c recall.Compaction
				if json.Unmarshal(e.Data, &c) == nil {
					for i, it := range c.Items {
						item(recall.ItemRef{Seq: e.Seq, Index: i}, it, e)
					}
				}
			}
		}
	} else {
		_, live := recall.Replay(meta.Key, entries)
		for _, l := range live {
			i := sort.Search(len(entries), func(i int) bool { return entries[i].Seq >= l.Ref.Seq })
			if i < len(entries) && entries[i].Seq == l.Ref.Seq {
				item(l.Ref, l.Item, entries[i])
			}
		}
	}
	match(recall.ItemRef{}, recall.RoleTitle, meta.Title, recall.Entry{Time: meta.Updated})
	return out
}

// topHits keeps the first keep candidates in search order among those
// added, sorting and cutting when it has gathered twice as many.
type topHits struct {
	keep int
	c    []Candidate
	cut  bool // c is sorted and at most keep long
}

func (t *topHits) add(c Candidate) {
	t.c = append(t.c, c)
	t.cut = false
	if len(t.c) >= 2*t.keep {
		t.sorted()
	}
}

func (t *topHits) sorted() []Candidate {
	if !t.cut {
		slices.SortFunc(t.c, func(a, b Candidate) int { return Compare(a.Hit, b.Hit) })
		t.c = t.c[:min(len(t.c), t.keep)]
		t.cut = true
	}
	return t.c
}

func (t *topHits) full() bool { return len(t.sorted()) == t.keep }

func (t *topHits) last() Candidate { return t.c[len(t.c)-1] }
