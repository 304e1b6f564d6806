package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/recallkit/recall"
)

// ErrNotFlushed reports that Flush, Shutdown or Close ended with sessions
// the replica does not hold in full yet. Nothing is lost: the primary has
// every entry, and the next mirror over the same primary and StateDir
// replicates them.
var ErrNotFlushed = errors.New("mirror: replica not up to date")

// Flush waits until the replica holds everything written through the
// mirror so far, and everything the start-up scan found behind, or until
// ctx ends. While the replica is down nothing counts as flushed: once it
// answers again, every session is checked against it (it may have come
// back empty) before Flush returns nil. Flush returns early, with
// ErrNotFlushed, when nothing can make progress before ctx's deadline (the
// next retry is later). Sessions that cannot be replicated (ErrDiverged, an
// entry the replica refuses) also make it return ErrNotFlushed.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.flush(ctx, -1)
}

// flush waits for the backlog to drain. With giveUp >= 0 it also returns
// once the replica is down and has failed more than giveUp times in all,
// that is, after a failed attempt made since the caller read the count.
func (s *Store) flush(ctx context.Context, giveUp int) error {
	deadline, hasDeadline := ctx.Deadline()
	for {
		s.mu.Lock()
		pending, stuck, earliest := s.backlogLocked()
		changed := s.changed
		lastErr := s.lastErr
		down := s.outage > 0 && giveUp >= 0 && s.downFailures > giveUp
		s.mu.Unlock()
		if pending == 0 {
			if stuck > 0 {
				return fmt.Errorf("%w: %d sessions cannot be replicated (%s)", ErrNotFlushed, stuck, lastErr)
			}
			return nil
		}
		if down {
			return fmt.Errorf("%w: %d sessions behind, replica down (%s)", ErrNotFlushed, pending, lastErr)
		}
		if hasDeadline && earliest.After(deadline) {
			return fmt.Errorf("%w: %d sessions behind, replica unavailable until after the deadline (%s)", ErrNotFlushed, pending, lastErr)
		}
		// Progress is broadcast on changed; the timer only re-checks the
		// deadline once a retry is due.
		var (
			due   <-chan time.Time
			timer *time.Timer
		)
		if wait := time.Until(earliest); wait > 0 {
			timer = time.NewTimer(wait)
			due = timer.C
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %d sessions behind: %w", ErrNotFlushed, pending, ctx.Err())
		case <-changed:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// backlogLocked counts the sessions still owed to the replica (pending)
// and those that cannot be replicated (stuck), and returns the earliest
// time any pending one can make progress.
func (s *Store) backlogLocked() (pending, stuck int, earliest time.Time) {
	now := time.Now()
	earliest = now.Add(time.Hour)
	gate := s.gate
	if s.closed {
		gate = time.Time{} // a shutdown ignores the backoff and the delay
	}
	if s.scanning {
		pending++
		earliest = now
	}
	if s.outage > 0 {
		// Until the replica answers again, and every session is checked
		// against it, nothing is known to be replicated.
		pending++
		earliest = minTime(earliest, maxTime(now, gate))
	}
	running := 0
	for _, st := range s.sessions {
		if st.running {
			running++
		}
		switch {
		case st.stuck:
			stuck++
		case st.running:
			pending++
			earliest = now
		case st.queued:
			pending++
			due := st.due
			if s.closed {
				due = time.Time{}
			}
			earliest = minTime(earliest, maxTime(maxTime(now, gate), due))
		case st.waiting:
			pending++
			earliest = minTime(earliest, st.retryAt)
		case st.dirty || st.remove:
			pending++ // about to be queued
			earliest = now
		}
	}
	if s.copying > running {
		// Copies of sessions removed while they ran: they end at their
		// next read of the primary.
		pending += s.copying - running
		earliest = now
	}
	return pending, stuck, earliest
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Shutdown is the graceful Close(ctx): it refuses new calls, flushes what it
// can to the replica within ctx's deadline, stops replication, saves the
// cursor file and closes the replica and the primary, which the mirror
// owns. The flush does not wait out the retry backoff: a replica that is
// down gets one more attempt at once, and when that fails too Shutdown
// stops waiting, so that a process exits promptly while its replica is
// unreachable. What is not flushed stays in the primary and is replicated
// by the next mirror over it; the error then wraps ErrNotFlushed, which
// callers may treat as a warning. Shutdown returns ErrClosed when called
// again.
func (s *Store) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return recall.ErrClosed
	}
	s.closed = true
	giveUp := s.downFailures
	s.signal(s.wake) // a worker waiting out the backoff or delay goes now
	s.mu.Unlock()

	flushErr := s.flush(ctx, giveUp)
	s.cancel()
	s.wg.Wait()
	var saveErr error
	if s.state != nil {
		saveErr = s.save()
	}
	var errs []error
	if err := s.replica.Close(); err != nil {
		errs = append(errs, fmt.Errorf("mirror: close replica: %w", err))
	}
	if err := s.primary.Close(); err != nil {
		errs = append(errs, fmt.Errorf("mirror: close primary: %w", err))
	}
	return errors.Join(append([]error{flushErr, saveErr}, errs...)...)
}

// Close implements recall.Store: Shutdown with Options.CloseTimeout.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CloseTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}

// requestSaveLocked asks the saver to write the cursor file soon.
func (s *Store) requestSaveLocked() {
	if s.state != nil {
		s.signal(s.saveReq)
	}
}

// saver writes the cursor file at most once per SaveInterval while
// replication makes progress. Shutdown writes it a last time.
func (s *Store) saver() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.saveReq:
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.opts.SaveInterval):
		}
		if err := s.save(); err != nil {
			s.mu.Lock()
			s.lastErr, s.lastErrAt = err.Error(), time.Now()
			s.mu.Unlock()
		}
	}
}

// save writes the cursor file: this mirror's positions, merged over the
// file on disk, so that sessions another process recorded and this one
// does not track are kept. A position this mirror holds wins even when it
// is lower (its replica lost data): a cursor that is behind costs a replay,
// one that is ahead would skip entries.
func (s *Store) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	doc := stateDoc{Replica: s.opts.ReplicaName, Saved: time.Now().UTC(), LastError: s.lastErr, LastErrorAt: s.lastErrAt}
	mine := make(map[recall.Key]savedSession, len(s.sessions))
	for k, st := range s.sessions {
		if !st.verified && st.replicated == 0 && st.lastErr == "" && !st.doubt && !st.remove {
			continue // position unknown, and nothing to report
		}
		mine[k] = savedSession{Key: k, Seq: st.replicated, Recheck: st.doubt, Remove: st.remove, LastError: st.lastErr, LastErrorAt: st.lastErrAt}
	}
	gone := maps.Clone(s.forgotten)
	s.mu.Unlock()

	_, disk, _ := s.state.read() // unreadable: it is rebuilt from this mirror's view
	for k := range gone {
		delete(disk, k)
	}
	maps.Copy(disk, mine)
	for _, ss := range disk {
		doc.Sessions = append(doc.Sessions, ss)
	}
	sortSaved(doc.Sessions)
	if err := s.state.write(doc); err != nil {
		return err
	}
	s.mu.Lock()
	for k := range gone {
		if s.forgotten[k] {
			delete(s.forgotten, k)
		}
	}
	s.mu.Unlock()
	return nil
}
