package filestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

var (
	_ recall.Searcher      = (*Store)(nil)
	_ recall.SearchIndexer = (*Store)(nil)
)

// searchWindow is how many of the newest items (after the cursor, within
// the filters on items) Search first matches directly: a common word fills
// its page there at once. A rarer one is found through the trigram index,
// which then yields few candidates to sort.
const searchWindow = 4096

// searchCandidates is how many items the trigram index may select for
// Search to sort them all rather than look at the newest items first. It
// is the window's size: sorting that many candidates reads as many items
// as one window does, and a window that falls short of a page is read in
// vain. (At 2,000, a term in 2,013 items of 1,000,000 first read a window
// that held 8 of its hits, then sorted its candidates anyway: 32 ms
// rather than 16.)
const searchCandidates = searchWindow

// firstWindow is how many of the newest items, per hit a page asks for,
// Search matches before it asks the trigram index how many candidates it
// has: a word in every few items fills its page there, for a few hundred
// items rather than the thousands that counting its candidates reads.
const firstWindow = 16

// errIndexDisagrees reports a hit whose entry the log does not hold where
// the index says it does (the log was rewritten under the search, or the
// index is damaged in a way the database did not see).
var errIndexDisagrees = errors.New("search index disagrees with the log")

// Search implements recall.Searcher with the index kept beside the logs
// (see searchIndexName): it brings the index up to date with the logs of
// the sessions searched, then answers from it, reading each hit's entry
// back from its log for the snippet. It returns exactly the hits
// recall.ScanSearch returns, in the same order. An index that is missing
// or damaged is built again from the logs; one that cannot be written (a
// read-only home) is not used, and the logs are scanned instead.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := s.checkOpen(); err != nil {
		return recall.SearchPage{}, err
	}
	if err := recall.CheckSearchOptions(opts); err != nil {
		return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
		}
		page, err := s.searchIndexed(ctx, opts)
		var ie *indexErr
		switch {
		case err == nil:
			return page, nil
		case ctx.Err() != nil:
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", ctx.Err())
		case attempt < 2 && (errors.Is(err, errIndexDamaged) || errors.Is(err, errIndexDisagrees)):
			// A damaged index is built afresh. A hit the log does not
			// hold where the index says is a log rewritten under the
			// search (a purge): the next catch-up reads it again; if the
			// log still disagrees, the index is built afresh.
			s.search.mu.Lock()
			if errors.Is(err, errIndexDamaged) || attempt == 1 {
				s.search.reset()
			}
			s.search.mu.Unlock()
		case attempt == 0 && errors.As(err, &ie):
			// Once more on a fresh connection: this one may have outlived
			// a change to the file (truncated under it, say).
			s.search.mu.Lock()
			s.search.closeLocked()
			s.search.mu.Unlock()
		case errors.As(err, &ie) || errors.Is(err, errIndexDisagrees):
			// The index cannot be used here (a read-only home, a full
			// disk): the logs are the truth, so scan them.
			return recall.ScanSearch(ctx, s, opts)
		default:
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
		}
	}
}

// IndexSearch implements recall.SearchIndexer: it brings the search index
// up to date with the logs of every session, the work the next Search
// would otherwise do before it answers. A damaged index is built afresh;
// an index that cannot be written (a read-only home) is an error here,
// though Search then scans the logs.
func (s *Store) IndexSearch(ctx context.Context, progress func(done, total int)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	x.path = s.searchIndexPath()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = x.open(ctx); err == nil {
			_, err = x.catchUp(ctx, s, "", progress)
		}
		if !errors.Is(err, errIndexDamaged) {
			break
		}
		x.reset()
	}
	if err != nil {
		return fmt.Errorf("filestore: index search: %w", err)
	}
	return nil
}

// itemHit is an item the index found, before its entry is read back.
type itemHit struct {
	log    int64
	seq    int64
	idx    int
	pos, n int64
	ts     int64
	tn     int
	role   int
	text   string // normalized
	hit    recall.Hit
}

