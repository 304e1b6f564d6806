package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// scanListPage is how many sessions ScanSearch asks List for at a time.
const scanListPage = 256

// ScanSearch is Search without an index, and the reference every Searcher
// is checked against (see storetest): it lists the sessions opts select,
// newest-updated first, loads each and matches the text of its items (see
// SearchText) and its title against the query. Its Rank is the number of
// times the terms occur.
//
// It stops early once it holds a full page and the sessions left are all
// older than the page's last hit: an item is never newer than its
// session's Updated time (Meta.Apply), and a title hit carries that time.
// A session removed while it runs is skipped.
func ScanSearch(ctx context.Context, s Store, opts SearchOptions) (SearchPage, error) {
	if err := CheckSearchOptions(opts); err != nil {
		return SearchPage{}, err
	}
	q, _ := ParseQuery(opts.Query)
	var cursor *SearchCursor
	if opts.Cursor != "" {
		c, _ := ParseSearchCursor(opts.Cursor)
		cursor = &c
	}
	top := topHits{keep: opts.PageSize() + 1}
	lopts := ListOptions{Limit: scanListPage, IncludeArchived: opts.IncludeArchived}
pages:
	for {
		page, err := s.List(ctx, opts.Project, lopts)
		if err != nil {
			return SearchPage{}, fmt.Errorf("recall: search: %w", err)
		}
		for _, m := range page.Sessions {
			if !m.Key.IsMain() {
				continue
			}
			if top.full() && m.Updated.Before(top.last().Time) || !opts.Since.IsZero() && m.Updated.Before(opts.Since) {
				break pages // every session left is older
			}
			if err := ctx.Err(); err != nil {
				return SearchPage{}, fmt.Errorf("recall: search: %w", err)
			}
			meta, entries, err := s.Load(ctx, m.Key)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return SearchPage{}, fmt.Errorf("recall: search %s: %w", m.Key, err)
			}
			if meta.Archived && !opts.IncludeArchived {
				continue // archived since List
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
	var out SearchPage
	if len(hits) == top.keep {
		hits = hits[:len(hits)-1]
		out.Next = HitCursor(hits[len(hits)-1].Hit).String()
	}
	out.Hits = make([]Hit, len(hits))
	for i, c := range hits {
		c.Snippet, c.Matches = MakeSnippet(c.Text, q)
		out.Hits[i] = c.Hit
	}
	return out, nil
}

// Candidate is a hit before its snippet is cut: the Hit with every field
// but Snippet and Matches, and the text MakeSnippet cuts them from.
type Candidate struct {
	Hit
	Text string
}

// SessionHits returns every hit of one session's log for the query and
// the filters of opts (role, time range, live view or WholeLog; not the
// project, archive or cursor filters), in no particular order, without
// snippets: the matching rule of search, written once. meta is the
// session's metadata (Replay of entries), entries its whole log in Seq
// order.
func SessionHits(meta Meta, entries []Entry, q Query, opts SearchOptions) []Candidate {
	var out []Candidate
	match := func(ref ItemRef, role, text string, e Entry) {
		if text == "" || opts.Role != "" && role != opts.Role ||
			!opts.Since.IsZero() && e.Time.Before(opts.Since) ||
			!opts.Until.IsZero() && !e.Time.Before(opts.Until) {
			return
		}
		norm := NormalizeText(text)
		if !q.Match(norm) {
			return
		}
		out = append(out, Candidate{
			Hit: Hit{Key: meta.Key, Title: meta.Title, Ref: ref, Role: role, Time: e.Time,
				Rank: float64(countMatches(norm, q))},
			Text: text,
		})
	}
	item := func(ref ItemRef, it Item, e Entry) {
		role, text := SearchText(it)
		match(ref, role, text, e)
	}
	if opts.WholeLog {
		for _, e := range entries {
			switch e.Kind {
			case KindItem:
				if it, ok := ItemOf(e); ok {
					item(ItemRef{Seq: e.Seq}, it, e)
				}
			case KindCompaction:
				var c Compaction
				if json.Unmarshal(e.Data, &c) == nil {
					for i, it := range c.Items {
						item(ItemRef{Seq: e.Seq, Index: i}, it, e)
					}
				}
			}
		}
	} else {
		_, live := Replay(meta.Key, entries)
		for _, l := range live {
			i := sort.Search(len(entries), func(i int) bool { return entries[i].Seq >= l.Ref.Seq })
			if i < len(entries) && entries[i].Seq == l.Ref.Seq {
				item(l.Ref, l.Item, entries[i])
			}
		}
	}
	match(ItemRef{}, RoleTitle, meta.Title, Entry{Time: meta.Updated})
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
		slices.SortFunc(t.c, func(a, b Candidate) int { return CompareHits(a.Hit, b.Hit) })
		t.c = t.c[:min(len(t.c), t.keep)]
		t.cut = true
	}
	return t.c
}

func (t *topHits) full() bool { return len(t.sorted()) == t.keep }

func (t *topHits) last() Candidate { return t.c[len(t.c)-1] }
