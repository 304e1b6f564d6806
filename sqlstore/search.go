package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
)

var _ recall.Searcher = (*Store)(nil)

// searchWindow is how many of the newest search rows a query first looks
// through (see Search).
const searchWindow = 4096

// Search implements recall.Searcher over the search table (searchindex.go)
// and the sessions' normalized titles, in one read transaction.
//
// A hit is a row whose body holds every term (instr on SQLite, strpos or
// LIKE on PostgreSQL: exact substrings, as recall.Query.Match), so the
// hits are recall.ScanSearch's. The indexes only choose the rows looked
// at. A query first reads the newest searchWindow rows, by time through
// search_time: a common term fills a page there. When it does not, the
// rows holding the trigrams of the terms of three characters or more are
// the candidates (FTS5's trigram index on SQLite, pg_trgm's on
// PostgreSQL), sorted by time; a query whose terms are all shorter (a
// two-character CJK name, say) reads every row in time order.
//
// Rank is the number of times the terms occur on SQLite (the trigram
// index keeps no positions, so FTS5's bm25 would count trigrams, not
// terms), and ts_rank with the 'simple' configuration on PostgreSQL. The
// snippet is cut from the item's text as the log holds it (read for the
// hits of the page only).
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := s.checkOpen(ctx); err != nil {
		return recall.SearchPage{}, err
	}
	if err := recall.CheckSearchOptions(opts); err != nil {
		return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", err)
	}
	q, _ := recall.ParseQuery(opts.Query)
	var cursor *recall.SearchCursor
	if opts.Cursor != "" {
		c, err := recall.ParseSearchCursor(opts.Cursor)
		if err != nil {
			return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", err)
		}
		cursor = &c
	}
	sq := searchQuery{s: s, pg: s.db.name() == "postgres", q: q, opts: opts, cursor: cursor, keep: opts.PageSize() + 1}
	var page recall.SearchPage
	err := s.db.view(ctx, func(ctx context.Context, tx querier) error {
		var err error
		page, err = sq.run(ctx, tx)
		return err
	})
	if err != nil {
		return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", ctxError(ctx, err))
	}
	return page, nil
}

// searchQuery is one call of Search.
type searchQuery struct {
	s      *Store
	pg     bool
	q      recall.Query
	opts   recall.SearchOptions
	cursor *recall.SearchCursor
	keep   int // the page size and one more, which tells a next page exists
}

// hitRow is a hit as read from the database.
type hitRow struct {
	recall.Hit
	sid  int64
	body string // the normalized text
}

func (sq searchQuery) run(ctx context.Context, tx querier) (recall.SearchPage, error) {
	var hits []hitRow
	if sq.opts.Role == "" || sq.opts.Role == recall.RoleTitle {
		h, err := sq.titles(ctx, tx)
		if err != nil {
			return recall.SearchPage{}, err
		}
		hits = append(hits, h...)
	}
	if sq.opts.Role != recall.RoleTitle {
		h, err := sq.items(ctx, tx)
		if err != nil {
			return recall.SearchPage{}, err
		}
		hits = append(hits, h...)
	}
	slices.SortFunc(hits, func(a, b hitRow) int { return recall.CompareHits(a.Hit, b.Hit) })
	var page recall.SearchPage
	if len(hits) >= sq.keep {
		hits = hits[:sq.keep-1]
		page.Next = recall.HitCursor(hits[len(hits)-1].Hit).String()
	}
	page.Hits = make([]recall.Hit, len(hits))
	for i, h := range hits {
		text := h.Title
		if h.Role != recall.RoleTitle {
			var err error
			if text, err = itemText(ctx, tx, h.sid, h.Ref); err != nil {
				return recall.SearchPage{}, err
			}
			if text == "" {
				text = h.body
			}
		}
		h.Snippet, h.Matches = recall.MakeSnippet(text, sq.q)
		if !sq.pg {
			h.Rank = float64(occurrences(h.body, sq.q))
		}
		page.Hits[i] = h.Hit
	}
	return page, nil
}

// contains returns the condition that column holds term as a substring.
func (sq searchQuery) contains(a *args, column, term string) string {
	if sq.pg {
		return "strpos(" + column + ", " + a.add(term) + ") > 0"
	}
	return "instr(" + column + ", " + a.add(term) + ") > 0"
}

// sessionFilters returns the conditions on the sessions row e.
func (sq searchQuery) sessionFilters(a *args) []string {
	where := []string{"e.subpath = ''"}
	if sq.opts.Project != "" {
		where = append(where, "e.project = "+a.add(sq.opts.Project))
	}
	if !sq.opts.IncludeArchived {
		where = append(where, "NOT e.archived")
	}
	return where
}

