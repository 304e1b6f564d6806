package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// A session continued on two machines since they last synced is never
// merged by guessing: the remote's continuation stays the session, and the
// local one becomes a fork of the common history, on both stores. The
// steps, each durable before the next, so that a kill at any instant and a
// second run finish the job and lose nothing:
//
//  1. The fork is written locally under a key derived from the session,
//     the common seq, the local log's last seq and the first local entry
//     after the common seq (forkKey), so a second run finds it rather than
//     make another. Its log is the local session's log, entry for entry
//     with the same seqs (so the refs of pops and removals stay true),
//     followed by a fork entry naming the session and the common seq
//     (Meta.ForkedFrom) and a user title "TITLE (from HOST)". It is
//     written with Import, idempotent by seq: a half-written fork is
//     completed, never duplicated.
//  2. The fork is copied to the remote, again with Import.
//  3. Only then is the local session replaced by the remote's: the local
//     log is checked unchanged since step 1 (a write meanwhile stops the
//     replacement: it is kept, and the next run forks it), removed, and
//     the remote's log, and its subagent records, copied in. A kill
//     between the removal and the copy leaves a session the remote holds
//     and the local store lacks, which the next run pulls.

// diverged handles a session both stores continued after seq common.
func (t *twoWay) diverged(ctx context.Context, w pairing, common int64, rep *TwoWayReport) (int64, error) {
	if w.lk.Subpath != "" {
		// A subagent record cannot be forked alone; its session can.
		return 0, fmt.Errorf("%w: %s: a subagent record continued on both sides after seq %d; it is left as it is on both", ErrDiverged, w.lk, common)
	}
	lLast := w.lm.LastSeq
	first, err := entryAt(ctx, t.local, w.lk, common+1)
	if err != nil {
		return 0, err
	}
	if first == nil {
		return 0, fmt.Errorf("%w: %s: the local log lacks seq %d (purged?)", ErrDiverged, w.lk, common+1)
	}
	fk := forkKey(w.lk, common, lLast, *first)
	rep.Forks = append(rep.Forks, ForkReport{Session: w.lk, Fork: fk, At: common})
	rep.Pushed++
	rep.EntriesPushed += int(lLast + 2)
	rep.Pulled++
	rep.EntriesPulled += int(w.rm.LastSeq - common)
	if t.opts.DryRun {
		return 0, nil
	}
	// 1. the fork, locally
	end, err := t.writeFork(ctx, w, fk, common)
	if err != nil {
		return 0, err
	}
	// 2. the fork, on the remote
	rfk := fk
	rfk.Project = w.rk.Project
	rpos, err := t.remotePosition(ctx, rfk)
	if err != nil {
		return 0, err
	}
	c := copier{src: t.local, dst: t.remote, batch: t.opts.BatchSize, to: constKey(rfk), origins: t.toRemote}
	if last, _, err := c.copy(ctx, fk, rpos, nil); err != nil {
		return 0, err
	} else if last < end {
		return 0, fmt.Errorf("mirror: fork %s: the remote holds it through seq %d of %d: %w", fk, last, end, recall.ErrConflict)
	}
	// 3. the session takes the remote's log
	if err := t.replaceLocal(ctx, w, lLast); err != nil {
		return 0, err
	}
	return w.rm.LastSeq, nil
}

// forkKey is the local key of the fork of key's local continuation after
// seq common, which ends at seq last and starts with first: a function of
// them alone, so a second run after a kill finds the fork the first made.
// Its origin is in the fork's log (Meta.ForkedFrom), not in its key.
func forkKey(key recall.Key, common, last int64, first recall.Entry) recall.Key {
	h := sha256.New()
	h.Write([]byte(key.String()))
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], uint64(common))
	binary.BigEndian.PutUint64(n[8:], uint64(last))
	h.Write(n[:])
	h.Write([]byte(first.Kind))
	h.Write([]byte(first.Time.UTC().Format("2006-01-02T15:04:05.999999999Z")))
	h.Write(first.Data)
	// A session ID of its own (a UUID's shape, version 8: made from the
	// hash), so that listings tell it from its session by the first
	// characters, as any two sessions.
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u)
	return recall.Key{Project: key.Project, Session: x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]}
}

// writeFork writes (or completes) the local fork fk of w's local session
// after seq common and returns the fork's last seq.
func (t *twoWay) writeFork(ctx context.Context, w pairing, fk recall.Key, common int64) (int64, error) {
	lLast := w.lm.LastSeq
	end := lLast + 2 // the fork entry and the title follow the copied log
	pos := int64(0)
	switch m, err := t.local.Stat(ctx, fk); {
	case err == nil:
		pos = m.LastSeq
	case !errors.Is(err, recall.ErrNotFound):
		return 0, fmt.Errorf("mirror: fork %s: %w", fk, err)
	}
	for pos < lLast {
		es, err := t.local.Entries(ctx, w.lk, pos, t.opts.BatchSize)
		if err != nil {
			return 0, fmt.Errorf("mirror: fork %s: read %s: %w", fk, w.lk, err)
		}
		cut := len(es)
		for i, e := range es {
			if e.Seq > lLast {
				cut = i
				break
			}
		}
		es = es[:cut]
		if cut == 0 {
			return 0, fmt.Errorf("mirror: fork %s: %s ends before seq %d: %w", fk, w.lk, lLast, recall.ErrConflict)
		}
		if es[len(es)-1].Seq == lLast {
			es = append(es, t.forkTail(w, common, lLast)...) // one batch with the last entries: one unit
		}
		if pos, err = t.local.Import(ctx, fk, es...); err != nil {
			return 0, fmt.Errorf("mirror: fork %s: %w", fk, err)
		}
	}
	if pos < end {
		if _, err := t.local.Import(ctx, fk, t.forkTail(w, common, lLast)...); err != nil {
			return 0, fmt.Errorf("mirror: fork %s: %w", fk, err)
		}
	}
	return end, nil
}

