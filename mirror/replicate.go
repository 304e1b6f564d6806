package mirror

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/recallkit/recall"
)

// This file is the replication machinery: the write path marks a session
// dirty (mark, forget), workers take dirty sessions from a FIFO queue and
// copy their logs (worker, replicate), and failures back off (retryLater,
// the replica-wide gate).

// sessionLocked returns key's state, creating it; s.mu is held.
func (s *Store) sessionLocked(key recall.Key) *session {
	st := s.sessions[key]
	if st == nil {
		st = &session{}
		s.sessions[key] = st
		delete(s.forgotten, key)
	}
	return st
}

// mark records that the primary holds key up to head (0: unknown) and
// queues the session. It is all the write path does for replication: no
// I/O, one uncontended lock. A server's reserved projects are never
// replicated (see Reserved).
func (s *Store) mark(key recall.Key, head int64) {
	if Reserved(key.Project) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessionLocked(key)
	if head > st.head {
		st.head = head
	}
	st.dirty = true
	st.stuck = false // a new write is a reason to try again
	s.enqueueLocked(key, st, false)
}

// forget drops key (and, for a main session, its subagent records) from
// replication after a local delete, or queues their removal from the
// replica when deletes propagate.
func (s *Store) forget(key recall.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, st := range s.sessions {
		if k != key && !(key.IsMain() && k.Parent() == key) {
			continue
		}
		if !s.opts.PropagateDeletes {
			delete(s.sessions, k)
			s.forgotten[k] = true
			continue
		}
		// The local session is gone: nothing of it is owed but its removal.
		st.remove, st.dirty, st.stuck, st.head = true, false, false, 0
		s.enqueueLocked(k, st, false)
	}
	if s.opts.PropagateDeletes && s.sessions[key] == nil {
		// The mirror never saw the session (written before it started and
		// not reached by the scan yet): the replica may still hold it.
		st := s.sessionLocked(key)
		st.remove = true
		s.enqueueLocked(key, st, false)
	}
	if s.opts.PropagateDeletes {
		s.requestSaveLocked() // the removal is owed across a restart too
	}
	s.broadcastLocked()
}

// enqueueLocked puts a session on the queue unless it is already queued,
// being replicated (the worker looks at dirty again when it finishes) or
// waiting for a retry. front puts it first, to keep the order of a backlog
// that failed.
func (s *Store) enqueueLocked(key recall.Key, st *session, front bool) {
	if st.queued || st.running || st.waiting || s.closedDone() {
		return
	}
	st.queued = true
	if front {
		st.due = time.Time{}
		s.queue = append([]recall.Key{key}, s.queue...)
	} else {
		st.due = time.Now().Add(s.opts.Delay)
		s.queue = append(s.queue, key)
	}
	s.signal(s.wake)
}

// closedDone reports whether the workers have stopped.
func (s *Store) closedDone() bool { return s.ctx.Err() != nil }

func (s *Store) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// broadcastLocked wakes everyone waiting in Flush.
func (s *Store) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// probing stands for the probe of a down replica while no session is
// queued (see next and probe), in Store.prober.
var probing = &session{}

// probeKey is the key a probe asks the replica about; it need not exist.
var probeKey = recall.Key{Project: "recall-mirror-probe", Session: "probe"}

// job is what next hands a worker: a session to replicate, or a probe.
type job struct {
	key   recall.Key
	st    *session
	probe bool
}

// next takes the first runnable session off the queue. When there is none
// it returns how long to wait before asking again (0: until woken). While
// the replica is down and nothing is queued, it hands out a probe when the
// backoff allows: the end of an outage must be seen even when no session
// is owed anything, since it calls for a recheck of every session.
func (s *Store) next() (job, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedDone() {
		return job{}, 0 // stopping: the worker sees ctx done
	}
	for len(s.queue) > 0 {
		key := s.queue[0]
		st := s.sessions[key]
		if st == nil || !st.queued {
			s.queue = s.queue[1:]
			continue // forgotten while queued
		}
		// Due times grow along the queue: when the first is not due, none
		// is. A shutdown does not wait for them.
		if wait := time.Until(st.due); wait > 0 && !s.closed {
			return job{}, wait
		}
		// A shutdown tries the replica once more at once, whatever the
		// backoff, and gives up if that fails (see Shutdown).
		if wait := time.Until(s.gate); wait > 0 && !s.closed {
			return job{}, wait
		}
		if s.outage > 0 {
			// While the replica is down one session probes it; the rest
			// wait for its answer rather than fail in parallel.
			if s.prober != nil {
				return job{}, 0
			}
		}
		s.queue = s.queue[1:]
		if s.outage > 0 {
			s.prober = st
		}
		st.queued, st.running = false, true
		s.copying++
		if len(s.queue) > 0 {
			s.signal(s.wake) // another worker can take the next one
		}
		return job{key: key, st: st}, 0
	}
	// Nothing live is queued (the loop above also drops sessions forgotten
	// while queued): while the replica is down, a bare probe is what
	// notices its return.
	if s.outage > 0 && s.prober == nil {
		if wait := time.Until(s.gate); wait > 0 && !s.closed {
			return job{}, wait
		}
		s.prober = probing
		return job{probe: true}, 0
	}
	return job{}, 0
}