// searchIndexed answers opts from the index. Errors of the index are
// indexErrs.
func (s *Store) searchIndexed(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	x.path = s.searchIndexPath()
	if err := x.open(ctx); err != nil {
		return recall.SearchPage{}, err
	}
	byID, err := x.catchUp(ctx, s, opts.Project, nil)
	if err != nil {
		return recall.SearchPage{}, err
	}
	q, _ := recall.ParseQuery(opts.Query)
	var cur *recall.SearchCursor
	if opts.Cursor != "" {
		c, _ := recall.ParseSearchCursor(opts.Cursor)
		cur = &c
	}
	keep := opts.PageSize() + 1

	var hits []*itemHit
	if opts.Role != recall.RoleTitle {
		if hits, err = x.findItems(ctx, opts, q, cur, keep, byID); err != nil {
			return recall.SearchPage{}, err
		}
	}
	if opts.Role == "" || opts.Role == recall.RoleTitle {
		// A title hit older than keep item hits comes after them all.
		var bound time.Time
		if len(hits) >= keep {
			slices.SortFunc(hits, func(a, b *itemHit) int { return recall.CompareHits(a.hit, b.hit) })
			bound = hits[keep-1].hit.Time
		}
		hits = append(hits, x.titleHits(s, opts, q, cur, keep, bound, byID)...)
	}
	slices.SortFunc(hits, func(a, b *itemHit) int { return recall.CompareHits(a.hit, b.hit) })
	more := len(hits) >= keep
	if more {
		hits = hits[:keep-1]
	}
	if err := s.readBack(ctx, hits, q); err != nil {
		return recall.SearchPage{}, err
	}
	var page recall.SearchPage
	page.Hits = make([]recall.Hit, len(hits))
	for i, h := range hits {
		page.Hits[i] = h.hit
	}
	if more {
		page.Next = recall.HitCursor(page.Hits[len(hits)-1]).String()
	}
	return page, nil
}

// titleHits returns the title hits after cur among the sessions of byID:
// in one project, the first keep of them (and those as new as the last)
// that are not older than bound (when set), found by walking its sessions
// newest first (projectIndex.order), so a common word, or a page of item
// hits, costs a page; across projects, every one.
func (x *searchIndex) titleHits(s *Store, opts recall.SearchOptions, q recall.Query, cur *recall.SearchCursor, keep int, bound time.Time, byID map[int64]*indexedLog) []*itemHit {
	var hits []*itemHit
	add := func(l *indexedLog) {
		if l.title == "" || l.archived && !opts.IncludeArchived || !q.Match(l.ntitle) {
			return
		}
		if !opts.Since.IsZero() && l.updated.Before(opts.Since) || !opts.Until.IsZero() && !l.updated.Before(opts.Until) {
			return
		}
		h := recall.Hit{Key: l.key, Title: l.title, Role: recall.RoleTitle, Time: l.updated, Rank: float64(countTerms(l.ntitle, q))}
		if cur == nil || cur.After(h) {
			hits = append(hits, &itemHit{hit: h})
		}
	}
	if opts.Project == "" {
		for _, l := range byID {
			add(l)
		}
		return hits
	}
	p := s.project(opts.Project)
	p.mu.Lock()
	defer p.mu.Unlock()
	// A log's row is as new as its record, or older (the log changed
	// since the catch-up). So once keep hits are found, a record older
	// than the oldest of their rows has an older row still, and neither
	// it nor any after it can come before them.
	var oldest time.Time
	visit := func(rec *record) bool {
		if len(hits) >= keep && rec.updated.Before(oldest) || rec.updated.Before(bound) ||
			!opts.Since.IsZero() && rec.updated.Before(opts.Since) {
			return false
		}
		if l := x.logs[rec.key]; l != nil && byID[l.id] == l {
			n := len(hits)
			if add(l); len(hits) > n && (n == 0 || l.updated.Before(oldest)) {
				oldest = l.updated
			}
		}
		return true
	}
	if cur == nil {
		p.ordered().Ascend(visit)
	} else {
		p.ordered().AscendGreaterOrEqual(&record{updated: cur.Time}, visit)
	}
	return hits
}

// countTerms is the Rank of a hit: how many times the terms occur in its
// normalized text, as the scan counts them.
func countTerms(normalized string, q recall.Query) int {
	n := 0
	for _, t := range q.Terms {
		n += strings.Count(normalized, t)
	}
	return n
}

