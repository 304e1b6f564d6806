package filestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// Finding a search's item hits in the index: windows of the newest items,
// or the trigram index's candidates sorted, whichever reads less.

// findItems returns the first keep item hits after cur, in search order,
// among the sessions of byID (archived ones when opts include them).
//
// When the trigram index selects at most search.Window items for the
// terms of two characters or more (see trigramQuery), it sorts those,
// checking each term's exact match with instr. Otherwise it matches the
// newest search.Window items the filters on items allow (after the cursor)
// directly: when keep hits among them are newer than the oldest of the
// window, no item outside it can come before them, and a common word is
// answered at once. When they are not, it sorts the trigram index's
// candidates after all, or, when every term is a single character,
// matches ever larger windows.
func (x *searchIndex) findItems(ctx context.Context, opts recall.SearchOptions, q search.Query, cur *search.Cursor, keep int, byID map[int64]*indexedLog) ([]*itemHit, error) {
	iq := newItemQuery(opts, q, cur, keep, byID)
	// When the trigrams select few items, sorting those is the fastest
	// way to the first page. Otherwise (a common word, or terms of one
	// character only) windows of the newest items are matched directly,
	// ever larger, until one holds keep hits or every item.
	m, some, err := x.trigramQuery(ctx, q)
	if err != nil || !some {
		return nil, err
	}
	window, candidates := search.Window, search.Window
	if x.testWindow > 0 { // a test's
		window, candidates = x.testWindow, x.testWindow
	}
	// At most limit candidates (counted up to limit+1)?
	atMost := func(limit int) (bool, error) {
		var n int
		if err := x.conn.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM items_fts WHERE items_fts MATCH ? LIMIT ?)", m, limit+1).Scan(&n); err != nil {
			return false, ixErr(err)
		}
		return n <= limit, nil
	}
	// A rare word has few candidates, which cost little to count; a word
	// with more than a small window's worth is looked for in that window
	// before its candidates are counted further.
	first := firstWindow * keep
	few := false
	if m != "" && first < candidates {
		if few, err = atMost(first); err != nil {
			return nil, err
		}
	}
	if !few && first < window {
		found, done, err := x.window(ctx, first, iq)
		if err != nil || done {
			return found, err
		}
	}
	if m != "" && !few {
		if few, err = atMost(candidates); err != nil {
			return nil, err
		}
	}
	for n := window; !few; n *= 8 {
		found, done, err := x.window(ctx, n, iq)
		if err != nil || done {
			return found, err
		}
		if m != "" {
			break
		}
	}
	return x.sortedItems(ctx, iq, m)
}

// itemQuery is what a search asks of items, as SQL: conditions on an
// item's columns (conds, with args) and on its text (textConds, with
// textArgs); and, in Go, what a row must be to be a hit after the
// cursor (accept), and how many hits the page needs (keep).
type itemQuery struct {
	opts      recall.SearchOptions
	cur       *search.Cursor
	keep      int
	conds     []string
	args      []any
	textConds []string
	textArgs  []any
	accept    func(*itemHit) bool
}