// worker replicates queued sessions until the mirror shuts down.
func (s *Store) worker() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		j, wait := s.next()
		switch {
		case j.probe:
			s.probe()
			continue
		case j.st != nil:
			s.replicate(j.key, j.st)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// replicate brings one session's replica up to date: it removes it first
// when a removal is owed, then copies what the replica lacks.
func (s *Store) replicate(key recall.Key, st *session) {
	s.mu.Lock()
	st.dirty = false
	remove, trusted, from := st.remove, st.verified, st.replicated
	epoch := st.epoch
	s.mu.Unlock()

	c := copier{src: s.primary, dst: s.replica, batch: s.opts.BatchSize, timeout: s.opts.CallTimeout}
	var err error
	answered := false // the replica answered at least one call
	if remove {
		err = c.remove(s.ctx, key)
		if err == nil {
			answered = true
			s.removedOnReplica(key, st, epoch)
			from, trusted = 0, true
		}
	}
	if err == nil {
		progress := func(last int64) {
			answered = true
			s.copiedThrough(st, epoch, last)
		}
		_, _, err = c.sync(s.ctx, key, from, trusted, progress)
	}
	s.finishReplicate(key, st, err, answered)
}

// removedOnReplica records that the replica's copy of key is removed, as
// a removal owed asked: the replica holds nothing of it, unless the
// session was reset since epoch; a main session's subagent records are
// checked again.
func (s *Store) removedOnReplica(key recall.Key, st *session, epoch int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.remove = false
	if st.epoch == epoch {
		st.replicated, st.verified, st.doubt = 0, true, false
	}
	if key.IsMain() {
		// Removing a main session on the replica removed its
		// subagent records too, whatever copies of them ran
		// meanwhile: check them again.
		for k, sub := range s.sessions {
			if k.Parent() == key && k != key {
				s.invalidateLocked(k, sub)
			}
		}
	}
	s.requestSaveLocked()
}

// copiedThrough records that the replica holds st's log through last, a
// copy's progress, unless the session was reset since epoch, and wakes
// those waiting for the replica.
func (s *Store) copiedThrough(st *session, epoch int, last int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.epoch != epoch {
		return // reset meanwhile: this copy's position is not to be trusted
	}
	st.replicated, st.verified, st.doubt = last, true, false
	if last > st.head {
		st.head = last
	}
	s.lastSync = time.Now()
	s.requestSaveLocked()
	s.broadcastLocked()
}

// finishReplicate ends a replicate of key that returned err, answered
// telling whether the replica answered a call: it records the outcome
// and decides what comes next for the session (done, forgotten, queued
// again, first or later, or held back while the replica is down).
func (s *Store) finishReplicate(key recall.Key, st *session, err error, answered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.broadcastLocked()
	st.running = false
	s.copying--
	if s.prober == st {
		s.prober = nil
	}
	down := err != nil && s.ctx.Err() == nil && isReplicaErr(err) && !errors.Is(err, recall.ErrConflict) && !refused(err)
	if answered && !down {
		s.replicaAnsweredLocked()
	}
	if s.sessions[key] != st {
		return // forgotten while it ran
	}
	switch {
	case err != nil && s.ctx.Err() != nil:
		// Shutting down: the entries stay owed; the next start resumes.
		st.dirty = true
	case errors.Is(err, errGone) && !st.dirty && !st.remove:
		// Removed locally after it was queued: nothing left to track.
		delete(s.sessions, key)
		s.forgotten[key] = true
		s.requestSaveLocked()
	case err == nil || errors.Is(err, errGone):
		st.attempts = 0
		if st.dirty || st.remove {
			s.enqueueLocked(key, st, false)
		}
	case errors.Is(err, errHeadless):
		// The replica lacks the start of the log: remove its copy and
		// copy the session whole, first thing.
		st.remove, st.dirty, st.verified = true, true, false
		st.attempts = 0
		s.enqueueLocked(key, st, true)
	case errors.Is(err, ErrDiverged) || refused(err):
		st.dirty, st.stuck, st.verified = true, true, false
		s.recordLocked(st, err)
	case down:
		// The replica is down or unreachable: hold every session back
		// until the gate opens, and try this one first then.
		st.dirty, st.verified = true, false
		s.recordLocked(st, err)
		s.replicaFailedLocked(err)
		s.enqueueLocked(key, st, true)
	default:
		// A conflict that a reset did not cure, or a failure of the
		// primary: retry this session alone, later.
		st.dirty, st.verified = true, false
		s.recordLocked(st, err)
		s.retryLaterLocked(key, st)
	}
}

// probe asks the replica about a key, to learn whether it is back. Any
// answer, ErrNotFound included, ends the outage.
func (s *Store) probe() {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.CallTimeout)
	_, err := s.replica.Stat(ctx, probeKey)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.broadcastLocked()
	s.prober = nil
	switch {
	case err == nil || errors.Is(err, recall.ErrNotFound):
		s.replicaAnsweredLocked()
	case s.ctx.Err() != nil:
		// shutting down
	default:
		err = fmt.Errorf("mirror: probe replica: %w", err)
		s.lastErr, s.lastErrAt = err.Error(), time.Now()
		s.replicaFailedLocked(err)
	}
}

