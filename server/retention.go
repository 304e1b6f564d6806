package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/retention"
	"github.com/recallkit/recall/server/audit"
)

// DefaultRetentionEvery is how often a server applies its store's
// retention policy by default (Options.RetentionEvery).
const DefaultRetentionEvery = time.Hour

// retentionLease names the lease the replicas hold to apply the policy
// one at a time.
const retentionLease = "retention"

// replicaName names this process among the replicas that share a store,
// as the holder of a lease.
func replicaName() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b[:])
}

// startRetention applies the store's retention policy every
// Options.RetentionEvery, in the background, until Close.
func (s *Server) startRetention() {
	every := cmp.Or(s.opts.RetentionEvery, DefaultRetentionEvery)
	if every < 0 {
		return
	}
	s.background(func(ctx context.Context) {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if _, err := s.runRetention(ctx, now); err != nil && ctx.Err() == nil {
					s.log.ErrorContext(ctx, "retention: the policy was not applied", "err", err)
				}
			}
		}
	})
}

// runRetention applies the store's policy as it stands at now, and
// deletes for good what has been in the trash longer than
// Options.TrashGrace, when this replica holds the retention lease; it
// reports whether it ran. A run is recorded in the audit log, with its
// counts. The lease lasts one and a half periods: its holder keeps it
// from one run to the next, and another replica takes over once a
// holder has missed a run.
func (s *Server) runRetention(ctx context.Context, now time.Time) (bool, error) {
	every := cmp.Or(s.opts.RetentionEvery, DefaultRetentionEvery)
	held, err := retention.Lease(ctx, s.store, retentionLease, s.replica, now, every+every/2)
	if err != nil || !held {
		return false, err
	}
	p, err := retention.Load(ctx, s.store)
	if err != nil {
		return true, err
	}
	rep, err := retention.Apply(ctx, s.store, p, retention.Options{Now: now, UserOf: projectUser})
	if err != nil {
		return true, err
	}
	purged := 0
	if grace := cmp.Or(s.opts.TrashGrace, recall.DefaultTrashGrace); grace >= 0 {
		gone, err := recall.EmptyTrash(ctx, s.store, recall.CleanupOptions{OlderThan: now.Add(-grace)})
		if err != nil {
			return true, err
		}
		purged = len(gone.Removed)
	}
	ev := audit.Event{Time: now, Actor: "server", Action: audit.ActionPolicyRun, Detail: map[string]string{
		"replica": s.replica, "scanned": strconv.Itoa(rep.Scanned), "trashed": strconv.Itoa(len(rep.Trashed)),
		"held_pinned": strconv.Itoa(rep.Held), "purged": strconv.Itoa(purged)}}
	if err := audit.Record(ctx, s.store, ev); err != nil {
		s.log.ErrorContext(ctx, "audit event not recorded", "action", ev.Action, "err", err)
	}
	if len(rep.Trashed) > 0 || purged > 0 {
		s.log.InfoContext(ctx, "retention: applied the policy", "trashed", len(rep.Trashed), "purged", purged)
	}
	return true, nil
}

// projectUser names the user a store project belongs to, for the
// policy's user rules: "" for a project of no user.
func projectUser(project string) string {
	name, _, _ := ProjectOwner(project) // "" when no user's
	return name
}

// policyAnswer is the answer of GET and PUT /api/v1/policy.
type policyAnswer struct {
	Object string           `json:"object"` // "retention.policy"
	Policy retention.Policy `json:"policy"`
	// WouldTrash counts the sessions the policy moves to the trash now,
	// and Held those it would but for their pin (PUT only).
	WouldTrash *int `json:"would_trash,omitempty"`
	Held       *int `json:"held_pinned,omitempty"`
	// Saved reports that a PUT made it the policy (not with dry_run).
	Saved bool `json:"saved"`
}

// getPolicy answers the store's retention policy, to an admin.
func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r, "Only an admin may read the retention policy."); err != nil {
		return err
	}
	p, err := retention.Load(r.Context(), s.store)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyAnswer{Object: "retention.policy", Policy: p})
	return nil
}

// putPolicy replaces the store's retention policy, for an admin, and
// answers how many sessions it moves to the trash now: with
// dry_run=true, without saving it, so that a change is seen before it
// takes effect. The next scheduled run applies it.
func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r, "Only an admin may change the retention policy."); err != nil {
		return err
	}
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	var p retention.Policy
	if err := s.readJSON(w, r, &p); err != nil {
		return err
	}
	ctx := r.Context()
	rep, err := retention.Apply(ctx, s.store, p, retention.Options{DryRun: true, UserOf: projectUser})
	if err != nil {
		return err
	}
	n, held := len(rep.Trashed), rep.Held
	out := policyAnswer{Object: "retention.policy", Policy: p, WouldTrash: &n, Held: &held}
	if !dry {
		if err := retention.Save(ctx, s.store, p); errors.Is(err, retention.ErrBadPolicy) {
			return invalidParam("policy", "Invalid policy: %v.", err)
		} else if err != nil {
			return err
		}
		out.Saved = true
		s.record(r, audit.ActionPolicy, recall.Key{}, map[string]string{"policy": p.String(), "would_trash": strconv.Itoa(n)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// adminOnly refuses a request whose user is not an admin.
func adminOnly(r *http.Request, msg string) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	if !u.Admin {
		return notAdmin(msg)
	}
	return nil
}