// newItemQuery returns the item query of a search.
func newItemQuery(opts recall.SearchOptions, q search.Query, cur *search.Cursor, keep int, byID map[int64]*indexedLog) *itemQuery {
	iq := &itemQuery{opts: opts, cur: cur, keep: keep}
	if !opts.WholeLog {
		iq.conds = append(iq.conds, "i.live = 1")
	}
	if opts.Role != "" {
		iq.conds, iq.args = append(iq.conds, "i.role = ?"), append(iq.args, roleNumber(opts.Role))
	}
	if !opts.Since.IsZero() {
		iq.conds, iq.args = append(iq.conds, "(i.ts, i.tn) >= (?, ?)"), append(iq.args, opts.Since.Unix(), opts.Since.Nanosecond())
	}
	if !opts.Until.IsZero() {
		iq.conds, iq.args = append(iq.conds, "(i.ts, i.tn) < (?, ?)"), append(iq.args, opts.Until.Unix(), opts.Until.Nanosecond())
	}
	if cur != nil {
		iq.conds, iq.args = append(iq.conds, "(i.ts, i.tn) <= (?, ?)"), append(iq.args, cur.Time.Unix(), cur.Time.Nanosecond())
	}
	for _, t := range q.Terms {
		iq.textConds, iq.textArgs = append(iq.textConds, "instr(i.text, ?) > 0"), append(iq.textArgs, t)
	}
	iq.accept = func(h *itemHit) bool {
		l := byID[h.log]
		if l == nil || l.hidden(opts) || !q.Match(h.text) {
			return false
		}
		h.hit = recall.Hit{Key: l.key, Title: l.title, Ref: recall.ItemRef{Seq: h.seq, Index: h.idx},
			Role: searchRoles[h.role], Time: time.Unix(h.ts, int64(h.tn)).UTC(), Rank: float64(search.Occurrences(h.text, q))}
		return cur == nil || cur.After(h.hit)
	}
	return iq
}

// where is a WHERE clause of the conditions cs, "" for none.
func where(cs []string) string {
	if len(cs) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(cs, " AND ")
}

// sortedItems runs the exact query, in search order: over the trigram
// index's candidates for the match m, or over every item when m is "".
func (x *searchIndex) sortedItems(ctx context.Context, iq *itemQuery, m string) ([]*itemHit, error) {
	opts, cur := iq.opts, iq.cur
	from := "items i"
	var ftsArgs []any
	if m != "" {
		// CROSS JOIN keeps the trigram index's few candidates the outer loop.
		from = "(SELECT rowid AS id FROM items_fts WHERE items_fts MATCH ?) f CROSS JOIN items i ON i.id = f.id"
		ftsArgs = []any{m}
	}
	all := append(slices.Clone(iq.conds), iq.textConds...)
	eargs := append(append(ftsArgs, iq.args...), iq.textArgs...)
	if opts.Project != "" {
		all, eargs = append(all, "l.project = ?"), append(eargs, opts.Project)
	}
	if !opts.IncludeArchived {
		all = append(all, "l.archived = 0")
	} else {
		all = append(all, "l.archived < 2")
	}
	if cur != nil {
		if cur.Key.Subpath == "" {
			all = append(all, "(i.ts, i.tn, l.project, l.session, i.seq, i.idx) < (?, ?, ?, ?, ?, ?)")
			eargs = append(eargs, cur.Time.Unix(), cur.Time.Nanosecond(), cur.Key.Project, cur.Key.Session, cur.Ref.Seq, cur.Ref.Index)
		} else { // a main session's item sorts after a subpath's of the same time and session
			all = append(all, "(i.ts, i.tn, l.project, l.session) <= (?, ?, ?, ?)")
			eargs = append(eargs, cur.Time.Unix(), cur.Time.Nanosecond(), cur.Key.Project, cur.Key.Session)
		}
	}
	query := "SELECT i.id, i.log, i.seq, i.idx, i.pos, i.len, i.ts, i.tn, i.role, i.text FROM " + from +
		" JOIN logs l ON l.id = i.log" + where(all) +
		" ORDER BY i.ts DESC, i.tn DESC, l.project DESC, l.session DESC, i.seq DESC, i.idx DESC LIMIT ?"
	// Rows of a session indexed by another process but not found by this
	// search's listing are left out in Go; ask for more when they were.
	for limit := iq.keep; ; limit *= 4 {
		var rows int
		found, err := x.queryItems(ctx, query, append(slices.Clone(eargs), limit), func(h *itemHit) bool {
			rows++
			return iq.accept(h)
		})
		if err != nil {
			return nil, err
		}
		if len(found) >= iq.keep || rows < limit {
			slices.SortFunc(found, func(a, b *itemHit) int { return search.Compare(a.hit, b.hit) })
			return found[:min(len(found), iq.keep)], nil
		}
	}
}

