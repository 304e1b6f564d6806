package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Pop's fast path on PostgreSQL. The general Pop is a transaction of
// seven round trips (BEGIN, the session row locked, a window of the log,
// the row rewritten, the pop entry, the search row, COMMIT), where an
// Append of items is one statement; on a busy server each round trip is
// a wait. The common undo, the newest entry of a healthy session being an
// item (a turn just appended), is instead one round trip: a batch of two
// statements that PostgreSQL runs in one implicit transaction, the
// session row locked by the first, the pop written by the second, which
// starts after the lock is held and so reads the log as it now is (in
// READ COMMITTED each statement reads a new snapshot). Anything else
// (pops in a row, a newest entry that is not an item, rows above
// checked_seq, a payload that is not a JSON object) leaves the second
// statement writing nothing, or failing, and Pop runs its general
// transaction, which checks payloads in Go (see unusable).

// popLockPG locks the row of the session with key $1-$3.
const popLockPG = `SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3 FOR UPDATE`

// popNewestPG pops the item at last_seq of the session with key $1-$3
// when the session is healthy (checked_seq = last_seq) and that entry is
// an item whose payload is a JSON object: by its first and last bytes, as
// recall.Entry.Item judges it, and by PostgreSQL's json parser, since a row
// can be damaged after it was written ("{x}"). A payload that is not
// UTF-8 or not JSON fails the cast, and so the statement, with a data
// exception: nothing is written, and popNewest leaves the pop to the
// general path. (The parser agrees with Go's on JSON but for nesting
// deeper than 10,000 levels, which it takes and Go refuses.) It appends
// the pop entry of time $4
// ({"seq":N}, as recall.NewEntry writes an ItemRef of index 0), applies
// it to the session row as recall.Meta.Apply does (last_seq and
// checked_seq move to it, a positive item_count drops by one, a pop is
// activity: updated_at moves to $4 if later; created_at, when zero ($5),
// becomes $4), makes the item's search row not live when $6 (see
// searchindex.go: a pop makes the row it names not live), and returns the
// item. Otherwise it returns no row and writes nothing.
const popNewestPG = `WITH t AS (
	SELECT e.session, e.seq, e.payload
	FROM sessions s JOIN entries e ON e.session = s.sid AND e.seq = s.last_seq
	WHERE s.project = $1 AND s.id = $2 AND s.subpath = $3 AND s.checked_seq = s.last_seq
		AND e.kind = 'item' AND length(e.payload) >= 2
		AND substring(e.payload FROM 1 FOR 1) = '\x7b'::bytea
		AND substring(e.payload FROM length(e.payload) FOR 1) = '\x7d'::bytea
		AND json_typeof(convert_from(e.payload, 'UTF8')::json) = 'object'
), u AS (
	UPDATE sessions AS s SET last_seq = t.seq + 1, checked_seq = t.seq + 1,
		item_count = CASE WHEN s.item_count > 0 THEN s.item_count - 1 ELSE s.item_count END,
		updated_at = GREATEST(s.updated_at, $4),
		created_at = CASE WHEN s.created_at = $5 THEN $4 ELSE s.created_at END
	FROM t WHERE s.sid = t.session
), p AS (
	INSERT INTO entries (session, seq, kind, payload, time)
	SELECT t.session, t.seq + 1, 'pop', convert_to('{"seq":' || t.seq || '}', 'UTF8'), $4 FROM t
), x AS (
	UPDATE search SET live = FALSE FROM t
	WHERE $6 AND search.sid = t.session AND search.seq = t.seq AND search.idx = 0 AND search.live
)
SELECT payload FROM t`

// popNewest runs Pop's fast path on PostgreSQL (see popNewestPG). done
// reports that it decided the pop: it popped item, or found no session
// (item nil); when done is false nothing was written, and the general
// path is to run.
func (b *pgBackend) popNewest(ctx context.Context, key recall.Key, search bool) (item recall.Item, done bool, err error) {
	now := storekit.Now().UTC().Truncate(time.Microsecond)
	err = b.retry(ctx, func() error {
		item, done = nil, false
		var batch pgx.Batch
		batch.Queue(popLockPG, key.Project, key.Session, key.Subpath)
		batch.Queue(popNewestPG, key.Project, key.Session, key.Subpath, now, time.Time{}, search)
		br := b.pool.SendBatch(ctx, &batch)
		var sid int64
		err := br.QueryRow().Scan(&sid)
		if errors.Is(err, pgx.ErrNoRows) {
			done = true // no session: nothing to pop
			return br.Close()
		}
		if err != nil {
			br.Close()
			return err
		}
		var payload []byte
		err = br.QueryRow().Scan(&payload)
		if errors.Is(err, pgx.ErrNoRows) {
			return br.Close() // not the common case: the general path
		}
		if notJSON(err) {
			br.Close()
			return nil // a damaged newest item: the general path skips it
		}
		if err != nil {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		item, done = recall.Item(payload), true
		return nil
	})
	if err != nil {
		return nil, false, b.writeError(err)
	}
	return item, done, nil
}

// notJSON reports an error by which PostgreSQL refused a payload as JSON
// or as UTF-8 (SQLSTATE class 22, a data exception; 54001, nesting deeper
// than its stack allows): see popNewestPG.
func notJSON(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || pe.Code == "54001")
}