// findItems returns the first keep item hits after cur, in search order,
// among the sessions of byID (archived ones when opts include them).
//
// When the trigram index selects at most searchCandidates items for the
// terms of two characters or more (see trigramQuery), it sorts those,
// checking each term's exact match with instr. Otherwise it matches the
// newest searchWindow items the filters on items allow (after the cursor)
// directly: when keep hits among them are newer than the oldest of the
// window, no item outside it can come before them, and a common word is
// answered at once. When they are not, it sorts the trigram index's
// candidates after all, or, when every term is a single character,
// matches ever larger windows.
func (x *searchIndex) findItems(ctx context.Context, opts recall.SearchOptions, q recall.Query, cur *recall.SearchCursor, keep int, byID map[int64]*indexedLog) ([]*itemHit, error) {
	var conds []string
	var args []any
	if !opts.WholeLog {
		conds = append(conds, "i.live = 1")
	}
	if opts.Role != "" {
		conds, args = append(conds, "i.role = ?"), append(args, roleNumber(opts.Role))
	}
	if !opts.Since.IsZero() {
		conds, args = append(conds, "(i.ts, i.tn) >= (?, ?)"), append(args, opts.Since.Unix(), opts.Since.Nanosecond())
	}
	if !opts.Until.IsZero() {
		conds, args = append(conds, "(i.ts, i.tn) < (?, ?)"), append(args, opts.Until.Unix(), opts.Until.Nanosecond())
	}
	if cur != nil {
		conds, args = append(conds, "(i.ts, i.tn) <= (?, ?)"), append(args, cur.Time.Unix(), cur.Time.Nanosecond())
	}
	var textConds []string
	var textArgs []any
	for _, t := range q.Terms {
		textConds, textArgs = append(textConds, "instr(i.text, ?) > 0"), append(textArgs, t)
	}
	where := func(cs []string) string {
		if len(cs) == 0 {
			return ""
		}
		return " WHERE " + strings.Join(cs, " AND ")
	}
	accept := func(h *itemHit) bool {
		l := byID[h.log]
		if l == nil || l.archived && !opts.IncludeArchived || !q.Match(h.text) {
			return false
		}
		h.hit = recall.Hit{Key: l.key, Title: l.title, Ref: recall.ItemRef{Seq: h.seq, Index: h.idx},
			Role: searchRoles[h.role], Time: time.Unix(h.ts, int64(h.tn)).UTC(), Rank: float64(countTerms(h.text, q))}
		return cur == nil || cur.After(h.hit)
	}

	// When the trigrams select few items, sorting those is the fastest
	// way to the first page. Otherwise (a common word, or terms of one
	// character only) windows of the newest items are matched directly,
	// ever larger, until one holds keep hits or every item.
	m, some, err := x.trigramQuery(ctx, q)
	if err != nil || !some {
		return nil, err
	}
	window, candidates := searchWindow, searchCandidates
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
		found, done, err := x.window(ctx, first, where(conds), args, where(textConds), textArgs, keep, accept)
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
		found, done, err := x.window(ctx, n, where(conds), args, where(textConds), textArgs, keep, accept)
		if err != nil || done {
			return found, err
		}
		if m != "" {
			break
		}
	}

	// The exact query, in search order.
	from := "items i"
	var ftsArgs []any
	if m != "" {
		// CROSS JOIN keeps the trigram index's few candidates the outer loop.
		from = "(SELECT rowid AS id FROM items_fts WHERE items_fts MATCH ?) f CROSS JOIN items i ON i.id = f.id"
		ftsArgs = []any{m}
	}
	all := append(slices.Clone(conds), textConds...)
	eargs := append(append(ftsArgs, args...), textArgs...)
	if opts.Project != "" {
		all, eargs = append(all, "l.project = ?"), append(eargs, opts.Project)
	}
	if !opts.IncludeArchived {
		all = append(all, "l.archived = 0")
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
	for limit := keep; ; limit *= 4 {
		var rows int
		found, err := x.queryItems(ctx, query, append(slices.Clone(eargs), limit), func(h *itemHit) bool {
			rows++
			return accept(h)
		})
		if err != nil {
			return nil, err
		}
		if len(found) >= keep || rows < limit {
			slices.SortFunc(found, func(a, b *itemHit) int { return recall.CompareHits(a.hit, b.hit) })
			return found[:min(len(found), keep)], nil
		}
	}
}

