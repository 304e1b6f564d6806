package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// ErrDiverged reports a session whose replica log cannot be continued from
// the primary's: the replica holds entries the primary does not (the
// session was removed and re-created locally, or something else writes to
// the replica), or the primary's log was purged below the replica's
// position. Retrying does not help; the session is reported in Status and
// retried only after its next local write.
var ErrDiverged = errors.New("mirror: replica diverged from primary")

// errHeadless reports a replica whose log of a session starts after the
// primary's: it lacks the first entries, and appending cannot bring them
// back. A replica that lost a session while a copy of it was under way
// gets there when the copy's next batch starts with a compaction entry,
// which Import takes as the start of a purged log (see storekit.ImportPlan).
// The cure is to remove the replica's copy and copy the session whole.
var errHeadless = errors.New("mirror: the replica lacks the start of the session's log")

// errGone reports that the primary no longer holds a session (it was
// removed after it was queued): there is nothing to copy.
var errGone = errors.New("mirror: session gone from the primary")

// copier copies session logs from src to dst with Entries and Import.
// The mirror's workers and Sync share it.
type copier struct {
	src, dst recall.Store
	batch    int
	// timeout bounds each call to dst; 0 means none.
	timeout time.Duration
	// to maps a key of src to its key in dst, for copy (the project of a
	// session may have another key on another machine); nil: the same.
	to func(recall.Key) recall.Key
	// origins maps the project of a fork entry's origin from src's keys
	// to dst's, for copy (see TwoWay); nil: the same.
	origins func(string) string
}

// dstKey is key's key in dst.
func (c copier) dstKey(key recall.Key) recall.Key {
	if c.to == nil {
		return key
	}
	return c.to(key)
}

// replicaError marks an error that came from the replica (dst), as opposed
// to the primary, so the caller can tell an outage of the replica from a
// failure of the local store.
type replicaError struct{ err error }

func (e *replicaError) Error() string { return e.err.Error() }
func (e *replicaError) Unwrap() error { return e.err }

func fromReplica(err error) error {
	if err == nil {
		return nil
	}
	return &replicaError{err}
}

// dstCtx bounds one call to dst.
func (c copier) dstCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// position returns the last seq dst holds for key (0 when dst has no such
// session): the authority a cursor is reset from. guess is the position
// the caller believed. Before dst's position is trusted, dst's log is
// checked to be src's, by content: the first entries of both (see
// sameHead) and, when dst's position is not the one guessed, the entries
// at that position (see sameTip). A replica that holds a different log is
// reported as ErrDiverged rather than appended to.
func (c copier) position(ctx context.Context, key recall.Key, guess int64) (int64, error) {
	cctx, cancel := c.dstCtx(ctx)
	m, err := c.dst.Stat(cctx, key)
	cancel()
	switch {
	case errors.Is(err, recall.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fromReplica(fmt.Errorf("mirror: stat %s on replica: %w", key, err))
	}
	last := m.LastSeq
	if last == 0 {
		return 0, nil
	}
	if err := c.sameHead(ctx, key); err != nil {
		return last, err
	}
	if last == guess {
		return last, nil
	}
	return last, c.sameTip(ctx, key, last)
}

// sameHead compares the first entries of src's and dst's logs of key. A
// log of dst that starts after src's lacks entries appending cannot bring
// back: errHeadless. Two logs that start at the same seq must hold the
// same entry there, or dst's is another log (ErrDiverged): a session
// removed and re-created locally while dst kept the old one, or another
// writer. A log of src that starts later (it was purged) is fine: dst
// keeps the longer history, and sameTip compares what both hold.
func (c copier) sameHead(ctx context.Context, key recall.Key) error {
	mine, err := c.src.Entries(ctx, key, 0, 1)
	if errors.Is(err, recall.ErrNotFound) {
		return fmt.Errorf("%w: %s", errGone, key)
	}
	if err != nil {
		return fmt.Errorf("mirror: read %s from primary: %w", key, err)
	}
	cctx, cancel := c.dstCtx(ctx)
	theirs, err := c.dst.Entries(cctx, key, 0, 1)
	cancel()
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		return fromReplica(fmt.Errorf("mirror: read %s from replica: %w", key, err))
	}
	if len(mine) == 0 || len(theirs) == 0 {
		return nil
	}
	a, b := mine[0], theirs[0]
	switch {
	case b.Seq > a.Seq:
		return fmt.Errorf("%w: %s: the replica's log starts at seq %d, the primary's at seq %d", errHeadless, key, b.Seq, a.Seq)
	case b.Seq == a.Seq && !sameEntry(a, b):
		return c.divergedUnlessRedacted(ctx, key, a, b)
	}
	return nil
}

