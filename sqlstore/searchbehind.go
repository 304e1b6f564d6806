package sqlstore

import (
	"context"
	"fmt"
	"math"

	"github.com/recallkit/recall"
)

// On SQLite a main session's search rows trail its log by a few entries
// (migration 0008). Writing the row of an item in the append's own
// transaction put four more pages into that commit (the search table and
// its three indexes) besides the append's five, and cost the append about
// 13%; writing the rows of many entries at once costs each far less, since
// they share those pages. So an append records the session in
// search_behind, with the first seq its rows do not reflect (and writes
// nothing more when the session is already there), and the rows are
// written from the log later, by the same rule (searchChangesOf):
//
//   - in a write transaction of their own, on the store's background
//     goroutine, once an append has left the session searchLag entries
//     or more behind (see sqlitebg.go); by that append itself only when
//     the goroutine is off (the store is closing) or has not kept up
//     (hardLagFactor*searchLag entries behind), and by an import or a
//     fork, which are not on an agent's path, at once;
//   - by a search, which first brings every session in search_behind up
//     to date (catchUpSearch), so that it sees every entry acknowledged
//     before it began.
//
// The mark is written by the commit that writes the entries: no crash
// leaves an entry whose rows are never written. This is the only thing
// SQLite's search defers: a row joins the trigram index in the
// transaction that writes it (the trigger of migration 11). FTS5 writes a
// segment at every commit that added to it, which would cost an append
// more than the rest of it; the rows of a catch-up share one.

// searchLag is how many entries a main session's log may hold past its
// search rows on SQLite before they are due (see above): a search first
// writes the rows of at most searchLag-1 entries per session, or of
// hardLagFactor*searchLag-1 when the background goroutine has not kept
// up.
const searchLag = 64

// behindChunk is how many sessions' rows a search writes per write
// transaction (see catchUpSearch).
const behindChunk = 256

// The statements of search_behind.
const (
	// behindSQL reads the first seq session $1's rows do not reflect.
	behindSQL = `SELECT from_seq FROM search_behind WHERE sid = $1`
	// markBehindSQL records that session $1's rows reflect none of its
	// entries from seq $2 on.
	markBehindSQL = `INSERT INTO search_behind (sid, from_seq) VALUES ($1, $2)`
	// unmarkBehindSQL records that session $1's rows reflect its log.
	unmarkBehindSQL = `DELETE FROM search_behind WHERE sid = $1`
	// maxBehindSQL reads the largest sid whose rows trail its log, 0
	// when none does.
	maxBehindSQL = `SELECT coalesce(max(sid), 0) FROM search_behind`
	// chunkEndSQL reads the sid of the $2-th session behind after sid
	// $1, or of the last one, 0 when none is left.
	chunkEndSQL = `SELECT coalesce(max(sid), 0) FROM (SELECT sid FROM search_behind WHERE sid > $1 ORDER BY sid LIMIT $2)`
	// behindEntriesSQL reads the entries of the sessions behind with
	// sids in ($1, $2] that their rows do not reflect, by sid and seq.
	behindEntriesSQL = `SELECT b.sid, ` + entryCols + ` FROM search_behind b
		JOIN entries ON entries.session = b.sid AND entries.seq >= b.from_seq
		WHERE b.sid > $1 AND b.sid <= $2 ORDER BY b.sid, entries.seq`
	// unmarkChunkSQL records that the sessions with sids in ($1, $2]
	// are up to date.
	unmarkChunkSQL = `DELETE FROM search_behind WHERE sid > $1 AND sid <= $2`
)

// lag returns searchLag, or the test's value.
func (b *liteBackend) lag() int64 {
	if b.searchLag > 0 {
		return int64(b.searchLag)
	}
	return searchLag
}