// window matches the newest n items that the conditions on items allow
// and returns the first keep hits in search order, with done set, when
// they are sure to be the first of all: keep of them are newer than the
// oldest item of the window, or the window holds every item.
func (x *searchIndex) window(ctx context.Context, n int, itemWhere string, args []any, textWhere string, textArgs []any, keep int, accept func(*itemHit) bool) ([]*itemHit, bool, error) {
	var boundary struct{ ts, tn int64 }
	err := x.conn.QueryRowContext(ctx, "SELECT i.ts, i.tn FROM items i"+itemWhere+" ORDER BY i.ts DESC, i.tn DESC LIMIT 1 OFFSET ?",
		append(slices.Clone(args), n-1)...).Scan(&boundary.ts, &boundary.tn)
	exhaustive := errors.Is(err, sql.ErrNoRows)
	if err != nil && !exhaustive {
		return nil, false, ixErr(err)
	}
	wargs := append(append(slices.Clone(args), n), textArgs...)
	found, err := x.queryItems(ctx, "SELECT i.id, i.log, i.seq, i.idx, i.pos, i.len, i.ts, i.tn, i.role, i.text FROM (SELECT i.id FROM items i"+itemWhere+
		" ORDER BY i.ts DESC, i.tn DESC LIMIT ?) w JOIN items i ON i.id = w.id"+textWhere, wargs, accept)
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
	slices.SortFunc(found, func(a, b *itemHit) int { return recall.CompareHits(a.hit, b.hit) })
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

// maxPrefixGrams bounds the trigrams a two-character term is looked up
// by; a term that begins more is as well found by reading the items.
const maxPrefixGrams = 256

// maxTermGrams bounds the trigrams of one term the FTS5 query asks for: a
// few, spread over the term, select as well as all of them, and cost less
// to intersect.
const maxTermGrams = 12

// trigramQuery returns the FTS5 query of the items that may hold every
// term: the AND of the trigrams of each term of three characters or more
// (maxTermGrams of them, spread over a long term), and for a term of two,
// the OR of the trigrams of the index that begin with it (every place it
// occurs begins one, see searchSchema). It returns "" when no term has
// trigrams to ask for, and none false when some term begins no trigram of
// the index, so no item holds it.
func (x *searchIndex) trigramQuery(ctx context.Context, q recall.Query) (match string, some bool, err error) {
	var groups []string
	for _, t := range q.Terms {
		if strings.IndexByte(t, 0) >= 0 {
			continue // FTS5 reads its query up to a NUL; instr checks the term whole
		}
		r := []rune(t)
		switch n := len(r); {
		case n >= 3:
			step := max(1, (n-2+maxTermGrams-1)/maxTermGrams)
			for i := 0; i < n-2; i += step {
				groups = append(groups, ftsString(string(r[i:i+3])))
			}
			groups = append(groups, ftsString(string(r[n-3:])))
		case n == 2:
			grams, err := x.prefixGrams(ctx, t)
			if err != nil {
				return "", false, err
			}
			if len(grams) == 0 {
				return "", false, nil
			}
			if len(grams) <= maxPrefixGrams {
				for i, g := range grams {
					grams[i] = ftsString(g)
				}
				groups = append(groups, "("+strings.Join(grams, " OR ")+")")
			}
		}
	}
	slices.Sort(groups)
	return strings.Join(slices.Compact(groups), " AND "), true, nil
}

// prefixGrams returns the trigrams of the index that begin with term, up
// to one more than maxPrefixGrams.
func (x *searchIndex) prefixGrams(ctx context.Context, term string) ([]string, error) {
	// "\xff" sorts after every UTF-8 text that begins with term.
	rows, err := x.conn.QueryContext(ctx, "SELECT term FROM items_vocab WHERE term >= ? AND term < ? LIMIT ?", term, term+"\xff", maxPrefixGrams+1)
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

// ftsString quotes s as an FTS5 string.
func ftsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// readBack reads the entry of every item hit from its log, to cut the
// snippet from the text a person reads and to confirm the hit: an entry
// that is not where the index says, or does not match, is
// errIndexDisagrees. Title hits take their snippet from the title.
func (s *Store) readBack(ctx context.Context, hits []*itemHit, q recall.Query) error {
	for _, h := range hits {
		if h.hit.Role == recall.RoleTitle {
			h.hit.Snippet, h.hit.Matches = recall.MakeSnippet(h.hit.Title, q)
			continue
		}
		e, err := s.entryAt(ctx, h.hit.Key, h.pos, h.n)
		if err != nil {
			return err
		}
		var it recall.Item
		ok := e.Seq == h.seq
		switch {
		case !ok:
		case e.Kind == recall.KindItem && h.idx == 0:
			it, ok = recall.ItemOf(e)
		case e.Kind == recall.KindCompaction:
			var c recall.Compaction
			ok = json.Unmarshal(e.Data, &c) == nil && h.idx < len(c.Items)
			if ok {
				it = c.Items[h.idx]
			}
		default:
			ok = false
		}
		var text string
		if ok {
			_, text = recall.SearchText(it)
			ok = q.Match(recall.NormalizeText(text))
		}
		if !ok {
			return fmt.Errorf("%w: %s seq %d", errIndexDisagrees, h.hit.Key, h.seq)
		}
		h.hit.Time = e.Time
		h.hit.Snippet, h.hit.Matches = recall.MakeSnippet(text, q)
	}
	return nil
}

// entryAt reads the entry whose line lies at [pos, pos+n) of key's log.
func (s *Store) entryAt(ctx context.Context, key recall.Key, pos, n int64) (recall.Entry, error) {
	l, err := s.locate(key)
	if err != nil {
		return recall.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return recall.Entry{}, err
	}
	f, _, ok, err := openLog(l)
	if err != nil {
		return recall.Entry{}, fmt.Errorf("%s: %w", l.path, err)
	}
	if !ok {
		return recall.Entry{}, fmt.Errorf("%w: %s is gone", errIndexDisagrees, l.path)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, pos); err != nil {
		return recall.Entry{}, fmt.Errorf("%w: %s: %v", errIndexDisagrees, l.path, err)
	}
	e, _, err := decodeLine(buf)
	if err != nil {
		return recall.Entry{}, fmt.Errorf("%w: %s at %d: %v", errIndexDisagrees, l.path, pos, err)
	}
	return e, nil
}
