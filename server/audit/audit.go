// Package audit keeps the service's audit log: who did what to which
// session (deletes, restores, purges, exports, shares, an admin's reads of
// other users' lists, token creation and revocation, policy changes and
// their runs), in the store the service serves, so that every replica
// writes to one log and an operator reads one log.
//
// The log lives in the reserved project Project, one session a UTC day
// (ID "2026-12-06"), one item an event: it is append-only as every recall
// log is, no route of the service reaches it, and Prune removes whole days
// past the retention. An event never holds an item's content or a token:
// only names, ids, counts and flags.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Project is the store project of the audit log. It starts with the
// service's reserved prefix, "_server.", which no user reaches and no
// listing shows.
const Project = "_server.audit"

// dayLayout names a day's session.
const dayLayout = "2006-01-02"

// itemType marks an event's item.
const itemType = "recall.audit_event"

// The actions the service records.
const (
	ActionDelete      = "session.delete"
	ActionRestore     = "session.restore"
	ActionPurge       = "session.purge"
	ActionExport      = "session.export"
	ActionShare       = "session.share"
	ActionRedact      = "session.redact"
	ActionAdminList   = "admin.list"
	ActionTokenCreate = "token.create"
	ActionTokenRevoke = "token.revoke"
	ActionPolicy      = "policy.change"
	ActionPolicyRun   = "policy.run"
)

// Event is one entry of the audit log.
type Event struct {
	Time time.Time `json:"time"`
	// Actor is who acted: a user's name, or "local" for a command run
	// on the store's machine (recall token, recall rm on a server's
	// store).
	Actor string `json:"actor"`
	// Admin reports that the actor acted with an admin token.
	Admin  bool   `json:"admin,omitempty"`
	Action string `json:"action"`
	// User is whose data the action was on, when it was not the actor's
	// own (an admin's delete of another user's session, a token's user).
	User string `json:"user,omitempty"`
	// Session is the session acted on, if any.
	Session string `json:"session,omitempty"`
	// RequestID and Client are the request's id and client address; empty
	// for a local command.
	RequestID string `json:"request_id,omitempty"`
	Client    string `json:"client,omitempty"`
	// Detail holds what else tells the action apart: a format, a count,
	// a flag, a token's id. Never content, never a secret.
	Detail map[string]string `json:"detail,omitempty"`
}

// Record appends ev to the log of its day (ev.Time, now when zero).
func Record(ctx context.Context, st recall.Store, ev Event) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Time = ev.Time.UTC()
	if ev.Actor == "" || ev.Action == "" {
		return fmt.Errorf("audit: an event needs an actor and an action: %w", recall.ErrInvalidItem)
	}
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		Event
	}{itemType, ev})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	key := recall.Key{Project: Project, Session: ev.Time.Format(dayLayout)}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.NewEntry(recall.KindItem, json.RawMessage(b))); err != nil {
		return fmt.Errorf("audit: record %s by %s: %w", ev.Action, ev.Actor, err)
	}
	return nil
}

// Query selects events of the log. The zero Query reads every event,
// newest first, a page of DefaultLimit.
type Query struct {
	// Actor, Action, User and Session keep the events whose field equals
	// them; empty keeps every event.
	Actor, Action, User, Session string
	// Since and Until bound the events' time; zero is unbounded.
	Since, Until time.Time
	// Limit is the page size, 1 to MaxLimit; 0 is DefaultLimit.
	Limit int
	// Cursor continues from a previous Page.Next.
	Cursor string
}

// Page is one page of Read, newest first.
type Page struct {
	Events []Event `json:"events"`
	// Next continues the read, or is "" after the oldest event. A filter
	// that matches few events may answer a page with fewer than Limit
	// events, or none, and a Next: Read examines at most MaxScan events
	// a call, so that a call costs a bounded amount whatever the log's
	// size.
	Next string `json:"next,omitempty"`
}

// Read's bounds.
const (
	DefaultLimit = 50
	MaxLimit     = 500
	MaxScan      = 5000
)

// ErrBadCursor reports a cursor Read did not write.
var ErrBadCursor = errors.New("audit: bad cursor")

