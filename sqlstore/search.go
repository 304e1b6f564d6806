package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// Search implements recall.Searcher over the search table (searchindex.go)
// and the sessions' normalized titles, in one read transaction. On
// SQLite it first writes the rows of the entries the table does not
// reflect yet (catchUpSearch), in write transactions of their own; on
// PostgreSQL it first indexes a long tail (indexTailPG).
//
// A hit is a row whose body holds every term (instr on SQLite, strpos or
// LIKE on PostgreSQL: exact substrings, as search.Query.Match), so the
// hits are search.Scan's; the indexes only choose the rows looked
// at. A query first reads the newest search.Window rows, by time through
// search_time: a common term fills a page there. When it does not, the
// candidates are the rows the trigram index names, sorted by time: on
// SQLite, FTS5's rows holding the trigrams of each term of three
// characters or more, and one of the trigrams that begin each term of two
// (search_vocab lists them); on PostgreSQL, pg_trgm's rows for LIKE on
// each term of three characters or more, and the bigram index's rows
// (grams, see cjkBigrams) for each term of two CJK characters, besides
// the rows not yet in those indexes (the tail, see ginCleaner). A query
// no index serves (every term shorter) looks through a window wideWindow
// times wider, then reads every row.
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
	if err := search.Check(opts); err != nil {
		return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", err)
	}
	q, _ := search.Parse(opts.Query)
	var cursor *search.Cursor
	if opts.Cursor != "" {
		c, err := search.ParseCursor(opts.Cursor)
		if err != nil {
			return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", err)
		}
		cursor = &c
	}
	sq := searchQuery{s: s, pg: s.db.name() == "postgres", q: q, opts: opts, cursor: cursor, keep: opts.PageSize() + 1}
	for _, t := range q.Terms {
		sq.terms = append(sq.terms, strings.ReplaceAll(t, "\x00", "\uFFFD")) // as searchText
	}
	switch b := s.db.(type) {
	case *liteBackend:
		if err := b.catchUpSearch(ctx); err != nil {
			return recall.SearchPage{}, fmt.Errorf("sqlstore: search: index: %w", opError(ctx, err))
		}
	case *pgBackend:
		if err := b.indexTailPG(ctx); err != nil {
			return recall.SearchPage{}, fmt.Errorf("sqlstore: search: index: %w", opError(ctx, err))
		}
	}
	var page recall.SearchPage
	err := s.db.view(ctx, func(ctx context.Context, tx querier) error {
		var err error
		page, err = sq.run(ctx, tx)
		return err
	})
	if err != nil {
		return recall.SearchPage{}, fmt.Errorf("sqlstore: search: %w", opError(ctx, err))
	}
	return page, nil
}