// refused reports an error of the replica that retrying cannot cure: it
// refuses the data or the key.
func refused(err error) bool {
	if !isReplicaErr(err) {
		return false
	}
	for _, e := range []error{recall.ErrInvalidItem, recall.ErrTooLarge, recall.ErrInvalidKey, recall.ErrCorrupt, recall.ErrUnsupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Store) recordLocked(st *session, err error) {
	now := time.Now()
	st.lastErr, st.lastErrAt = err.Error(), now
	s.lastErr, s.lastErrAt = err.Error(), now
	s.requestSaveLocked()
}

// retryLaterLocked queues the session again after its own backoff.
func (s *Store) retryLaterLocked(key recall.Key, st *session) {
	st.attempts++
	st.waiting = true
	d := s.backoff(st.attempts)
	st.retryAt = time.Now().Add(d)
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		st.waiting = false
		if s.sessions[key] == st {
			s.enqueueLocked(key, st, false)
		}
	})
}

// replicaFailedLocked closes the gate for a backoff that grows with each
// consecutive replica-wide failure.
func (s *Store) replicaFailedLocked(err error) {
	s.outage++
	s.downFailures++
	if s.downSince.IsZero() {
		s.downSince = time.Now()
	}
	s.gate = time.Now().Add(s.backoff(s.outage))
	s.signal(s.wake) // a waiting worker sleeps until the new gate
}

// replicaAnsweredLocked ends an outage. The replica may have lost data
// while it was down (a Redis without persistence comes back empty), and a
// cursor is only a cache: every session is checked against the replica's
// own position again, and re-copied where it is behind.
func (s *Store) replicaAnsweredLocked() {
	if s.outage == 0 {
		return
	}
	s.outage, s.gate, s.downSince = 0, time.Time{}, time.Time{}
	s.recheckLocked()
}

// Recheck checks every session the mirror tracks against the replica's own
// position again, and re-copies what the replica lacks, as after an outage:
// for a replica restored from an old backup, or one that lost data while
// no replication was running. It returns at once; Flush waits for it.
func (s *Store) Recheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recheckLocked()
}

func (s *Store) recheckLocked() {
	for k, st := range s.sessions {
		s.invalidateLocked(k, st)
	}
}

// invalidateLocked makes the session's position a guess to check against
// the replica again, and queues it. A copy running meanwhile keeps going,
// but the positions it reports are not taken: it may have read the
// replica before the reason for doubt.
func (s *Store) invalidateLocked(key recall.Key, st *session) {
	st.epoch++
	st.verified, st.dirty, st.stuck, st.doubt = false, true, false, true
	s.enqueueLocked(key, st, false)
}

// backoff returns the delay before retry number n (1 for the first): it
// doubles from RetryMin up to RetryMax, jittered to a random point of its
// upper half so that many clients do not retry in step.
func (s *Store) backoff(n int) time.Duration {
	d := s.opts.RetryMin
	for i := 1; i < n && d < s.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, s.opts.RetryMax)
	half := d / 2
	return half + rand.N(d-half+1)
}
