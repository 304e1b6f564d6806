package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// The search table (migration 0003) holds a row per searchable item of a
// main session, written on PostgreSQL by the transaction that writes the
// entries, and on SQLite from the log a few entries later (see
// searchbehind.go); this file computes those rows from the entries. Its
// rule is recall.Replay's, so that the rows marked live are exactly the
// items of the view: an item entry adds a live row (when recall.Entry.Item
// takes it and search.Text finds text in it); a pop or remove entry
// makes the row it names not live; a clear makes every row not live; a
// compaction (one that decodes) makes every row not live and adds a live
// row per item of it, at Ref{Seq: its seq, Index: i}. An item without
// text, or damaged, has no row: it is never a hit. Sessions that are not
// main (subagent records) have no rows: search leaves them out.

// searchRow is a row of the search table.
type searchRow struct {
	ref  recall.ItemRef
	role string
	time time.Time
	live bool
	body string // searchText of the item's text
}

// searchChanges is what a batch of entries, appended to a log, does to
// the session's search rows.
type searchChanges struct {
	// clear: every row written before the batch is no longer live.
	clear bool
	// unlive are rows written before the batch that are no longer live.
	unlive []recall.ItemRef
	// rows are the batch's new rows, live or not.
	rows []searchRow
}

// searchText returns text as the search table stores it: normalized
// (search.Normalize), with every NUL character replaced by U+FFFD,
// which PostgreSQL's text cannot hold (and which SQLite's string
// functions stop at). Terms are stored the same way (see Search), so a
// term matches as search.Query.Match says, except that NUL and U+FFFD
// (which already stands for undecodable bytes) are one character to it.
func searchText(text string) string {
	return strings.ReplaceAll(search.Normalize(text), "\x00", "\uFFFD")
}

// searchRowOf returns the row of item it, held by an entry of time t at
// ref, or false when it has no text to search.
func searchRowOf(ref recall.ItemRef, it recall.Item, t time.Time) (searchRow, bool) {
	role, text := search.Text(it)
	if text == "" {
		return searchRow{}, false
	}
	body := searchText(text)
	if body == "" {
		return searchRow{}, false
	}
	return searchRow{ref: ref, role: role, time: t, live: true, body: body}, true
}

// searchChangesOf returns the changes entries, a batch in seq order with
// their Seq and Time set, make to the search rows of the session they
// are appended to.
func searchChangesOf(entries []recall.Entry) searchChanges {
	var ch searchChanges
	for _, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			if it, ok := e.Item(); ok {
				if r, ok := searchRowOf(recall.ItemRef{Seq: e.Seq}, it, e.Time); ok {
					ch.rows = append(ch.rows, r)
				}
			}
		case recall.KindPop, recall.KindRemove:
			var ref recall.ItemRef
			if json.Unmarshal(e.Data, &ref) != nil {
				continue
			}
			found := false
			for i := range ch.rows {
				if ch.rows[i].ref == ref {
					ch.rows[i].live = false
					found = true
				}
			}
			if !found && !ch.clear {
				ch.unlive = append(ch.unlive, ref)
			}
		case recall.KindClear:
			ch.unliveAll()
		case recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			ch.unliveAll()
			for i, it := range c.Items {
				if r, ok := searchRowOf(recall.ItemRef{Seq: e.Seq, Index: i}, it, e.Time); ok {
					ch.rows = append(ch.rows, r)
				}
			}
		}
	}
	return ch
}

// unliveAll makes every row not live: those before the batch and the
// batch's own so far.
func (ch *searchChanges) unliveAll() {
	ch.clear = true
	ch.unlive = nil
	for i := range ch.rows {
		ch.rows[i].live = false
	}
}

// itemRows returns the row of each of a batch of item entries, live, or
// nil where it has none: the fast path of Append on PostgreSQL, which
// learns the seqs in its statement.
func itemRows(entries []recall.Entry) []*searchRow {
	rows := make([]*searchRow, len(entries))
	for i, e := range entries {
		if it, ok := e.Item(); ok {
			if r, ok := searchRowOf(recall.ItemRef{Seq: e.Seq}, it, e.Time); ok {
				rows[i] = &r
			}
		}
	}
	return rows
}

