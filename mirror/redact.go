package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

var _ storekit.Rewriter = (*Store)(nil)

// Rewrite implements storekit.Rewriter when the primary does, and returns
// ErrUnsupported when it does not. It rewrites the primary and queues
// the session: a redaction (a recall.KindRedaction entry appended by the
// rewrite) is replicated by rewriting the replica's copies of the entries
// it lists with the primary's new bytes before the redaction entry is
// appended there (see copier.importBatch).
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	if err := s.begin(ctx); err != nil {
		return recall.Meta{}, err
	}
	p, ok := recall.As[storekit.Rewriter](s.primary)
	if !ok {
		return recall.Meta{}, fmt.Errorf("mirror: rewrite %s: the primary store cannot rewrite: %w", key, recall.ErrUnsupported)
	}
	m, err := p.Rewrite(ctx, key, rw)
	if err == nil {
		s.mark(key, m.LastSeq)
	}
	return m, err
}

// importBatch imports es, entries of key in seq order, into dst (under
// c.dstKey(key)) and returns dst's last seq. Each redaction entry among
// them is replicated by redact, the entries before it imported first.
func (c copier) importBatch(ctx context.Context, key recall.Key, es []recall.Entry) (int64, error) {
	var last int64
	start := 0
	put := func(batch []recall.Entry) error {
		if len(batch) == 0 {
			return nil
		}
		cctx, cancel := c.dstCtx(ctx)
		defer cancel()
		var err error
		last, err = c.dst.Import(cctx, c.dstKey(key), batch...)
		return err
	}
	for i, e := range es {
		if e.Kind != recall.KindRedaction {
			continue
		}
		if err := put(es[start:i]); err != nil {
			return last, err
		}
		start = i + 1
		done, err := c.redact(ctx, key, e)
		if err != nil {
			return last, err
		}
		if !done {
			start = i // nothing to rewrite: imported as it is
		} else {
			last = e.Seq
		}
	}
	return last, put(es[start:])
}

// redact replicates the redaction entry note: the entries it lists whose
// bytes on dst differ from src's (dst received them before the rewrite)
// are rewritten on dst with src's bytes, and note is appended, in one
// storekit.Rewriter call. It reports false, having written nothing, when
// no entry differs (dst received them rewritten already): note is then
// imported like any entry. A dst without the ability is an error that
// says the replica keeps what the redaction removed (ErrUnsupported, so
// the session stops and Status reports it).
func (c copier) redact(ctx context.Context, key recall.Key, note recall.Entry) (bool, error) {
	var r storekit.Redaction
	if json.Unmarshal(note.Data, &r) != nil {
		return false, nil
	}
	var replace []recall.Entry
	for _, seq := range r.Seqs() {
		mine, err := c.src.Entries(ctx, key, seq-1, 1)
		if err != nil {
			return false, fmt.Errorf("mirror: read %s at seq %d from primary: %w", key, seq, err)
		}
		if len(mine) == 0 || mine[0].Seq != seq {
			continue // purged since
		}
		cctx, cancel := c.dstCtx(ctx)
		theirs, err := c.dst.Entries(cctx, c.dstKey(key), seq-1, 1)
		cancel()
		if err != nil {
			return false, fromReplica(fmt.Errorf("mirror: read %s at seq %d from replica: %w", key, seq, err))
		}
		if len(theirs) == 0 || theirs[0].Seq != seq || sameEntry(mine[0], theirs[0]) {
			continue
		}
		replace = append(replace, mine[0])
	}
	if len(replace) == 0 {
		return false, nil
	}
	rw, ok := recall.As[storekit.Rewriter](c.dst)
	if !ok {
		return false, fromReplica(fmt.Errorf("mirror: %s: the replica cannot rewrite its logs, so the redaction at seq %d is not replicated and the replica still holds what it removed: %w",
			key, note.Seq, recall.ErrUnsupported))
	}
	cctx, cancel := c.dstCtx(ctx)
	defer cancel()
	if _, err := rw.Rewrite(cctx, c.dstKey(key), storekit.Rewrite{IfLastSeq: note.Seq - 1, Replace: replace, Append: []recall.Entry{note}}); err != nil {
		return false, fromReplica(fmt.Errorf("mirror: redact %s on replica: %w", key, err))
	}
	return true, nil
}

// redactedLater reports whether src's log of key holds, after seq, a
// redaction entry that lists seq: the replica's copy of that entry then
// differs from the primary's until the redaction is replicated, and is no
// sign of divergence.
func (c copier) redactedLater(ctx context.Context, key recall.Key, seq int64) (bool, error) {
	for after := seq; ; {
		es, err := c.src.Entries(ctx, key, after, c.batch)
		if err != nil || len(es) == 0 {
			return false, err
		}
		for _, e := range es {
			var r storekit.Redaction
			if e.Kind == recall.KindRedaction && json.Unmarshal(e.Data, &r) == nil && slices.Contains(r.Seqs(), seq) {
				return true, nil
			}
		}
		after = es[len(es)-1].Seq
	}
}

// divergedUnlessRedacted is diverged(key, a, b), or nil when the two
// differ only because the primary redacted a since (same kind and time).
func (c copier) divergedUnlessRedacted(ctx context.Context, key recall.Key, a, b recall.Entry) error {
	if a.Kind == b.Kind && a.Time.Equal(b.Time) {
		later, err := c.redactedLater(ctx, key, a.Seq)
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return fmt.Errorf("mirror: read %s from primary: %w", key, err)
		}
		if later {
			return nil
		}
	}
	return diverged(key, a, b)
}