// remove removes key from dst; a dst that does not hold it is fine.
// remove removes key from dst; a dst that does not hold it is fine.
func (c copier) remove(ctx context.Context, key recall.Key) error {
	cctx, cancel := c.dstCtx(ctx)
	defer cancel()
	err := c.dst.Remove(cctx, key)
	if err == nil || errors.Is(err, recall.ErrNotFound) {
		return nil
	}
	return fromReplica(fmt.Errorf("mirror: remove %s from replica: %w", key, err))
}

// sameTip checks that src and dst hold the same entry at seq (see
// sameEntry).
func (c copier) sameTip(ctx context.Context, key recall.Key, seq int64) error {
	mine, err := c.src.Entries(ctx, key, seq-1, 1)
	if errors.Is(err, recall.ErrNotFound) {
		return fmt.Errorf("%w: %s", errGone, key)
	}
	if err != nil {
		return fmt.Errorf("mirror: read %s at seq %d from primary: %w", key, seq, err)
	}
	if len(mine) == 0 || mine[0].Seq != seq {
		return fmt.Errorf("%w: %s: the replica holds seq %d, the primary does not", ErrDiverged, key, seq)
	}
	cctx, cancel := c.dstCtx(ctx)
	theirs, err := c.dst.Entries(cctx, key, seq-1, 1)
	cancel()
	if err != nil {
		return fromReplica(fmt.Errorf("mirror: read %s at seq %d from replica: %w", key, seq, err))
	}
	if len(theirs) == 0 || theirs[0].Seq != seq {
		return fromReplica(fmt.Errorf("mirror: %s: replica reports seq %d but does not return it: %w", key, seq, recall.ErrConflict))
	}
	if !sameEntry(mine[0], theirs[0]) {
		return c.divergedUnlessRedacted(ctx, key, mine[0], theirs[0])
	}
	return nil
}

// sameEntry reports whether a, an entry of the primary, and b, the
// replica's entry of the same seq, are one entry: the same kind, time,
// payload bytes (for a fork entry, the same origin) and usage. Times alone cannot tell two logs apart (a
// session removed and re-created within a microsecond, or entries written
// with an explicit time), and Import carries every field verbatim, so a
// copy is equal in all of them.
//
// The one rewrite a copy may have missed is a purge's (storekit.PurgeLog):
// the compaction entry a purged log starts at gains the session's
// creation time (Compaction.Created) and the usage of the dropped
// entries, keeping its seq, time and the rest of its payload. Such an
// entry matches the replica's copy of the entry before the purge.
func sameEntry(a, b recall.Entry) bool {
	if a.Kind != b.Kind || !a.Time.Equal(b.Time) {
		return false
	}
	if bytes.Equal(a.Data, b.Data) && sameUsage(a.Usage, b.Usage) {
		return true
	}
	switch a.Kind {
	case recall.KindFork: // a server re-encodes the origins it translates
		oa, oka := forkOrigin(a)
		ob, okb := forkOrigin(b)
		return oka && okb && oa == ob && sameUsage(a.Usage, b.Usage)
	case recall.KindCompaction:
		return samePurged(a.Data, b.Data)
	}
	return false
}