// searchQuery is one call of Search.
type searchQuery struct {
	s      *Store
	pg     bool
	q      search.Query
	terms  []string // q's terms as the search table stores text (see searchText)
	opts   recall.SearchOptions
	cursor *search.Cursor
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
	slices.SortFunc(hits, func(a, b hitRow) int { return search.Compare(a.Hit, b.Hit) })
	var page recall.SearchPage
	if len(hits) >= sq.keep {
		hits = hits[:sq.keep-1]
		page.Next = search.CursorAt(hits[len(hits)-1].Hit).String()
	}
	texts, err := sq.itemTexts(ctx, tx, hits)
	if err != nil {
		return recall.SearchPage{}, err
	}
	page.Hits = make([]recall.Hit, len(hits))
	for i, h := range hits {
		text := h.Title
		if h.Role != recall.RoleTitle {
			if text = texts[i]; text == "" {
				text = h.body // the log no longer holds it (a purge since)
			}
		}
		h.Snippet, h.Matches = search.Snippet(text, sq.q)
		if !sq.pg {
			h.Rank = float64(search.Occurrences(h.body, search.Query{Terms: sq.terms}))
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
	where = append(where, "e.trashed_at IS NULL")
	if !sq.opts.IncludeArchived {
		where = append(where, "NOT e.archived")
	}
	return where
}

// timeBounds returns the conditions of the time range on column, a hit's
// time, and the cursor's bound on it.
func (sq searchQuery) timeBounds(a *args, column string) []string {
	var where []string
	if !sq.opts.Since.IsZero() {
		where = append(where, column+" >= "+a.add(sq.s.db.timeArg(ceilMicro(sq.opts.Since))))
	}
	if !sq.opts.Until.IsZero() {
		where = append(where, column+" < "+a.add(sq.s.db.timeArg(ceilMicro(sq.opts.Until))))
	}
	if c := sq.cursor; c != nil {
		where = append(where, column+" <= "+a.add(sq.s.db.timeArg(c.Time)))
	}
	return where
}

// ceilMicro rounds t up to the microsecond the columns keep: a stored
// time u is at or after t (or before it) exactly when it is at or after
// ceilMicro(t).
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// afterCursor returns the condition that a hit of time column, session
// row e and Ref (seq, idx) sorts after the cursor (search.Compare),
// or nil without a cursor.
func (sq searchQuery) afterCursor(a *args, column, seq, idx string) []string {
	c := sq.cursor
	if c == nil {
		return nil
	}
	return []string{fmt.Sprintf("(%s, e.project, e.id, e.subpath, %s, %s) < (%s, %s, %s, %s, %s, %s)",
		column, seq, idx, a.add(sq.s.db.timeArg(c.Time)), a.add(c.Key.Project), a.add(c.Key.Session), a.add(c.Key.Subpath),
		a.add(c.Ref.Seq), a.add(c.Ref.Index))}
}

// titles returns the first keep title hits.
func (sq searchQuery) titles(ctx context.Context, tx querier) ([]hitRow, error) {
	var a args
	where := sq.sessionFilters(&a)
	for _, t := range sq.terms {
		if sq.pg {
			// LIKE rather than strpos (the same test): the planner
			// estimates LIKE from the titles' statistics, and strpos
			// as a third of the rows, which walks sessions_updated
			// through every session for a term no title holds.
			where = append(where, "e.search_title LIKE "+a.add(likePattern(t)))
			continue
		}
		where = append(where, sq.contains(&a, "e.search_title", t))
	}
	where = append(where, sq.timeBounds(&a, "e.updated_at")...)
	where = append(where, sq.afterCursor(&a, "e.updated_at", "0", "0")...)
	rank := "0"
	if sq.pg {
		rank = sq.pgRank(&a, "e.search_title")
	}
	stmt := `SELECT e.sid, e.project, e.id, e.subpath, e.title, e.updated_at, e.search_title, ` + rank + `
		FROM sessions e WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY e.updated_at DESC, e.project DESC, e.id DESC, e.subpath DESC LIMIT ` + a.add(sq.keep)
	return queryHits(ctx, tx, stmt, a, func(rs rows) (hitRow, error) {
		h := hitRow{Hit: recall.Hit{Role: recall.RoleTitle}}
		err := rs.Scan(&h.sid, &h.Key.Project, &h.Key.Session, &h.Key.Subpath, &h.Title, dbTime{&h.Time}, &h.body, &h.Rank)
		return h, err
	})
}

// queryHits runs stmt and reads each row of its result with scan.
func queryHits(ctx context.Context, tx querier, stmt string, a args, scan func(rows) (hitRow, error)) ([]hitRow, error) {
	rs, err := tx.query(ctx, stmt, a...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []hitRow
	for rs.Next() {
		h, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rs.Err()
}

// pgRank returns ts_rank of column against the terms (PostgreSQL).
func (sq searchQuery) pgRank(a *args, column string) string {
	return "ts_rank(to_tsvector('simple', " + column + "), plainto_tsquery('simple', " + a.add(strings.Join(sq.terms, " ")) + "))"
}

// items returns the first keep item hits: from the newest search.Window
// rows when they hold that many, and otherwise from the rows the trigram
// index names (or from every row).
func (sq searchQuery) items(ctx context.Context, tx querier) ([]hitRow, error) {
	window := search.Window
	if sq.s.window > 0 {
		window = sq.s.window
	}
	if sq.pg && sq.indexable() {
		return sq.pgItems(ctx, tx, window)
	}
	var plan indexPlan
	windows := []int{window}
	if sq.indexable() {
		// SQLite: when the trigram index names no more candidates than
		// a window holds, sorting them reads no more rows than the
		// window would, and a window short of a page is read in vain.
		var err error
		if plan, err = sq.plan(ctx, tx); err != nil {
			return nil, err
		}
		if plan.none {
			return nil, nil
		}
		few, err := fewCandidates(ctx, tx, plan, window)
		if err != nil {
			return nil, err
		}
		if few {
			return sq.itemQuery(ctx, tx, false, time.Time{}, plan)
		}
	} else {
		// No index can help: a wider window before every row.
		windows = append(windows, wideWindow*window)
	}
	for _, w := range windows {
		floor, windowed, err := sq.floor(ctx, tx, w)
		if err != nil {
			return nil, err
		}
		hits, err := sq.itemQuery(ctx, tx, windowed, floor, indexPlan{})
		if err != nil || !windowed || len(hits) >= sq.keep {
			return hits, err
		}
	}
	return sq.itemQuery(ctx, tx, false, time.Time{}, plan)
}

// fewCandidates reports whether plan (SQLite) names at most n rows.
func fewCandidates(ctx context.Context, tx querier, plan indexPlan, n int) (bool, error) {
	if plan.match == "" {
		return false, nil // every row is a candidate
	}
	var found int
	err := tx.queryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH $1 LIMIT $2)`, plan.match, n+1).Scan(&found)
	return found <= n, err
}

// pgItems returns the first keep item hits on PostgreSQL, for a query
// pg_trgm's index or the bigram index serves. Every query reads the
// candidates the index names (a bitmap), and the cost is in reading their
// rows from the table, to check them and sort them by time. So the newest
// window rows are looked through first (search_time); when they hold hits
// but not a page, a window as many times longer in time as their density
// says holds two pages, its rows chosen by both indexes (the planner
// intersects the index's bitmap with search_time's); then every candidate. A
// window whose rows hold a page holds the first page: every row newer
// than its floor is in it.
func (sq searchQuery) pgItems(ctx context.Context, tx querier, window int) ([]hitRow, error) {
	plan, err := sq.plan(ctx, tx)
	if err != nil {
		return nil, err
	}
	floor, windowed, err := sq.floor(ctx, tx, window)
	if err != nil || !windowed {
		if err != nil {
			return nil, err
		}
		return sq.itemQuery(ctx, tx, false, time.Time{}, plan)
	}
	// The first window checks its rows with strpos, not LIKE: a term
	// that fills a page there is common, and its bitmap of the trigram
	// index (a tenth of the rows, say) costs more than the window's rows.
	hits, err := sq.itemQuery(ctx, tx, true, floor, indexPlan{})
	if err != nil || len(hits) >= sq.keep {
		return hits, err
	}
	if len(hits) > 0 {
		newest, err := sq.newest(ctx, tx)
		if err != nil {
			return nil, err
		}
		if span := float64(newest.Sub(floor)) * float64((2*sq.keep+len(hits)-1)/len(hits)); span < 1e18 {
			hits, err := sq.itemQuery(ctx, tx, true, newest.Add(-time.Duration(span)), plan)
			if err != nil || len(hits) >= sq.keep {
				return hits, err
			}
		}
	}
	return sq.itemQuery(ctx, tx, false, time.Time{}, plan)
}

// newest returns the time of the newest row in the range the query looks
// at (there is one: floor found it).
func (sq searchQuery) newest(ctx context.Context, tx querier) (time.Time, error) {
	var a args
	bounds := sq.timeBounds(&a, "time")
	stmt := `SELECT time FROM search`
	if len(bounds) > 0 {
		stmt += ` WHERE ` + strings.Join(bounds, " AND ")
	}
	var t time.Time
	err := tx.queryRow(ctx, stmt+` ORDER BY time DESC LIMIT 1`, a...).Scan(dbTime{&t})
	return t, err
}

// wideWindow is how many times search.Window a query no index serves
// looks through before it reads every row.
const wideWindow = 8

// indexable reports whether the trigram index can choose the rows of the
// query: some term has three characters or more (two on SQLite, see
// plan), or, on PostgreSQL, is two CJK characters (the bigram index).
func (sq searchQuery) indexable() bool {
	least := 3
	if !sq.pg {
		least = 2
	}
	for _, t := range sq.terms {
		if utf8.RuneCountInString(t) >= least {
			return true
		}
		if _, ok := termBigram(t); ok && sq.pg {
			return true
		}
	}
	return false
}

// floor returns the time of the window-th newest row in the range the
// query looks at, and true; every row newer than it is among the window
// newest. Without so many rows it returns false.
func (sq searchQuery) floor(ctx context.Context, tx querier, window int) (time.Time, bool, error) {
	var a args
	bounds := sq.timeBounds(&a, "time")
	stmt := `SELECT time FROM search`
	if len(bounds) > 0 {
		stmt += ` WHERE ` + strings.Join(bounds, " AND ")
	}
	stmt += ` ORDER BY time DESC LIMIT 1 OFFSET ` + a.add(window-1)
	var floor time.Time
	err := tx.queryRow(ctx, stmt, a...).Scan(dbTime{&floor})
	if isNoRows(err) {
		return time.Time{}, false, nil
	}
	return floor, err == nil, err
}

// itemQuery reads the first keep item hits: of rows newer than floor when
// windowed, and through the trigram index as plan says.
func (sq searchQuery) itemQuery(ctx context.Context, tx querier, windowed bool, floor time.Time, plan indexPlan) ([]hitRow, error) {
	stmt, a := sq.itemSQL(windowed, floor, plan)
	return queryHits(ctx, tx, stmt, a, func(rs rows) (hitRow, error) {
		var h hitRow
		err := rs.Scan(&h.sid, &h.Key.Project, &h.Key.Session, &h.Key.Subpath, &h.Title, &h.Ref.Seq, &h.Ref.Index,
			&h.Role, dbTime{&h.Time}, &h.body, &h.Rank)
		return h, err
	})
}

// itemSQL returns itemQuery's statement and its arguments.
func (sq searchQuery) itemSQL(windowed bool, floor time.Time, plan indexPlan) (string, args) {
	// The conditions on the search row s, then those on its session e.
	var a args
	var rows []string
	if !sq.opts.WholeLog {
		rows = append(rows, "s.live")
	}
	if sq.opts.Role != "" {
		rows = append(rows, "s.role = "+a.add(sq.opts.Role))
	}
	rows = append(rows, sq.timeBounds(&a, "s.time")...)
	if windowed {
		rows = append(rows, "s.time > "+a.add(sq.s.db.timeArg(floor)))
	}
	for _, t := range sq.terms {
		if slices.Contains(plan.like, t) {
			// LIKE, which pg_trgm's index serves, is the check itself.
			rows = append(rows, "s.body LIKE "+a.add(likePattern(t)))
			continue
		}
		rows = append(rows, sq.contains(&a, "s.body", t))
	}
	for _, w := range plan.like {
		if !slices.Contains(sq.terms, w) {
			// A word of a term, for pg_trgm's index to choose the rows.
			rows = append(rows, "s.body LIKE "+a.add(likePattern(w)))
		}
	}
	if len(plan.grams) > 0 {
		// The bigram index chooses the rows; strpos above checks them.
		rows = append(rows, "s.grams @> "+a.add(plan.grams)+"::int4[]")
	}
	from := "search s, sessions e"
	if plan.match != "" {
		// The candidates first (CROSS JOIN keeps the order): the rows
		// of the trigram index that hold the trigrams of the terms;
		// instr checks them.
		from = "(SELECT rowid AS id FROM search_fts WHERE search_fts MATCH " + a.add(plan.match) +
			") c CROSS JOIN search s CROSS JOIN sessions e"
		rows = append(rows, "s.id = c.id")
	}
	sessions := append([]string{"e.sid = s.sid"}, sq.sessionFilters(&a)...)
	cursor := sq.afterCursor(&a, "s.time", "s.seq", "s.idx")
	cols := `s.sid, e.project, e.id, e.subpath, e.title, s.seq, s.idx, s.role, s.time, s.body`
	order := ` ORDER BY s.time DESC, e.project DESC, e.id DESC, e.subpath DESC, s.seq DESC, s.idx DESC LIMIT ` + a.add(sq.keep)
	var stmt string
	if sq.pg {
		// The search rows first, materialized, then their sessions:
		// the planner, left to join as it likes, may walk each
		// session's rows or search_time row by row instead of the
		// trigram index (or the time window).
		c := `SELECT s.sid, s.seq, s.idx, s.role, s.time, s.body FROM search s WHERE `
		match := c + strings.Join(rows, " AND ")
		if len(plan.like) > 0 || len(plan.grams) > 0 {
			// The GIN indexes hold the indexed rows only (they are
			// partial); the tail's rows are read through its own
			// index (see ginCleaner).
			match = c + strings.Join(append([]string{"s.indexed"}, rows...), " AND ") +
				` UNION ALL ` + c + strings.Join(append([]string{"NOT s.indexed"}, rows...), " AND ")
		}
		stmt = `WITH c AS MATERIALIZED (` + match + `)
			SELECT ` + cols + ` FROM c s, sessions e WHERE ` + strings.Join(append(sessions, cursor...), " AND ") + order
		if windowed {
			// A window's rows are few (its hits, at most the window),
			// but the planner, which cannot tell how few, may hash
			// every session to join them: each is looked up by its
			// key instead (OFFSET 0 keeps the subquery a subquery).
			stmt = `WITH c AS MATERIALIZED (` + match + `)
				SELECT ` + cols + ` FROM c s, LATERAL (SELECT e.project, e.id, e.subpath, e.title FROM sessions e WHERE ` +
				strings.Join(sessions, " AND ") + ` OFFSET 0) e`
			if len(cursor) > 0 {
				stmt += ` WHERE ` + strings.Join(cursor, " AND ")
			}
			stmt += order
		}
	} else {
		stmt = `SELECT ` + cols + ` FROM ` + from + ` WHERE ` + strings.Join(append(append(rows, sessions...), cursor...), " AND ") + order
	}
	if sq.pg {
		// ts_rank of the page's rows only.
		stmt = `SELECT *, ` + sq.pgRank(&a, "h.body") + ` FROM (` + stmt + `) h`
	} else {
		stmt = `SELECT *, 0 FROM (` + stmt + `) h`
	}
	return stmt, a
}

// isNoRows reports a query that found no row (pgx's error is
// sql.ErrNoRows too).
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