// forkTail is what makes a copy of the local log the fork: a fork entry
// naming the session and the common seq, and its title.
func (t *twoWay) forkTail(w pairing, common, last int64) []recall.Entry {
	title := w.lm.Title
	if title == "" {
		title = w.rm.Title
	}
	if title == "" {
		title = w.lm.FirstPrompt
	}
	if title == "" {
		title = w.lk.Session
	}
	if len(title) > 120 {
		title = title[:120]
	}
	if t.opts.Host != "" {
		title = fmt.Sprintf("%s (from %s)", title, t.opts.Host)
	}
	now := forkTime()
	origin := recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: w.lk, Seq: common})
	origin.Seq, origin.Time = last+1, now
	named := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: recall.TitleUser})
	named.Seq, named.Time = last+2, now
	return []recall.Entry{origin, named}
}

// remotePosition is the remote's last seq of key, 0 when it lacks it.
func (t *twoWay) remotePosition(ctx context.Context, key recall.Key) (int64, error) {
	m, err := t.remote.Stat(ctx, key)
	switch {
	case errors.Is(err, recall.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fromReplica(fmt.Errorf("mirror: stat %s on the remote: %w", key, err))
	}
	return m.LastSeq, nil
}

// replaceLocal replaces w's local session, whose log the fork holds
// through seq lLast, with the remote's log and subagent records.
func (t *twoWay) replaceLocal(ctx context.Context, w pairing, lLast int64) error {
	// The subagent records go with the session: each must be on the remote
	// whole (they were synced before their session, see pair).
	subs, err := t.local.List(ctx, w.lk.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: w.lk.Session})
	if err != nil {
		return fmt.Errorf("mirror: list subagent records of %s: %w", w.lk, err)
	}
	for _, sm := range subs.Sessions {
		rk := sm.Key
		rk.Project = w.rk.Project
		if sm.LastSeq == 0 {
			continue
		}
		a, err := entryAt(ctx, t.local, sm.Key, sm.LastSeq)
		if err != nil {
			return err
		}
		b, err := entryAt(ctx, t.remote, rk, sm.LastSeq)
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return fromReplica(err)
		}
		if a == nil || b == nil || !t.same(*a, *b) {
			return fmt.Errorf("%w: %s: its subagent record %s is not on the remote whole; the session is left as it is", ErrDiverged, w.lk, sm.Key.Subpath)
		}
	}
	if m, err := t.local.Stat(ctx, w.lk); err != nil {
		return fmt.Errorf("mirror: %s: %w", w.lk, err)
	} else if m.LastSeq != lLast {
		return fmt.Errorf("mirror: %s was written to during the sync (seq %d, forked through %d): %w; sync again", w.lk, m.LastSeq, lLast, recall.ErrConflict)
	}
	if err := t.local.Remove(ctx, w.lk); err != nil && !errors.Is(err, recall.ErrNotFound) {
		return fmt.Errorf("mirror: remove %s to take the remote's log: %w", w.lk, err)
	}
	c := copier{src: t.remote, dst: t.local, batch: t.opts.BatchSize, to: constKey(w.lk), origins: t.toLocal}
	if _, _, err := c.copy(ctx, w.rk, 0, nil); err != nil {
		return err
	}
	rsubs, err := t.remote.List(ctx, w.rk.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: w.rk.Session})
	if err != nil {
		return fromReplica(fmt.Errorf("mirror: list subagent records of %s on the remote: %w", w.rk, err))
	}
	for _, sm := range rsubs.Sessions {
		lk := sm.Key
		lk.Project = w.lk.Project
		c.to = constKey(lk)
		if _, _, err := c.copy(ctx, sm.Key, 0, nil); err != nil {
			return err
		}
	}
	return nil
}

// forkOrigin decodes the origin of a fork entry.
func forkOrigin(e recall.Entry) (recall.ForkOrigin, bool) {
	var o recall.ForkOrigin
	if e.Kind != recall.KindFork || json.Unmarshal(e.Data, &o) != nil {
		return o, false
	}
	return o, true
}

// moveOrigins returns es with the origin of each fork entry moved to the
// project project maps its project to (nil: es as it is). A fork names its
// origin by key, and the same project has another key on another machine
// (TwoWayOptions.Projects), so a fork copied across keeps naming its
// session there. es itself is not changed.
func moveOrigins(es []recall.Entry, project func(string) string) []recall.Entry {
	if project == nil {
		return es
	}
	var out []recall.Entry
	for i, e := range es {
		o, ok := forkOrigin(e)
		if !ok {
			continue
		}
		p := project(o.Key.Project)
		if p == o.Key.Project {
			continue
		}
		if out == nil {
			out = slices.Clone(es)
		}
		o.Key.Project = p
		out[i].Data, _ = json.Marshal(o) // an origin always marshals
	}
	if out == nil {
		return es
	}
	return out
}
