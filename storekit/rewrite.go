package storekit

import (
	"context"
	"errors"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/payload"
)

// Redaction is the payload of a recall.KindRedaction entry, which a
// rewrite appends in the same atomic step (see Rewriter): the entries it
// rewrote, each with the findings removed from it (their rule and where
// the marker stands), never the secret itself. Its Seqs method lists the
// seqs of those entries.
type Redaction = payload.Redaction

// RedactedEntry is one entry a redaction rewrote.
type RedactedEntry = payload.RedactedEntry

// Finding is one secret removed from an entry: the rule that found it
// and At, the byte offset of its marker ([REDACTED:rule]) in the
// rewritten entry's data.
type Finding = payload.Finding

// Rewriter is an optional ability of a recall.Store: it replaces the
// bytes of some entries of a log in one atomic step, keeping their seqs
// and kinds, and appends entries after them in the same step. It is how a
// redaction removes secrets from history (recall redact); nothing else
// rewrites a log but a purge.
//
// If a recall.Store does not implement Rewriter, its history cannot be
// rewritten: callers report recall.ErrUnsupported (recall redact does, and
// the mirror reports a replica without it in its status). The file store,
// the memory store, SQLite, PostgreSQL and Redis implement it.
type Rewriter interface {
	// Rewrite applies rw to key's log atomically: after a crash at any
	// instant the session is exactly as before or exactly as after,
	// never a mix. It is guarded by rw.IfLastSeq, checked under the same
	// lock or transaction as the write, so an entry appended since the
	// caller read the log fails the rewrite (recall.ErrConflict) rather
	// than being lost. A session that does not exist is
	// recall.ErrNotFound; a replacement that names no entry of the log,
	// or one of another kind, is recall.ErrConflict. Every index the
	// store keeps (its list, its search) is rewritten with the log, so
	// no copy of the old bytes stays behind. It returns the session's
	// new metadata.
	Rewrite(ctx context.Context, key recall.Key, rw Rewrite) (recall.Meta, error)
}

// Rewrite is what a Rewriter does to one log.
type Rewrite struct {
	// IfLastSeq is the session's LastSeq the caller read.
	IfLastSeq int64
	// Replace holds the new entries: each replaces the entry of its Seq,
	// which must have the same Kind. Its Time and Usage replace the old
	// ones too (a redaction keeps them).
	Replace []recall.Entry
	// Append holds entries appended after the log's last in the same
	// step, numbered on from IfLastSeq; a zero Time is the store's now.
	Append []recall.Entry
}

// ErrNoEntry is wrapped by RewriteLog's error for a replacement whose seq
// names no entry of the log, or an entry of another kind.
var ErrNoEntry = errors.New("no such entry")

// RewriteLog returns the log rw makes of entries, a session's whole log
// in seq order whose LastSeq is last, after checking rw against it (the
// guard, the seqs and kinds replaced, every new entry's payload with
// max). The Append entries get their seqs and, when zero, the time Now.
// Stores that implement Rewriter use it and write the result in one
// atomic step; the entries given are not changed.
func RewriteLog(entries []recall.Entry, last int64, rw Rewrite, max int) ([]recall.Entry, error) {
	if err := recall.IfLastSeq(rw.IfLastSeq).Check(true, last); err != nil {
		return nil, err
	}
	if err := ValidateEntries(rw.Replace, max); err != nil {
		return nil, err
	}
	if err := ValidateEntries(rw.Append, max); err != nil {
		return nil, err
	}
	at := make(map[int64]int, len(entries))
	for i, e := range entries {
		at[e.Seq] = i
	}
	out := make([]recall.Entry, len(entries), len(entries)+len(rw.Append))
	copy(out, entries)
	for _, r := range rw.Replace {
		i, ok := at[r.Seq]
		if !ok || entries[i].Kind != r.Kind {
			return nil, fmt.Errorf("%w: %w: seq %d (%s)", recall.ErrConflict, ErrNoEntry, r.Seq, r.Kind)
		}
		out[i] = r.Clone()
	}
	t := Now()
	for i, e := range rw.Append {
		e = e.Clone()
		e.Seq = last + 1 + int64(i)
		if e.Time.IsZero() {
			e.Time = t
		}
		out = append(out, e)
	}
	return out, nil
}
