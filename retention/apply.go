package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// reservedPrefix starts the projects the service keeps for itself
// (tokens, idempotency records, the audit log, this policy): no policy
// ever applies to them.
const reservedPrefix = "_server."

// Options are what Apply needs besides the policy.
type Options struct {
	// Now is the time the keeps are counted back from. Default: time.Now().
	Now time.Time
	// DryRun reports what Apply would move without moving it.
	DryRun bool
	// Project limits Apply to one project. Default: every project.
	Project string
	// UserOf names the user a project belongs to, for the policy's user
	// rules; nil (the CLI's case) has none.
	UserOf func(project string) string
}

// Report is what Apply moved to the trash, or would move with DryRun.
type Report struct {
	// Trashed are the sessions moved, as they were listed.
	Trashed []recall.Meta `json:"trashed"`
	// Held counts the sessions past their keep that stay because they are
	// pinned.
	Held int `json:"held_pinned"`
	// Scanned counts the sessions looked at.
	Scanned int `json:"scanned"`
}

// listPage is how many sessions Apply lists at a time.
const listPage = 500

// Apply moves to the trash every session that p says has expired (see
// Policy.Expired), and reports them. Each move is guarded by the LastSeq
// the session was listed with, so a session written to meanwhile stays;
// one moved to the trash meanwhile is not moved twice. Sessions of the
// service's reserved projects are never looked at. It is safe to run in
// several processes at once; the service runs it in one (see Lease).
func Apply(ctx context.Context, st recall.Store, p Policy, opts Options) (Report, error) {
	rep := Report{Trashed: []recall.Meta{}}
	if p.IsZero() {
		return rep, nil
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	yes := true
	trash := recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &yes})
	for cursor := ""; ; {
		page, err := st.List(ctx, opts.Project, recall.ListOptions{Limit: listPage, Cursor: cursor, IncludeArchived: true})
		if err != nil {
			return rep, fmt.Errorf("retention: list: %w", err)
		}
		for _, m := range page.Sessions {
			if strings.HasPrefix(m.Key.Project, reservedPrefix) {
				continue
			}
			rep.Scanned++
			user := ""
			if opts.UserOf != nil {
				user = opts.UserOf(m.Key.Project)
			}
			if !p.Expired(m, user, now) {
				if m.Pinned && p.Expired(unpinned(m), user, now) {
					rep.Held++
				}
				continue
			}
			if !opts.DryRun {
				_, err := st.Append(ctx, m.Key, recall.IfLastSeq(m.LastSeq), trash)
				if errors.Is(err, recall.ErrConflict) || errors.Is(err, recall.ErrNotFound) {
					continue // written to, trashed or removed meanwhile
				}
				if err != nil {
					return rep, fmt.Errorf("retention: trash %s: %w", m.Key, err)
				}
			}
			rep.Trashed = append(rep.Trashed, m)
		}
		if cursor = page.Next; cursor == "" {
			return rep, nil
		}
	}
}

func unpinned(m recall.Meta) recall.Meta {
	m.Pinned = false
	return m
}

// leaseProject holds the service's leases, one session a lease.
const leaseProject = reservedPrefix + "leases"

// leaseType marks a lease's claim.
const leaseType = "recall.lease"

// claim is one holder's claim of a lease, an item of its log.
type claim struct {
	Type   string    `json:"type"`
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// Lease claims the lease name for holder until now+ttl, in the store, and
// reports whether holder has it: a lease another holder claimed that has
// not run out is not taken, and of two holders claiming at once, one
// wins (the claim is appended guarded by the log's LastSeq). A holder
// that has the lease extends it by claiming again. Replicas of the
// service name themselves as holders and run a scheduled job only while
// they hold its lease, so that they do not run it at once.
func Lease(ctx context.Context, st recall.Store, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	key := recall.Key{Project: leaseProject, Session: name}
	live, last, err := st.Items(ctx, key, 1)
	if err != nil {
		return false, fmt.Errorf("retention: lease %s: %w", name, err)
	}
	if len(live) == 1 {
		var c claim
		if json.Unmarshal(live[0].Item, &c) == nil && c.Type == leaseType && c.Holder != holder && now.Before(c.Until) {
			return false, nil
		}
	}
	b, err := json.Marshal(claim{leaseType, holder, now.Add(ttl).UTC()})
	if err != nil {
		return false, fmt.Errorf("retention: lease %s: %w", name, err)
	}
	_, err = st.Append(ctx, key, recall.IfLastSeq(last), recall.NewEntry(recall.KindItem, json.RawMessage(b)))
	if errors.Is(err, recall.ErrConflict) {
		return false, nil // another holder claimed it first
	}
	if err != nil {
		return false, fmt.Errorf("retention: lease %s: %w", name, err)
	}
	return true, nil
}