// The statements that change the live flag of search rows.
const (
	// unliveAllSQL: session $1's rows are no longer live.
	unliveAllSQL = `UPDATE search SET live = FALSE WHERE sid = $1 AND live`
	// unliveSQL: session $1's row ($2, $3) is no longer live.
	unliveSQL = `UPDATE search SET live = FALSE WHERE sid = $1 AND seq = $2 AND idx = $3 AND live`
	// insertSearchSQL inserts a row (SQLite, one per statement).
	insertSearchSQL = `INSERT INTO search (sid, seq, idx, role, time, live, body) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// insertSearchPG3SQL inserts rows from arrays (PostgreSQL, schema
	// version 3 to 5).
	insertSearchPG3SQL = `INSERT INTO search (sid, seq, idx, role, time, live, body)
		SELECT $1, * FROM unnest($2::int8[], $3::int4[], $4::text[], $5::timestamptz[], $6::bool[], $7::text[])`
	// insertSearchPGSQL inserts rows from arrays (PostgreSQL), the
	// bigrams of each as an int4[] literal (see cjkBigrams), indexed
	// when $9 and otherwise into the tail (see inlineIndexed).
	insertSearchPGSQL = `INSERT INTO search (sid, seq, idx, role, time, live, body, grams, indexed)
		SELECT $1, seq, idx, role, time, live, body, grams::int4[], $9::bool
		FROM unnest($2::int8[], $3::int4[], $4::text[], $5::timestamptz[], $6::bool[], $7::text[], $8::text[])
			AS u(seq, idx, role, time, live, body, grams)`
	// deleteSearchSQL deletes session $1's rows.
	deleteSearchSQL = `DELETE FROM search WHERE sid = $1`
)

// indexEntries applies to session sid's search rows what entries, just
// written to its log in the same transaction, change: at once on
// PostgreSQL, and on SQLite at once when bulk (an import, a fork) and
// otherwise later, in the background, or by the append that finds the
// rows trailing too far (see trailSearch). Only main sessions have rows.
func (s *Store) indexEntries(ctx context.Context, q querier, key recall.Key, sid int64, entries []recall.Entry, bulk bool) error {
	if !key.IsMain() || s.noSearch {
		return nil
	}
	if b, ok := s.db.(*liteBackend); ok {
		lag := b.lag()
		if bulk {
			lag = 1
		}
		if err := b.trailSearch(ctx, q, sid, entries, lag); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		return nil
	}
	if err := applySearchChanges(ctx, q, s.db, sid, searchChangesOf(entries)); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// applySearchChanges applies ch to session sid's search rows, inserting
// the new ones with db.
func applySearchChanges(ctx context.Context, q querier, db backend, sid int64, ch searchChanges) error {
	if ch.clear {
		if _, err := q.exec(ctx, unliveAllSQL, sid); err != nil {
			return err
		}
	}
	for _, ref := range ch.unlive {
		if _, err := q.exec(ctx, unliveSQL, sid, ref.Seq, ref.Index); err != nil {
			return err
		}
	}
	return db.insertSearch(ctx, q, sid, ch.rows)
}

// reindex replaces session sid's search rows with those of log, its whole
// new log (Purge rewrites the log), at once on every dialect.
func (s *Store) reindex(ctx context.Context, q querier, key recall.Key, sid int64, log []recall.Entry) error {
	if _, err := q.exec(ctx, deleteSearchSQL, sid); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	if _, ok := s.db.(*liteBackend); ok {
		if _, err := q.exec(ctx, unmarkBehindSQL, sid); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	if !key.IsMain() || s.noSearch {
		return nil
	}
	if err := applySearchChanges(ctx, q, s.db, sid, searchChangesOf(log)); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// insertSearchLite inserts rows on SQLite, a statement per row, for
// migration 3 (the rows join the trigram index in migration 11).
func insertSearchLite(ctx context.Context, q querier, sid int64, rows []searchRow) error {
	for _, r := range rows {
		if _, err := q.exec(ctx, insertSearchSQL, sid, r.ref.Seq, r.ref.Index, r.role, r.time.UnixMicro(), r.live, r.body); err != nil {
			return err
		}
	}
	return nil
}

// insertSearchPG inserts rows on PostgreSQL, in one statement.
func insertSearchPG(ctx context.Context, q querier, sid int64, rows []searchRow) error {
	return insertSearchPGWith(ctx, q, sid, rows, true)
}

// insertSearchPGWith inserts rows on PostgreSQL, with their bigrams
// (withGrams, the schema since version 6) or without (the Go step of
// migration 3, before the column).
func insertSearchPGWith(ctx context.Context, q querier, sid int64, rows []searchRow, withGrams bool) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	seqs, idxs := make([]int64, n), make([]int32, n)
	roles, bodies := make([]string, n), make([]string, n)
	times, live := make([]time.Time, n), make([]bool, n)
	for i, r := range rows {
		seqs[i], idxs[i], roles[i], times[i], live[i], bodies[i] = r.ref.Seq, int32(r.ref.Index), r.role, r.time, r.live, r.body
	}
	args := []any{sid, seqs, idxs, roles, times, live, bodies}
	stmt := insertSearchPG3SQL
	if withGrams {
		grams := make([]*string, n)
		for i, r := range rows {
			grams[i] = bigramsLiteral(r.body)
		}
		stmt, args = insertSearchPGSQL, append(args, grams, inlineIndexed(n))
	}
	_, err := q.exec(ctx, stmt, args...)
	return err
}

// isCJK reports whether r is written without spaces between words:
// Chinese, Japanese and Korean characters (Han, Hiragana, Katakana,
// Hangul). A term of two of them is a word that no trigram holds; the
// bigram index (migration 0006, PostgreSQL) serves it.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// bigramCode is the code of the pair of characters a, b in the bigram
// index: a's low 16 bits, then b's. Two pairs of the Basic Multilingual
// Plane (where CJK text is, but for rare Han extensions) have distinct
// codes; pairs that share one are candidates of each other's queries,
// which strpos then checks, as every candidate.
func bigramCode(a, b rune) int32 {
	return int32(uint32(a)<<16 | uint32(b)&0xFFFF)
}

// cjkBigrams returns the distinct codes of the pairs of adjacent CJK
// characters (isCJK) of body, sorted, or nil when it has none: the keys
// of its row in the bigram index. Every place a term of two CJK
// characters occurs in body is such a pair.
func cjkBigrams(body string) []int32 {
	var out []int32
	prev := rune(-1)
	for _, r := range body {
		if !isCJK(r) {
			prev = -1
			continue
		}
		if prev >= 0 {
			out = append(out, bigramCode(prev, r))
		}
		prev = r
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bigramsLiteral returns cjkBigrams(body) as an int4[] literal, or nil
// (NULL: no key in the index) when body has none.
func bigramsLiteral(body string) *string {
	codes := cjkBigrams(body)
	if len(codes) == 0 {
		return nil
	}
	b := make([]byte, 0, 8*len(codes)+2)
	b = append(b, '{')
	for i, c := range codes {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(c), 10)
	}
	s := string(append(b, '}'))
	return &s
}

// backfillSearch is the Go step of migration 0003: it computes the search
// rows of every main session from its log, and every session's
// normalized title, in the migration's transaction. insert writes rows
// (insertSearchLite or insertSearchPG).
func backfillSearch(ctx context.Context, q querier, insert func(ctx context.Context, q querier, sid int64, rows []searchRow) error) error {
	type session struct {
		sid   int64
		main  bool
		title string
	}
	rs, err := q.query(ctx, `SELECT sid, subpath, title FROM sessions ORDER BY sid`)
	if err != nil {
		return err
	}
	var sessions []session
	for rs.Next() {
		var (
			s       session
			subpath string
		)
		if err := rs.Scan(&s.sid, &subpath, &s.title); err != nil {
			rs.Close()
			return err
		}
		s.main = subpath == ""
		sessions = append(sessions, s)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for _, s := range sessions {
		if t := searchText(s.title); t != "" {
			if _, err := q.exec(ctx, `UPDATE sessions SET search_title = $2 WHERE sid = $1`, s.sid, t); err != nil {
				return err
			}
		}
		if !s.main {
			continue
		}
		entries, err := readEntries(ctx, q, s.sid, 0, 0)
		if err != nil {
			return err
		}
		if err := insert(ctx, q, s.sid, searchChangesOf(entries).rows); err != nil {
			return err
		}
	}
	return nil
}

// backfillBigrams is the Go step of migration 6 (PostgreSQL): it sets
// the grams of every search row already written (see cjkBigrams), in
// chunks of the primary key's order, then creates the index over them
// (after, so that the rows go into it at once rather than one by one).
func backfillBigrams(ctx context.Context, q querier) error {
	const chunk = 10_000
	var (
		sid, seq int64
		idx      int32
	)
	for first := true; ; first = false {
		rs, err := q.query(ctx, `SELECT sid, seq, idx, body FROM search WHERE $4 OR (sid, seq, idx) > ($1, $2, $3)
			ORDER BY sid, seq, idx LIMIT $5`, sid, seq, idx, first, chunk)
		if err != nil {
			return err
		}
		var sids, seqs []int64
		var idxs []int32
		var grams []string
		n := 0
		for rs.Next() {
			var body string
			if err := rs.Scan(&sid, &seq, &idx, &body); err != nil {
				rs.Close()
				return err
			}
			n++
			if g := bigramsLiteral(body); g != nil {
				sids, seqs, idxs, grams = append(sids, sid), append(seqs, seq), append(idxs, idx), append(grams, *g)
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		if len(sids) > 0 {
			if _, err := q.exec(ctx, `UPDATE search s SET grams = u.grams::int4[]
				FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::text[]) AS u(sid, seq, idx, grams)
				WHERE s.sid = u.sid AND s.seq = u.seq AND s.idx = u.idx`, sids, seqs, idxs, grams); err != nil {
				return err
			}
		}
		if n < chunk {
			break
		}
	}
	_, err := q.exec(ctx, `CREATE INDEX search_grams ON search USING gin (grams) WITH (gin_pending_list_limit = 256)`)
	return err
}
