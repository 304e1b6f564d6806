package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server/audit"
)

// TestShareLinks: a link opens without a token, shows the session as it
// was shared (or as it is, live), runs no script and is not indexed;
// another user cannot share or revoke it; it is a 404 once revoked,
// expired, or its session is in the trash; the operator can turn sharing
// off; each share and revocation is in the audit log.
func TestShareLinks(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1}, nil)
	ctx := context.Background()
	id := e.newConv("alice", msg("user", "the first question"), msg("assistant", "the first answer"))
	sp := "/api/v1/sessions/" + id
	var snap, live shareAnswer
	e.do("POST", sp+"/share", "alice", map[string]any{}).want(t, 201).decode(t, &snap)
	e.do("POST", sp+"/share", "alice", map[string]any{"live": true, "expires_in": "never"}).want(t, 201).decode(t, &live)
	if !strings.HasPrefix(snap.URL, "/share/"+SharePrefix) || snap.Live || !live.Live || !live.Expires.IsZero() ||
		time.Until(snap.Expires) < DefaultShareExpiry-time.Minute || time.Until(snap.Expires) > DefaultShareExpiry {
		t.Fatalf("the links: %+v, %+v", snap, live)
	}
	if err := recall.NewSession(st, recall.Key{Project: User{Name: "alice"}.Project(), Session: id}).AddItems(ctx, recall.Message("user", "a later question")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link  shareAnswer
		later bool
	}{{snap, false}, {live, true}} {
		r := e.do("GET", tc.link.URL, "", nil).want(t, 200)
		body := string(r.body)
		if !strings.Contains(body, "the first answer") || strings.Contains(body, "a later question") != tc.later {
			t.Errorf("link live=%v: the page shows the later question: %v, want %v", tc.link.Live, !tc.later, tc.later)
		}
		if r.Header.Get("X-Robots-Tag") != "noindex, nofollow" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("link headers: %v", r.Header)
		}
	}

	// Another user's view of them.
	e.do("POST", sp+"/share", "bob", map[string]any{}).wantError(t, 404)
	e.do("DELETE", "/api/v1/shares/"+snap.ID, "bob", nil).wantError(t, 404)
	var list struct {
		Data []shareAnswer `json:"data"`
	}
	e.do("GET", "/api/v1/shares", "bob", nil).want(t, 200).decode(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("bob lists alice's links: %+v", list.Data)
	}
	e.do("GET", "/api/v1/shares", "alice", nil).want(t, 200).decode(t, &list)
	if len(list.Data) != 2 || list.Data[0].Token != "" || list.Data[0].URL != "" {
		t.Errorf("alice's links: %+v", list.Data)
	}

	// Revoked, expired, unknown, and a session in the trash: 404.
	e.do("DELETE", "/api/v1/shares/"+snap.ID, "alice", nil).want(t, 200)
	e.do("GET", snap.URL, "", nil).want(t, 404)
	e.do("GET", "/share/rs_nope", "", nil).want(t, 404)
	if _, err := OpenShare(ctx, st, strings.TrimPrefix(live.URL, "/share/"), time.Now().Add(1000*24*time.Hour)); err != nil {
		t.Errorf("a link that never expires, much later: %v", err)
	}
	var short shareAnswer
	e.do("POST", sp+"/share", "alice", map[string]any{"expires_in": "1h"}).want(t, 201).decode(t, &short)
	if _, err := OpenShare(ctx, st, short.Token, time.Now().Add(2*time.Hour)); !errors.Is(err, ErrNoShare) {
		t.Errorf("a link past its expiry: %v", err)
	}
	e.do("POST", sp+"/share", "alice", map[string]any{"expires_in": "soon"}).wantError(t, 400)
	e.do("DELETE", sp, "alice", nil).want(t, 200)
	e.do("GET", live.URL, "", nil).want(t, 404)

	page, err := audit.Read(ctx, st, audit.Query{Action: audit.ActionShare})
	if err != nil || len(page.Events) != 4 || page.Events[1].Detail["revoked"] != "true" {
		t.Errorf("the audit log's shares: %+v, %v", page.Events, err)
	}

	// Sharing off: nothing made, no link opens.
	off := newEnv(t, st, Options{RateLimit: -1, NoShare: true}, nil)
	id2 := off.newConv("alice", msg("user", "x"))
	off.do("POST", "/api/v1/sessions/"+id2+"/share", "alice", map[string]any{}).wantError(t, 403)
	e.do("POST", "/api/v1/sessions/"+id2+"/share", "alice", map[string]any{}).want(t, 201).decode(t, &short)
	off.do("GET", short.URL, "", nil).want(t, 404)
	e.do("GET", short.URL, "", nil).want(t, 200)
}