// trailSearch is indexEntries on SQLite: entries, a batch in seq order
// with Seq and Time set, were just written to main session sid's log in
// the transaction of q. It marks the session behind from the batch's
// first seq (unless it is behind already). When that leaves it lag
// entries or more behind (searchLag for an append, 1 for an import or a
// fork), the rows of every entry from where it was behind are due: an
// append leaves them to the background goroutine (searchDue) unless they
// are hardLagFactor*lag entries or more, or the goroutine is off; else
// trailSearch writes them, the older ones read back from the log.
func (b *liteBackend) trailSearch(ctx context.Context, q querier, sid int64, entries []recall.Entry, lag int64) error {
	if len(entries) == 0 {
		return nil
	}
	first, last := entries[0].Seq, entries[len(entries)-1].Seq
	from := first
	err := q.queryRow(ctx, behindSQL, sid).Scan(&from)
	marked := err == nil
	if err != nil && !isNoRows(err) {
		return err
	}
	behind := last - from + 1
	if behind < lag || lag > 1 && behind < hardLagFactor*lag && b.bg.searchDue(sid) {
		if marked {
			return nil
		}
		_, err := q.exec(ctx, markBehindSQL, sid, first)
		return err
	}
	if from < first {
		older, err := readEntries(ctx, q, sid, from-1, int(first-from))
		if err != nil {
			return err
		}
		entries = append(older, entries...)
	}
	if err := applySearchChanges(ctx, q, b, sid, searchChangesOf(entries)); err != nil {
		return err
	}
	if !marked {
		return nil
	}
	_, err = q.exec(ctx, unmarkBehindSQL, sid)
	return err
}

// catchUpSearch writes the search rows of every entry that sessions in
// search_behind hold past their rows, before a search reads: the
// sessions behind when it is called are up to date when it returns. It
// takes them in the order of sid, behindChunk per write transaction, so
// that appends wait for at most one chunk.
func (b *liteBackend) catchUpSearch(ctx context.Context) error {
	var last int64
	if err := b.q().queryRow(ctx, maxBehindSQL).Scan(&last); err != nil || last == 0 {
		return err
	}
	for after := int64(0); after < last; {
		err := b.update(ctx, func(ctx context.Context, q querier) error {
			var err error
			after, err = b.catchUpChunk(ctx, q, after)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// catchUpChunk writes the search rows of the first behindChunk sessions
// in search_behind after sid after, in the write transaction of q, and
// returns the last sid it took, or the largest sid when none is left.
func (b *liteBackend) catchUpChunk(ctx context.Context, q querier, after int64) (int64, error) {
	var upto int64
	if err := q.queryRow(ctx, chunkEndSQL, after, behindChunk).Scan(&upto); err != nil {
		return 0, err
	}
	if upto == 0 {
		return math.MaxInt64, nil
	}
	return upto, b.catchUpRange(ctx, q, after, upto)
}

// catchUpRange writes the search rows of the sessions in search_behind
// with sids in (after, upto], in the write transaction of q, and takes
// them out of it.
func (b *liteBackend) catchUpRange(ctx context.Context, q querier, after, upto int64) error {
	rs, err := q.query(ctx, behindEntriesSQL, after, upto)
	if err != nil {
		return err
	}
	var (
		sids []int64
		logs [][]recall.Entry
	)
	for rs.Next() {
		var sid int64
		e, err := scanEntry(sidScanner{rs, &sid})
		if err != nil {
			rs.Close()
			return err
		}
		if len(sids) == 0 || sids[len(sids)-1] != sid {
			sids, logs = append(sids, sid), append(logs, nil)
		}
		logs[len(logs)-1] = append(logs[len(logs)-1], e)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for i, sid := range sids {
		if err := applySearchChanges(ctx, q, b, sid, searchChangesOf(logs[i])); err != nil {
			return fmt.Errorf("session %d: %w", sid, err)
		}
	}
	_, err = q.exec(ctx, unmarkChunkSQL, after, upto)
	return err
}

// sidScanner scans a row of behindEntriesSQL: the sid, then what
// scanEntry reads.
type sidScanner struct {
	r   rows
	sid *int64
}

func (s sidScanner) Scan(dest ...any) error { return s.r.Scan(append([]any{s.sid}, dest...)...) }
