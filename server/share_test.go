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

// readCounter counts the Items calls of a store: the reads of records.
type readCounter struct {
	recall.Store
	items int
}

func (c *readCounter) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	c.items++
	return c.Store.Items(ctx, key, limit)
}

// TestShareIndex: a user's links are listed a page at a time from their
// index alone, reading no link's record; a link of an earlier version
// (its record alone) is indexed by IndexShares, then listed and revoked
// as the others; an index entry left without its record (a crash in a
// revoke) is revoked again cleanly; another user's revoke is a 404.
func TestShareIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &readCounter{Store: memstore.New(memstore.Options{})}
	key := recall.Key{Project: User{Name: "alice"}.Project(), Session: "s1"}
	if err := recall.NewSession(st, key).AddItems(ctx, recall.Message("user", "hi")); err != nil {
		t.Fatal(err)
	}
	var made []Share
	for range 3 {
		_, sh, err := CreateShare(ctx, st, "alice", key, ShareOptions{Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, sh)
	}
	// A link as an earlier version made it: the record, no index entry.
	_, legacy, err := CreateShare(ctx, st, "alice", key, ShareOptions{Live: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Remove(ctx, shareIndex("alice", legacy.ID)); err != nil {
		t.Fatal(err)
	}
	list := func() []Share {
		t.Helper()
		var all []Share
		st.items = 0
		for cursor := ""; ; {
			p, err := ListSharePage(ctx, st, "alice", 1, cursor)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Shares) > 1 {
				t.Fatalf("a page of 1 holds %d links", len(p.Shares))
			}
			all = append(all, p.Shares...)
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		if st.items != 0 {
			t.Errorf("listing read %d records", st.items)
		}
		return all
	}
	if got := list(); len(got) != 3 {
		t.Fatalf("before IndexShares: %d links listed, want 3", len(got))
	}
	if err := IndexShares(ctx, st); err != nil {
		t.Fatal(err)
	}
	got := list()
	if len(got) != 4 {
		t.Fatalf("after IndexShares: %d links listed, want 4", len(got))
	}
	for _, sh := range got {
		want := legacy
		for _, m := range made {
			if m.ID == sh.ID {
				want = m
			}
		}
		if sh.ID != want.ID || sh.User != "alice" || sh.Project != key.Project || sh.Session != key.Session ||
			!sh.Created.Equal(want.Created) || !sh.Expires.Equal(want.Expires) || sh.AtSeq != want.AtSeq {
			t.Errorf("listed %+v, made %+v", sh, want)
		}
	}
	if _, err := RevokeShare(ctx, st, "bob", legacy.ID); !errors.Is(err, ErrNoShare) {
		t.Errorf("bob revokes alice's link: %v", err)
	}
	if _, err := RevokeShare(ctx, st, "alice", legacy.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, recall.Key{Project: ShareProject, Session: shareHash("x")}); !errors.Is(err, recall.ErrNotFound) {
		t.Fatal(err)
	}
	// A revoke that died between its two removals: the entry alone.
	hashKey := func(id string) recall.Key {
		m, err := st.Stat(ctx, shareIndex("alice", id))
		if err != nil {
			t.Fatal(err)
		}
		return recall.Key{Project: ShareProject, Session: m.Metadata["hash"]}
	}
	if err := st.Remove(ctx, hashKey(made[0].ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := RevokeShare(ctx, st, "alice", made[0].ID); err != nil {
		t.Errorf("revoking the entry of a removed record: %v", err)
	}
	if got := list(); len(got) != 2 {
		t.Errorf("after two revokes: %d links listed, want 2", len(got))
	}
	if _, err := RevokeShare(ctx, st, "alice", made[0].ID); !errors.Is(err, ErrNoShare) {
		t.Errorf("a second revoke: %v", err)
	}
}
