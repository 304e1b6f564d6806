package mirror

import (
	"context"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
)

// listPage is the page size used to enumerate a store.
const listPage = 500

// reservedPrefix starts the projects a recall serve keeps for itself
// (tokens, idempotency records, the audit log): a server's secrets,
// never a person's sessions. Nothing in this package copies them.
const reservedPrefix = "_server."

// Reserved reports whether project is one of a server's own ("_server."
// and on), which neither a mirror nor a sync copies in either direction: a
// copy of a home's tokens on a shared store would let anyone who reads it
// sign in to that home's server.
func Reserved(project string) bool { return strings.HasPrefix(project, reservedPrefix) }

// eachSession calls fn for every session record of store in project (every
// project when it is "", the reserved ones left out): main sessions,
// archived ones included, each followed by its subagent records, then
// those in the trash likewise.
func eachSession(ctx context.Context, store recall.Store, project string, fn func(recall.Meta) error) error {
	cursor, trash := "", false
	for {
		p, err := store.List(ctx, project, recall.ListOptions{Limit: listPage, Cursor: cursor, IncludeArchived: true, Trashed: trash})
		if err != nil {
			return fmt.Errorf("mirror: list sessions: %w", err)
		}
		for _, m := range p.Sessions {
			if project == "" && Reserved(m.Key.Project) {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
			subs, err := store.List(ctx, m.Key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: m.Key.Session})
			if err != nil {
				return fmt.Errorf("mirror: list subagent records of %s: %w", m.Key, err)
			}
			for _, sm := range subs.Sessions {
				if err := fn(sm); err != nil {
					return err
				}
			}
		}
		if p.Next == "" && trash {
			return nil
		}
		if cursor = p.Next; cursor == "" {
			trash = true
		}
	}
}

// scan is the catch-up at start: it enumerates the primary and queues every
// session the cursor file does not show as replicated up to the primary's
// LastSeq (all of them when there is no cursor file). Entries of the cursor
// file for sessions the primary no longer holds are dropped from it.
func (s *Store) scan(ctx context.Context, saved map[recall.Key]savedSession) {
	seen := map[recall.Key]bool{}
	var batch []recall.Meta
	flush := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range batch {
			s.noteLocked(m, saved)
		}
		batch = batch[:0]
	}
	err := eachSession(ctx, s.primary, "", func(m recall.Meta) error {
		seen[m.Key] = true
		batch = append(batch, m)
		if len(batch) >= listPage {
			flush()
		}
		return ctx.Err()
	})
	flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.broadcastLocked()
	s.scanning = false
	if err != nil {
		if ctx.Err() == nil {
			s.scanErr = err.Error()
		}
		return
	}
	for k := range saved {
		if !seen[k] && s.sessions[k] == nil {
			s.forgotten[k] = true
		}
	}
	if len(s.forgotten) > 0 {
		s.requestSaveLocked()
	}
}

// noteLocked takes in one session found by the scan.
func (s *Store) noteLocked(m recall.Meta, saved map[recall.Key]savedSession) {
	st := s.sessionLocked(m.Key)
	if m.LastSeq > st.head {
		st.head = m.LastSeq
	}
	if st.verified || st.running || st.dirty || st.remove {
		return // the write path or a worker got there first and knows better
	}
	ss, ok := saved[m.Key]
	if ok {
		st.replicated, st.doubt = ss.Seq, ss.Recheck
		st.lastErr, st.lastErrAt = ss.LastError, ss.LastErrorAt
		if ss.Seq == m.LastSeq && !ss.Recheck {
			return // replicated in full by an earlier run
		}
	}
	st.dirty = true
	s.enqueueLocked(m.Key, st, false)
}
