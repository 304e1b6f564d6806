package mirror

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// SessionStatus is the replication state of one session.
type SessionStatus struct {
	Key recall.Key `json:"key"`
	// PrimarySeq is the last seq the primary holds.
	PrimarySeq int64 `json:"primary_seq"`
	// ReplicatedSeq is the last seq the replica confirmed: the cursor.
	ReplicatedSeq int64 `json:"replicated_seq"`
	// Lag is the number of entries the replica lacks.
	Lag int64 `json:"lag"`
	// Pending: the session is queued, being copied or waiting to retry;
	// in ReadStatus, a check against the replica is owed (an outage ended
	// before the mirror that wrote the cursor file checked the session).
	Pending bool `json:"pending,omitempty"`
	// Stuck: replication stopped on an error retrying cannot fix
	// (ErrDiverged, an entry the replica refuses); the next local write to
	// the session tries again.
	Stuck bool `json:"stuck,omitempty"`
	// Removing: a removal from the replica is owed (PropagateDeletes).
	Removing bool `json:"removing,omitempty"`
	// Verified: ReplicatedSeq was confirmed by the replica in this
	// process; otherwise it comes from the cursor file.
	Verified bool `json:"verified"`
	// Attempts counts the failed attempts since the last success.
	Attempts int `json:"attempts,omitempty"`
	// NextRetry is when a failed session is tried again.
	NextRetry time.Time `json:"next_retry,omitzero"`
	// LastError is the last replication error and when it happened; it
	// stays after a later success, as history.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// Summary is the replication state of the whole mirror.
type Summary struct {
	// Replica is Options.ReplicaName.
	Replica string `json:"replica,omitempty"`
	// Sessions is the number of sessions tracked.
	Sessions int `json:"sessions"`
	// Behind counts sessions with a lag or a pending removal.
	Behind int `json:"behind"`
	// Lag is the total number of entries the replica lacks.
	Lag int64 `json:"lag"`
	// Stuck counts sessions that replication gave up on for now.
	Stuck int `json:"stuck"`
	// Scanning: the start-up scan of the primary has not finished.
	Scanning bool `json:"scanning,omitempty"`
	// ScanError is why the start-up scan failed, if it did.
	ScanError string `json:"scan_error,omitempty"`
	// ReplicaDown: the last attempt to reach the replica failed. DownSince
	// is when the outage began and NextAttempt when it is probed next.
	ReplicaDown bool      `json:"replica_down,omitempty"`
	DownSince   time.Time `json:"down_since,omitzero"`
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// LastReplicated is when the replica last confirmed a batch.
	LastReplicated time.Time `json:"last_replicated,omitzero"`
	// LastError is the last error of any session, or of the cursor file.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Saved is when the cursor file was written (ReadStatus only).
	Saved time.Time `json:"saved,omitzero"`
	// Unchecked counts the sessions whose position the cursor file holds
	// in doubt: the mirror that wrote it saw an outage end and had not
	// checked them against the replica yet (ReadStatus only). The next
	// mirror checks them first.
	Unchecked int `json:"unchecked,omitempty"`
}

// Status reports the replication state of every session the mirror tracks,
// sorted by key. PrimarySeq is read from the primary for sessions with
// replication pending, so the lag of a pop (whose seq the mirror does not
// see) is exact too.
func (s *Store) Status(ctx context.Context) []SessionStatus {
	s.mu.Lock()
	out := make([]SessionStatus, 0, len(s.sessions))
	for k, st := range s.sessions {
		out = append(out, s.statusLocked(k, st))
	}
	s.mu.Unlock()
	for i := range out {
		ss := &out[i]
		if !ss.Pending && !ss.Stuck {
			continue
		}
		if m, err := s.primary.Stat(ctx, ss.Key); err == nil && m.LastSeq > ss.PrimarySeq {
			ss.PrimarySeq = m.LastSeq
		}
		ss.Lag = max(0, ss.PrimarySeq-ss.ReplicatedSeq)
	}
	sortStatus(out)
	return out
}

func (s *Store) statusLocked(k recall.Key, st *session) SessionStatus {
	ss := SessionStatus{
		Key:           k,
		PrimarySeq:    max(st.head, st.replicated),
		ReplicatedSeq: st.replicated,
		Pending:       st.queued || st.running || st.waiting || st.dirty,
		Stuck:         st.stuck,
		Removing:      st.remove,
		Verified:      st.verified,
		Attempts:      st.attempts,
		LastError:     st.lastErr,
		LastErrorAt:   st.lastErrAt,
	}
	if st.stuck {
		ss.Pending = false
	}
	if st.waiting {
		ss.NextRetry = st.retryAt
	}
	ss.Lag = ss.PrimarySeq - ss.ReplicatedSeq
	return ss
}

// Summary reports the replication state of the whole mirror.
func (s *Store) Summary(ctx context.Context) Summary {
	sessions := s.Status(ctx)
	s.mu.Lock()
	sum := Summary{
		Replica:        s.opts.ReplicaName,
		Scanning:       s.scanning,
		ScanError:      s.scanErr,
		ReplicaDown:    s.outage > 0,
		DownSince:      s.downSince,
		LastReplicated: s.lastSync,
		LastError:      s.lastErr,
		LastErrorAt:    s.lastErrAt,
	}
	if s.outage > 0 {
		sum.NextAttempt = s.gate
	}
	s.mu.Unlock()
	summarize(&sum, sessions)
	return sum
}

func summarize(sum *Summary, sessions []SessionStatus) {
	sum.Sessions = len(sessions)
	for _, ss := range sessions {
		if ss.Lag > 0 || ss.Removing {
			sum.Behind++
		}
		sum.Lag += ss.Lag
		if ss.Stuck {
			sum.Stuck++
		}
		if ss.LastErrorAt.After(sum.LastErrorAt) {
			sum.LastError, sum.LastErrorAt = ss.LastError, ss.LastErrorAt
		}
	}
}

// ReadStatus reports replication state without a running mirror, for
// `recall mirror status`: it compares every session of primary with the
// positions in the cursor file of stateDir (see Options.StateDir). A session
// the file does not know counts as not replicated. The positions are as of
// the file's last save (Summary.Saved); they may be behind the replica's,
// never ahead unless the replica lost data. Sync with DryRun asks the
// replica itself.
func ReadStatus(ctx context.Context, primary recall.Store, stateDir string) (Summary, []SessionStatus, error) {
	f := &stateFile{dir: stateDir}
	doc, saved, err := f.read()
	corrupt := ""
	switch {
	case errors.Is(err, recall.ErrCorrupt):
		// The file is a cache: report it, and every session as behind.
		corrupt = err.Error()
	case err != nil:
		return Summary{}, nil, err
	}
	var out []SessionStatus
	err = eachSession(ctx, primary, "", func(m recall.Meta) error {
		ss := saved[m.Key]
		out = append(out, SessionStatus{
			Key:           m.Key,
			PrimarySeq:    m.LastSeq,
			ReplicatedSeq: ss.Seq,
			Lag:           max(0, m.LastSeq-ss.Seq),
			Pending:       ss.Recheck,
			Removing:      ss.Remove,
			LastError:     ss.LastError,
			LastErrorAt:   ss.LastErrorAt,
		})
		return nil
	})
	if err != nil {
		return Summary{}, nil, err
	}
	sortStatus(out)
	sum := Summary{Replica: doc.Replica, Saved: doc.Saved, LastError: doc.LastError, LastErrorAt: doc.LastErrorAt}
	summarize(&sum, out)
	for _, ss := range out {
		if ss.Pending {
			sum.Unchecked++
		}
	}
	if corrupt != "" {
		sum.LastError = corrupt
	}
	return sum, out, nil
}

func sortStatus(out []SessionStatus) {
	slices.SortFunc(out, func(a, b SessionStatus) int { return compareKeys(a.Key, b.Key) })
}

func sortSaved(out []savedSession) {
	slices.SortFunc(out, func(a, b savedSession) int { return compareKeys(a.Key, b.Key) })
}

func compareKeys(a, b recall.Key) int {
	if c := strings.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	return strings.Compare(a.Subpath, b.Subpath)
}