// samePurged reports whether two compaction payloads are equal but for
// Compaction.Created, which a purge sets. Both are decoded and encoded
// again, so that the purge's re-encoding of the items does not count.
func samePurged(a, b []byte) bool {
	var ca, cb recall.Compaction
	if json.Unmarshal(a, &ca) != nil || json.Unmarshal(b, &cb) != nil {
		return false
	}
	ca.Created, cb.Created = time.Time{}, time.Time{}
	ja, err1 := json.Marshal(ca)
	jb, err2 := json.Marshal(cb)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// sameUsage compares two entries' usage; none and zero are the same.
func sameUsage(a, b *recall.Usage) bool {
	var ua, ub recall.Usage
	if a != nil {
		ua = *a
	}
	if b != nil {
		ub = *b
	}
	return ua == ub
}

// diverged is the ErrDiverged of a session whose primary holds a and whose
// replica holds b at the same seq.
func diverged(key recall.Key, a, b recall.Entry) error {
	what := "payload"
	switch {
	case a.Kind != b.Kind:
		what = "kind"
	case !a.Time.Equal(b.Time):
		what = "time"
	case bytes.Equal(a.Data, b.Data):
		what = "usage"
	}
	return fmt.Errorf("%w: %s: at seq %d the primary has %s at %s, the replica %s at %s (the %s differs)",
		ErrDiverged, key, a.Seq, a.Kind, a.Time.Format(time.RFC3339Nano), b.Kind, b.Time.Format(time.RFC3339Nano), what)
}

// copy imports into dst every entry of key that src holds after from, the
// last seq dst holds, one batch at a time in seq order, and calls done
// with dst's new position after each batch. It returns the last position
// dst confirmed and the number of entries copied. For a session src does
// not hold (any more) it returns errGone.
func (c copier) copy(ctx context.Context, key recall.Key, from int64, done func(last int64)) (int64, int, error) {
	copied := 0
	for {
		es, err := c.src.Entries(ctx, key, from, c.batch)
		if errors.Is(err, recall.ErrNotFound) {
			return from, copied, errGone
		}
		if err != nil {
			return from, copied, fmt.Errorf("mirror: read %s from primary: %w", key, err)
		}
		if len(es) == 0 {
			return from, copied, nil
		}
		if es[0].Seq != from+1 && (from > 0 || es[0].Kind != recall.KindCompaction) {
			// Entries skips nothing in a well-formed log, so the entries
			// after from are gone: a purge rewrote the log from a
			// compaction entry. A replica without the session takes the
			// purged log as it is (Import starts a new session at such
			// an entry); one that holds part of the dropped entries
			// cannot be continued from it.
			return from, copied, fmt.Errorf("%w: %s: the replica is at seq %d but the primary's log continues at seq %d (%s; purged?)",
				ErrDiverged, key, from, es[0].Seq, es[0].Kind)
		}
		want := es[len(es)-1].Seq
		last, err := c.importBatch(ctx, key, moveOrigins(es, c.origins))
		if err != nil {
			return from, copied, fromReplica(fmt.Errorf("mirror: import %s seq %d-%d into replica: %w", key, es[0].Seq, want, err))
		}
		if last < want {
			return from, copied, fromReplica(fmt.Errorf("mirror: import %s into replica: it reports seq %d after importing up to %d: %w", key, last, want, recall.ErrConflict))
		}
		copied += len(es)
		// The replica may report more than was sent (another process
		// replicated further); the position is what this copy knows.
		from = want
		if done != nil {
			done(from)
		}
		if len(es) < c.batch {
			return from, copied, nil
		}
	}
}

// sync brings key up to date in dst from the believed position guess: it
// resets the position from dst when trusted is false, and once more after
// a conflict (dst lost or gained entries since the position was known),
// then copies. It returns dst's position and the entries copied.
func (c copier) sync(ctx context.Context, key recall.Key, guess int64, trusted bool, done func(last int64)) (int64, int, error) {
	pos := guess
	total := 0
	for attempt := 0; ; attempt++ {
		if !trusted {
			p, err := c.position(ctx, key, pos)
			if err != nil {
				return pos, total, err
			}
			pos = p
			if done != nil {
				done(pos)
			}
		}
		last, n, err := c.copy(ctx, key, pos, done)
		total += n
		if err == nil || attempt > 0 || !errors.Is(err, recall.ErrConflict) || !isReplicaErr(err) {
			return last, total, err
		}
		pos, trusted = last, false
	}
}

func isReplicaErr(err error) bool {
	var re *replicaError
	return errors.As(err, &re)
}
