package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server/audit"
)

// DefaultAuditRetention is how long the audit log keeps an event by
// default (Options.AuditRetention).
const DefaultAuditRetention = 365 * 24 * time.Hour

// auditPruneEvery is how often a server prunes the audit log, at most: on
// the first event it records after that long.
const auditPruneEvery = time.Hour

// auditState is what a Server keeps of the audit log between requests.
type auditState struct {
	lastPrune atomic.Int64 // unix seconds of the last prune
}

// record appends an event of the request r to the audit log: what action
// the request's user did to key (the zero Key for none), with detail. An
// event that cannot be recorded is logged as an error; the action it
// records has happened by then and stands.
func (s *Server) record(r *http.Request, action string, key recall.Key, detail map[string]string) {
	ctx := r.Context()
	u, _ := userFrom(ctx)
	ev := audit.Event{Actor: u.Name, Admin: u.Admin, Action: action, Session: key.Session,
		RequestID: infoFrom(ctx).id, Client: clientAddr(r), Detail: detail}
	if owner, _, ok := ProjectOwner(key.Project); ok && owner != u.Name {
		ev.User = owner
	}
	if err := audit.Record(ctx, s.store, ev); err != nil {
		s.log.ErrorContext(ctx, "audit event not recorded", "action", action, "session", key.Session, "err", err)
		return
	}
	s.pruneAudit()
}

// recordExport records an export of key that ended with *err nil.
func (s *Server) recordExport(r *http.Request, key recall.Key, err *error) {
	if *err == nil {
		s.record(r, audit.ActionExport, key, map[string]string{"format": cmp.Or(r.URL.Query().Get("format"), "json")})
	}
}

// pruneAudit removes, in the background, the audit log's days past
// Options.AuditRetention, at most once an auditPruneEvery in this
// process. Replicas may prune at once; Prune allows it.
func (s *Server) pruneAudit() {
	keep := s.opts.AuditRetention
	now := time.Now()
	last := s.audit.lastPrune.Load()
	if keep < 0 || now.Unix()-last < int64(auditPruneEvery/time.Second) || !s.audit.lastPrune.CompareAndSwap(last, now.Unix()) {
		return
	}
	if keep == 0 {
		keep = DefaultAuditRetention
	}
	s.background(func(ctx context.Context) {
		if _, err := audit.Prune(ctx, s.store, now.Add(-keep)); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "audit log not pruned", "err", err)
		}
	})
}

// auditLog answers GET /api/v1/audit: a page of the audit log, newest
// first, to an admin only. Filters: actor, action, user, session, since
// and until (RFC 3339); limit (1-500) and cursor.
func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r, "Only an admin may read the audit log."); err != nil {
		return err
	}
	q := r.URL.Query()
	query := audit.Query{Actor: q.Get("actor"), Action: q.Get("action"), User: q.Get("user"), Session: q.Get("session"), Cursor: q.Get("cursor")}
	limit, err := intParam(r, "limit", audit.DefaultLimit, 1, audit.MaxLimit)
	if err != nil {
		return err
	}
	query.Limit = int(limit)
	if query.Since, query.Until, err = timeRange(q); err != nil {
		return err
	}
	page, err := audit.Read(r.Context(), s.store, query)
	if errors.Is(err, audit.ErrBadCursor) {
		return badCursor()
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Object     string        `json:"object"`
		Data       []audit.Event `json:"data"`
		NextCursor string        `json:"next_cursor,omitempty"`
		HasMore    bool          `json:"has_more"`
	}{"list", page.Events, page.Next, page.Next != ""})
	return nil
}