// Read returns one page of the events q selects, newest first.
func Read(ctx context.Context, st recall.Store, q Query) (Page, error) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return Page{}, fmt.Errorf("audit: limit %d: want 1 to %d: %w", q.Limit, MaxLimit, recall.ErrInvalidQuery)
	}
	day, after, err := parseCursor(q.Cursor)
	if err != nil {
		return Page{}, err
	}
	days, err := Days(ctx, st)
	if err != nil {
		return Page{}, err
	}
	page := Page{Events: []Event{}}
	scanned := 0
	for _, d := range days {
		if day != "" && d > day || !q.Since.IsZero() && d < q.Since.UTC().Format(dayLayout) ||
			!q.Until.IsZero() && d > q.Until.UTC().Format(dayLayout) {
			continue
		}
		if d != day {
			after = recall.ItemRef{}
		}
		sess := recall.NewSession(st, recall.Key{Project: Project, Session: d})
		for {
			p, err := sess.ReadItems(ctx, recall.ItemPageOptions{Limit: min(readPage, MaxScan-scanned), After: after})
			if err != nil {
				return Page{}, fmt.Errorf("audit: read %s: %w", d, err)
			}
			for _, l := range p.Items {
				if ev, ok := decode(l.Item); ok && q.keeps(ev) {
					if len(page.Events) == limit {
						page.Next = cursorAt(d, l.Ref, true) // it starts the next page
						return page, nil
					}
					page.Events = append(page.Events, ev)
				}
				if scanned++; scanned == MaxScan {
					page.Next = cursorAt(d, l.Ref, false)
					return page, nil
				}
				after = l.Ref
			}
			if !p.More {
				break
			}
		}
	}
	return page, nil
}

// readPage is how many events Read reads of a day at a time.
const readPage = 200

// keeps reports whether q selects ev.
func (q Query) keeps(ev Event) bool {
	return (q.Actor == "" || ev.Actor == q.Actor) && (q.Action == "" || ev.Action == q.Action) &&
		(q.User == "" || ev.User == q.User) && (q.Session == "" || ev.Session == q.Session) &&
		(q.Since.IsZero() || !ev.Time.Before(q.Since)) && (q.Until.IsZero() || ev.Time.Before(q.Until))
}

// decode reads an event's item; a damaged one is skipped.
func decode(it recall.Item) (Event, bool) {
	var v struct {
		Type string `json:"type"`
		Event
	}
	if json.Unmarshal(it, &v) != nil || v.Type != itemType {
		return Event{}, false
	}
	return v.Event, true
}

// cursorAt is where the next page starts in day's log: at the event at
// ref when with is set, else just after it (pages go newest first, and a
// page's After is the place it starts after, so "at ref" is just past it).
func cursorAt(day string, ref recall.ItemRef, with bool) string {
	if with {
		ref.Index++
	}
	return day + "@" + ref.String()
}

func parseCursor(c string) (string, recall.ItemRef, error) {
	if c == "" {
		return "", recall.ItemRef{}, nil
	}
	day, r, ok := strings.Cut(c, "@")
	if _, err := time.Parse(dayLayout, day); err != nil || !ok {
		return "", recall.ItemRef{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	ref, err := recall.ParseItemRef(r)
	if err != nil {
		return "", recall.ItemRef{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return day, ref, nil
}

// Days returns the days the log holds, newest first.
func Days(ctx context.Context, st recall.Store) ([]string, error) {
	var days []string
	for cur := ""; ; {
		p, err := st.List(ctx, Project, recall.ListOptions{Limit: 500, Cursor: cur, IncludeArchived: true})
		if err != nil {
			return nil, fmt.Errorf("audit: list days: %w", err)
		}
		for _, m := range p.Sessions {
			if _, err := time.Parse(dayLayout, m.Key.Session); err == nil {
				days = append(days, m.Key.Session)
			}
		}
		if cur = p.Next; cur == "" {
			break
		}
	}
	slices.Sort(days)
	slices.Reverse(days)
	return days, nil
}

// Prune removes the days of the log wholly before cutoff and returns how
// many it removed. Several replicas may prune at once: a day another
// removed first is not an error.
func Prune(ctx context.Context, st recall.Store, cutoff time.Time) (int, error) {
	days, err := Days(ctx, st)
	if err != nil {
		return 0, err
	}
	last := cutoff.UTC().AddDate(0, 0, -1).Format(dayLayout) // the newest day wholly before cutoff
	n := 0
	for _, d := range days {
		if d > last {
			continue
		}
		err := st.Remove(ctx, recall.Key{Project: Project, Session: d})
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return n, fmt.Errorf("audit: prune %s: %w", d, err)
		}
		n++
	}
	return n, nil
}