// window matches the newest n items that the conditions on items allow
// and returns the first keep hits in search order, with done set, when
// they are sure to be the first of all: keep of them are newer than the
// oldest item of the window, or the window holds every item.
func (x *searchIndex) window(ctx context.Context, n int, iq *itemQuery) ([]*itemHit, bool, error) {
	itemWhere, args, keep := where(iq.conds), iq.args, iq.keep
	var boundary struct{ ts, tn int64 }
	err := x.conn.QueryRowContext(ctx, "SELECT i.ts, i.tn FROM items i"+itemWhere+" ORDER BY i.ts DESC, i.tn DESC LIMIT 1 OFFSET ?",
		append(slices.Clone(args), n-1)...).Scan(&boundary.ts, &boundary.tn)
	exhaustive := errors.Is(err, sql.ErrNoRows)
	if err != nil && !exhaustive {
		return nil, false, ixErr(err)
	}
	wargs := append(append(slices.Clone(args), n), iq.textArgs...)
	found, err := x.queryItems(ctx, "SELECT i.id, i.log, i.seq, i.idx, i.pos, i.len, i.ts, i.tn, i.role, i.text FROM (SELECT i.id FROM items i"+itemWhere+
		" ORDER BY i.ts DESC, i.tn DESC LIMIT ?) w JOIN items i ON i.id = w.id"+where(iq.textConds), wargs, iq.accept)
	if err != nil {
		return nil, false, err
	}
	newer := 0
	for _, h := range found {
		if h.ts > boundary.ts || h.ts == boundary.ts && int64(h.tn) > boundary.tn {
			newer++
		}
	}
	if !exhaustive && newer < keep {
		return nil, false, nil
	}
	slices.SortFunc(found, func(a, b *itemHit) int { return search.Compare(a.hit, b.hit) })
	if !exhaustive {
		found = found[:newer] // the rest may be preceded by items outside the window
	}
	return found[:min(len(found), keep)], true, nil
}

// queryItems runs a query of item rows and keeps those accept accepts.
func (x *searchIndex) queryItems(ctx context.Context, query string, args []any, accept func(*itemHit) bool) ([]*itemHit, error) {
	rows, err := x.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, ixErr(err)
	}
	defer rows.Close()
	var out []*itemHit
	for rows.Next() {
		var id int64
		h := &itemHit{}
		if err := rows.Scan(&id, &h.log, &h.seq, &h.idx, &h.pos, &h.n, &h.ts, &h.tn, &h.role, &h.text); err != nil {
			return nil, ixErr(err)
		}
		if h.role < 0 || h.role >= len(searchRoles) {
			return nil, ixErr(fmt.Errorf("%w: role %d", errIndexDamaged, h.role))
		}
		if accept(h) {
			out = append(out, h)
		}
	}
	return out, ixErr(rows.Err())
}

// trigramQuery returns the FTS5 query of the items that may hold every
// term (search.TrigramMatch over this index's vocabulary).
func (x *searchIndex) trigramQuery(ctx context.Context, q search.Query) (match string, some bool, err error) {
	return search.TrigramMatch(q, func(term string) ([]string, error) { return x.prefixGrams(ctx, term) })
}

// prefixGrams returns the trigrams of the index that begin with term, up
// to one more than search.MaxPrefixGrams.
func (x *searchIndex) prefixGrams(ctx context.Context, term string) ([]string, error) {
	// "\xff" sorts after every UTF-8 text that begins with term.
	rows, err := x.conn.QueryContext(ctx, "SELECT term FROM items_vocab WHERE term >= ? AND term < ? LIMIT ?", term, term+"\xff", search.MaxPrefixGrams+1)
	if err != nil {
		return nil, ixErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, ixErr(err)
		}
		out = append(out, g)
	}
	return out, ixErr(rows.Err())
}