// timeFilters returns the conditions of the time range and the cursor on
// a hit whose time is column and whose Ref is (seq, idx).
func (sq searchQuery) timeFilters(a *args, column, seq, idx string) []string {
	var where []string
	if !sq.opts.Since.IsZero() {
		where = append(where, column+" >= "+a.add(sq.s.db.timeArg(sq.opts.Since)))
	}
	if !sq.opts.Until.IsZero() {
		where = append(where, column+" < "+a.add(sq.s.db.timeArg(sq.opts.Until)))
	}
	if c := sq.cursor; c != nil {
		t := a.add(sq.s.db.timeArg(c.Time))
		// The first condition bounds the index range; the second is the
		// order of recall.CompareHits.
		where = append(where, column+" <= "+t, fmt.Sprintf("(%s, e.project, e.id, e.subpath, %s, %s) < (%s, %s, %s, %s, %s, %s)",
			column, seq, idx, t, a.add(c.Key.Project), a.add(c.Key.Session), a.add(c.Key.Subpath),
			a.add(c.Ref.Seq), a.add(c.Ref.Index)))
	}
	return where
}

// titles returns the first keep title hits.
func (sq searchQuery) titles(ctx context.Context, tx querier) ([]hitRow, error) {
	var a args
	where := sq.sessionFilters(&a)
	for _, t := range sq.q.Terms {
		where = append(where, sq.contains(&a, "e.search_title", t))
	}
	where = append(where, sq.timeFilters(&a, "e.updated_at", "0", "0")...)
	rank := "0"
	if sq.pg {
		rank = sq.pgRank(&a, "e.search_title")
	}
	stmt := `SELECT e.sid, e.project, e.id, e.subpath, e.title, e.updated_at, e.search_title, ` + rank + `
		FROM sessions e WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY e.updated_at DESC, e.project DESC, e.id DESC, e.subpath DESC LIMIT ` + a.add(sq.keep)
	rs, err := tx.query(ctx, stmt, a...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []hitRow
	for rs.Next() {
		h := hitRow{Hit: recall.Hit{Role: recall.RoleTitle}}
		if err := rs.Scan(&h.sid, &h.Key.Project, &h.Key.Session, &h.Key.Subpath, &h.Title, dbTime{&h.Time}, &h.body, &h.Rank); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rs.Err()
}

// pgRank returns ts_rank of column against the terms (PostgreSQL).
func (sq searchQuery) pgRank(a *args, column string) string {
	return "ts_rank(to_tsvector('simple', " + column + "), plainto_tsquery('simple', " + a.add(strings.Join(sq.q.Terms, " ")) + "))"
}

// items returns the first keep item hits: from the newest searchWindow
// rows when they hold that many, and otherwise from the rows the trigram
// index names (or from every row).
func (sq searchQuery) items(ctx context.Context, tx querier) ([]hitRow, error) {
	// The time of the searchWindow-th newest row in range: every row
	// newer than it is among the searchWindow newest.
	var a args
	var bounds []string
	if !sq.opts.Since.IsZero() {
		bounds = append(bounds, "time >= "+a.add(sq.s.db.timeArg(sq.opts.Since)))
	}
	if !sq.opts.Until.IsZero() {
		bounds = append(bounds, "time < "+a.add(sq.s.db.timeArg(sq.opts.Until)))
	}
	if sq.cursor != nil {
		bounds = append(bounds, "time <= "+a.add(sq.s.db.timeArg(sq.cursor.Time)))
	}
	stmt := `SELECT time FROM search`
	if len(bounds) > 0 {
		stmt += ` WHERE ` + strings.Join(bounds, " AND ")
	}
	window := searchWindow
	if sq.s.window > 0 {
		window = sq.s.window
	}
	stmt += ` ORDER BY time DESC LIMIT 1 OFFSET ` + a.add(window-1)
	var floor time.Time
	err := tx.queryRow(ctx, stmt, a...).Scan(dbTime{&floor})
	windowed := err == nil
	if err != nil && !isNoRows(err) {
		return nil, err
	}
	hits, err := sq.itemQuery(ctx, tx, windowed, floor, false)
	if err != nil || !windowed || len(hits) >= sq.keep {
		return hits, err
	}
	return sq.itemQuery(ctx, tx, false, time.Time{}, true)
}

// itemQuery reads the first keep item hits: of rows newer than floor when
// windowed, through the trigram index when indexed (and some term is
// long enough for it).
func (sq searchQuery) itemQuery(ctx context.Context, tx querier, windowed bool, floor time.Time, indexed bool) ([]hitRow, error) {
	var a args
	where := []string{"e.sid = s.sid"}
	where = append(where, sq.sessionFilters(&a)...)
	if !sq.opts.WholeLog {
		where = append(where, "s.live")
	}
	if sq.opts.Role != "" {
		where = append(where, "s.role = "+a.add(sq.opts.Role))
	}
	where = append(where, sq.timeFilters(&a, "s.time", "s.seq", "s.idx")...)
	if windowed {
		where = append(where, "s.time > "+a.add(sq.s.db.timeArg(floor)))
	}
	from := "search s, sessions e"
	var long []string
	for _, t := range sq.q.Terms {
		if indexed && utf8.RuneCountInString(t) >= 3 {
			long = append(long, t)
		}
	}
	for _, t := range sq.q.Terms {
		if sq.pg && slices.Contains(long, t) {
			// LIKE, which pg_trgm's index serves, is the check itself.
			where = append(where, "s.body LIKE "+a.add(likePattern(t)))
			continue
		}
		where = append(where, sq.contains(&a, "s.body", t))
	}
	if len(long) > 0 && !sq.pg {
		// The FTS5 table first (CROSS JOIN keeps the order): its rows
		// hold every trigram of the long terms; instr checks them.
		from = "search_fts f CROSS JOIN search s CROSS JOIN sessions e"
		where = append(where, "f.rowid = s.id", "search_fts MATCH "+a.add(ftsQuery(long)))
	}
	rank := "0"
	if sq.pg {
		rank = sq.pgRank(&a, "s.body")
	}
	cols := `s.sid, e.project, e.id, e.subpath, e.title, s.seq, s.idx, s.role, s.time, s.body`
	order := ` ORDER BY s.time DESC, e.project DESC, e.id DESC, e.subpath DESC, s.seq DESC, s.idx DESC LIMIT `
	var stmt string
	if sq.pg && len(long) > 0 {
		// The rows the trigram index finds, materialized: otherwise the
		// planner may walk search_time instead, row by row.
		stmt = `WITH c AS MATERIALIZED (SELECT s.* FROM search s, sessions e WHERE ` + strings.Join(where, " AND ") + `)
			SELECT ` + strings.ReplaceAll(cols, "s.", "c.") + `, ` + strings.ReplaceAll(rank, "s.", "c.") + `
			FROM c, sessions e WHERE e.sid = c.sid` + strings.ReplaceAll(order, "s.", "c.") + a.add(sq.keep)
	} else {
		stmt = `SELECT ` + cols + `, ` + rank + ` FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") + order + a.add(sq.keep)
	}
	rs, err := tx.query(ctx, stmt, a...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []hitRow
	for rs.Next() {
		var h hitRow
		if err := rs.Scan(&h.sid, &h.Key.Project, &h.Key.Session, &h.Key.Subpath, &h.Title, &h.Ref.Seq, &h.Ref.Index,
			&h.Role, dbTime{&h.Time}, &h.body, &h.Rank); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rs.Err()
}

// itemTextSQL reads the entry of session $1 at seq $2.
const itemTextSQL = `SELECT kind, payload FROM entries WHERE session = $1 AND seq = $2`

// itemText returns the text (recall.SearchText) of the item at ref in
// session sid's log, or "" when the log no longer holds it.
func itemText(ctx context.Context, tx querier, sid int64, ref recall.ItemRef) (string, error) {
	var (
		kind    string
		payload []byte
	)
	err := tx.queryRow(ctx, itemTextSQL, sid, ref.Seq).Scan(&kind, &payload)
	if isNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	it := recall.Item(payload)
	if recall.Kind(kind) == recall.KindCompaction {
		var c recall.Compaction
		if json.Unmarshal(payload, &c) != nil || ref.Index >= len(c.Items) {
			return "", nil
		}
		it = c.Items[ref.Index]
	}
	_, text := recall.SearchText(it)
	return text, nil
}

// isNoRows reports a query that found no row (pgx's error is
// sql.ErrNoRows too).
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// likePattern returns the LIKE pattern of the rows holding term.
func likePattern(term string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(term) + "%"
}

// ftsMaxTrigrams bounds the trigrams of one term an FTS5 query asks for:
// a few, spread over the term, select as well as all of them, and cost
// less to intersect.
const ftsMaxTrigrams = 12

// ftsQuery returns the FTS5 query of the rows holding every trigram of
// the terms (each of three characters or more).
func ftsQuery(terms []string) string {
	var grams []string
	for _, t := range terms {
		r := []rune(t)
		n := len(r) - 2
		step := 1
		if n > ftsMaxTrigrams {
			step = (n + ftsMaxTrigrams - 1) / ftsMaxTrigrams
		}
		for i := 0; i < n; i += step {
			grams = append(grams, `"`+strings.ReplaceAll(string(r[i:i+3]), `"`, `""`)+`"`)
		}
		if (n-1)%step != 0 {
			grams = append(grams, `"`+strings.ReplaceAll(string(r[n-1:n+2]), `"`, `""`)+`"`)
		}
	}
	slices.Sort(grams)
	return strings.Join(slices.Compact(grams), " AND ")
}

// occurrences counts the places the terms occur in body.
func occurrences(body string, q recall.Query) int {
	n := 0
	for _, t := range q.Terms {
		n += strings.Count(body, t)
	}
	return n
}
