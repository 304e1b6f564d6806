package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server/audit"
)

// TestAuditLog: deletes (recall's API, the Conversations API, an admin's
// of another user's session), exports and an admin's list of another
// user's sessions are in the audit log, with who, the request id and the
// client, and never an item's content; only an admin reads it, filtered
// and paged.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1}, nil)
	const secret = "the words of the conversation"
	a1 := e.newConv("alice", msg("user", secret))
	a2 := e.newConv("alice", msg("user", secret))
	b1 := e.newConv("bob", msg("user", secret))

	var ids []string // X-Request-Id of each audited request, in order
	do := func(method, path, user string) {
		r := e.do(method, path, user, nil).want(t, 200)
		ids = append(ids, r.Header.Get("X-Request-Id"))
	}
	do("GET", "/api/v1/sessions/"+a1+"/export?format=markdown", "alice")
	do("DELETE", "/api/v1/sessions/"+a1, "alice")
	do("DELETE", "/v1/conversations/"+a2, "alice")
	do("GET", "/api/v1/sessions?user=bob", "root")
	do("DELETE", "/api/v1/sessions/"+b1+"?user=bob", "root")
	e.do("GET", "/api/v1/sessions", "alice", nil).want(t, 200) // one's own list: not audited
	e.do("GET", "/api/v1/audit", "alice", nil).wantError(t, 403)

	var page struct {
		Data       []audit.Event `json:"data"`
		NextCursor string        `json:"next_cursor"`
		HasMore    bool          `json:"has_more"`
	}
	e.do("GET", "/api/v1/audit", "root", nil).want(t, 200).decode(t, &page)
	want := []audit.Event{ // newest first
		{Actor: "root", Admin: true, Action: audit.ActionDelete, User: "bob", Session: b1},
		{Actor: "root", Admin: true, Action: audit.ActionAdminList, User: "bob", Detail: map[string]string{"all": "false"}},
		{Actor: "alice", Action: audit.ActionDelete, Session: a2, Detail: map[string]string{"api": "conversations"}},
		{Actor: "alice", Action: audit.ActionDelete, Session: a1},
		{Actor: "alice", Action: audit.ActionExport, Session: a1, Detail: map[string]string{"format": "markdown"}},
	}
	if len(page.Data) != len(want) {
		t.Fatalf("the audit log holds %d events, want %d: %+v", len(page.Data), len(want), page.Data)
	}
	for i, ev := range page.Data {
		w := want[i]
		if ev.Actor != w.Actor || ev.Admin != w.Admin || ev.Action != w.Action || ev.User != w.User || ev.Session != w.Session ||
			len(ev.Detail) != len(w.Detail) || ev.Detail["api"] != w.Detail["api"] || ev.Detail["format"] != w.Detail["format"] || ev.Detail["all"] != w.Detail["all"] {
			t.Errorf("event %d = %+v, want %+v", i, ev, w)
		}
		if ev.RequestID != ids[len(ids)-1-i] || ev.Client != "127.0.0.1" || time.Since(ev.Time) > time.Minute {
			t.Errorf("event %d: request %q client %q time %v; want request %q from 127.0.0.1, now", i, ev.RequestID, ev.Client, ev.Time, ids[len(ids)-1-i])
		}
	}

	// Filtered and paged.
	e.do("GET", "/api/v1/audit?actor=alice&action=session.delete&limit=1", "root", nil).want(t, 200).decode(t, &page)
	if len(page.Data) != 1 || page.Data[0].Session != a2 || !page.HasMore {
		t.Fatalf("alice's deletes, first page: %+v", page)
	}
	e.do("GET", "/api/v1/audit?actor=alice&action=session.delete&limit=1&cursor="+page.NextCursor, "root", nil).want(t, 200).decode(t, &page)
	if len(page.Data) != 1 || page.Data[0].Session != a1 {
		t.Fatalf("alice's deletes, second page: %+v", page)
	}
	e.do("GET", "/api/v1/audit?cursor=nope", "root", nil).wantError(t, 400)
	e.do("GET", "/api/v1/audit?since=yesterday", "root", nil).wantError(t, 400)

	// No event holds content.
	days, err := audit.Days(context.Background(), st)
	if err != nil || len(days) != 1 {
		t.Fatalf("Days = %v, %v", days, err)
	}
	_, entries, err := st.Load(context.Background(), recall.Key{Project: audit.Project, Session: days[0]})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.Contains(string(en.Data), secret) || strings.Contains(string(en.Data), e.tokens["root"]) {
			t.Errorf("an audit event holds content or a token: %s", en.Data)
		}
	}
}

// TestAuditRetention: a server prunes the days of the audit log older
// than its retention when it records an event.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1, AuditRetention: 48 * time.Hour}, nil)
	ctx := context.Background()
	old := time.Now().AddDate(0, 0, -5)
	if err := audit.Record(ctx, st, audit.Event{Time: old, Actor: "alice", Action: audit.ActionExport}); err != nil {
		t.Fatal(err)
	}
	c := e.newConv("alice", msg("user", "x"))
	e.do("DELETE", "/v1/conversations/"+c, "alice", nil).want(t, 200)
	today := time.Now().UTC().Format("2006-01-02")
	testkit.Eventually(t, 10*time.Second, "the old day pruned", func() bool {
		days, err := audit.Days(ctx, st)
		return err == nil && slices.Equal(days, []string{today})
	})
}

// TestAuditTrash: a delete to the trash, a restore and a purge are three
// actions of the audit log.
func TestAuditTrash(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "x"))
	sp := "/api/v1/sessions/" + id
	e.do("DELETE", sp, "alice", nil).want(t, 200)
	e.do("POST", sp+"/restore", "alice", nil).want(t, 200)
	e.do("DELETE", sp+"?purge=true", "alice", nil).want(t, 200)
	page, err := audit.Read(context.Background(), st, audit.Query{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range page.Events {
		got = append(got, ev.Action+" "+ev.Session)
	}
	want := []string{audit.ActionPurge + " " + id, audit.ActionRestore + " " + id, audit.ActionDelete + " " + id}
	if !slices.Equal(got, want) {
		t.Errorf("the audit log: %q, want %q", got, want)
	}
}
