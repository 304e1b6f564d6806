package recall

import "fmt"

// Guard is a condition on a session that Append checks atomically with its
// write: under the same lock, transaction or script that assigns the
// batch's seqs. When the condition does not hold, Append writes nothing
// and returns an error wrapping ErrNotFound or ErrConflict.
//
// The zero Guard checks nothing: Append then creates a missing session.
// The constructors below name the useful conditions:
//
//	store.Append(ctx, key, recall.Guard{}, items...)          // create or extend
//	store.Append(ctx, key, recall.IfExists(), title)          // never bring a removed session back
//	store.Append(ctx, key, recall.IfNew(), created)           // create, or ErrConflict
//	store.Append(ctx, key, recall.IfLastSeq(12), compaction)  // compare-and-swap
//
// A store checks a Guard by calling [Guard.Check] with what it holds.
type Guard struct {
	// Exists requires the session to exist: ErrNotFound otherwise.
	Exists bool `json:"exists,omitempty"`
	// New requires the session not to exist: ErrConflict otherwise.
	New bool `json:"new,omitempty"`
	// CheckSeq requires the session's LastSeq to equal LastSeq (0 for a
	// session that does not exist): ErrConflict otherwise.
	CheckSeq bool  `json:"check_seq,omitempty"`
	LastSeq  int64 `json:"last_seq,omitempty"`
}

// IfExists returns the guard that requires the session to exist. The
// lifecycle helpers (SetTitle, ChangeMeta, StoreSession.Clear) use it, so a
// session removed by another process is never brought back holding only
// their entry.
func IfExists() Guard { return Guard{Exists: true} }

// IfNew returns the guard that requires the session not to exist yet.
func IfNew() Guard { return Guard{New: true} }

// IfLastSeq returns the guard that requires the session's LastSeq to be
// last: nothing was appended since the caller read it. It implies that
// the session exists when last > 0.
func IfLastSeq(last int64) Guard { return Guard{CheckSeq: true, LastSeq: last} }

// IsZero reports whether g checks nothing.
func (g Guard) IsZero() bool { return g == Guard{} }

// Check reports whether a session in the given state passes g: exists says
// whether the session exists, last is its LastSeq (0 when it does not).
// The error wraps ErrNotFound (Exists failed) or ErrConflict (New or
// CheckSeq failed).
func (g Guard) Check(exists bool, last int64) error {
	switch {
	case g.Exists && !exists:
		return fmt.Errorf("%w: the session does not exist", ErrNotFound)
	case g.New && exists:
		return fmt.Errorf("%w: the session exists", ErrConflict)
	case g.CheckSeq && last != g.LastSeq:
		if !exists && g.LastSeq > 0 {
			return fmt.Errorf("%w: the session does not exist (expected it at seq %d)", ErrNotFound, g.LastSeq)
		}
		return fmt.Errorf("%w: the log is at seq %d, expected %d", ErrConflict, last, g.LastSeq)
	}
	return nil
}
