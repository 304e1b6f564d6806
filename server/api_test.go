package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
)

// ids returns the ids of a session list, in order.
func ids(ss []session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func TestAPIListSessions(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{RateLimit: -1}, nil)
			ctx := context.Background()
			key := func(user, id string) recall.Key { return recall.Key{Project: User{Name: user}.Project(), Session: id} }
			// Seven sessions of alice, created oldest first, so the
			// newest-activity-first order is their reverse.
			var made []string
			for i := range 7 {
				made = append(made, e.newConv("alice", msg("user", fmt.Sprint("hello ", i))))
			}
			bobs := e.newConv("bob", msg("user", "bob's"))
			if _, err := recall.NewSession(e.st, key("alice", made[1])).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				t.Fatal(err)
			}
			if _, err := recall.NewSession(e.st, key("alice", made[5])).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
				t.Fatal(err)
			}
			if _, err := recall.NewSession(e.st, key("alice", made[3])).SetTitle(ctx, "Quarterly Report", recall.TitleUser); err != nil {
				t.Fatal(err)
			}

			// Pages of 2: the pinned one first, then the rest newest first,
			// each once, the archived one left out.
			var got []string
			cursor := ""
			for page := 0; ; page++ {
				var l sessionList
				e.do("GET", "/api/v1/sessions?limit=2&cursor="+url.QueryEscape(cursor), "alice", nil).want(t, http.StatusOK).decode(t, &l)
				if l.Object != "list" || l.HasMore != (l.NextCursor != "") {
					t.Fatalf("page %d: %+v", page, l)
				}
				for _, s := range l.Data {
					if s.User != "alice" || s.Object != "session" {
						t.Fatalf("session %+v", s)
					}
				}
				got = append(got, ids(l.Data)...)
				if !l.HasMore {
					break
				}
				cursor = l.NextCursor
				if page > 10 {
					t.Fatal("paging does not end")
				}
			}
			want := []string{made[1], made[6], made[4], made[3], made[2], made[0]}
			if !slices.Equal(got, want) {
				t.Fatalf("listed %v,\nwant     %v", got, want)
			}

			var l sessionList
			e.do("GET", "/api/v1/sessions?archived=true&limit=100", "alice", nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Data) != 7 || l.HasMore || l.Data[0].ID != made[1] || !l.Data[0].Pinned {
				t.Fatalf("with archived: %v", ids(l.Data))
			}
			e.do("GET", "/api/v1/sessions?title=quarterly", "alice", nil).want(t, http.StatusOK).decode(t, &l)
			if !slices.Equal(ids(l.Data), []string{made[3]}) || l.Data[0].Title != "Quarterly Report" {
				t.Fatalf("title filter: %+v", l.Data)
			}
			e.do("GET", "/api/v1/sessions", "bob", nil).want(t, http.StatusOK).decode(t, &l)
			if !slices.Equal(ids(l.Data), []string{bobs}) {
				t.Fatalf("bob lists %v", ids(l.Data))
			}

			// An admin lists one user's, or every user's (never the server's
			// own projects: tokens and idempotency records).
			e.do("GET", "/api/v1/sessions?user=bob", "root", nil).want(t, http.StatusOK).decode(t, &l)
			if !slices.Equal(ids(l.Data), []string{bobs}) {
				t.Fatalf("root lists bob's: %v", ids(l.Data))
			}
			e.do("GET", "/api/v1/sessions?all=true&limit=3", "root", nil).want(t, http.StatusOK).decode(t, &l)
			all := ids(l.Data)
			for l.HasMore {
				e.do("GET", "/api/v1/sessions?all=true&limit=3&cursor="+url.QueryEscape(l.NextCursor), "root", nil).want(t, http.StatusOK).decode(t, &l)
				all = append(all, ids(l.Data)...)
			}
			if len(all) != 7 || !slices.Contains(all, bobs) || all[0] != made[1] {
				t.Fatalf("root lists all: %v", all)
			}
			// A user may not.
			e.do("GET", "/api/v1/sessions?all=true", "alice", nil).wantError(t, http.StatusForbidden)
			e.do("GET", "/api/v1/sessions?user=bob", "alice", nil).wantError(t, http.StatusForbidden)
			e.do("GET", "/api/v1/sessions?user=alice", "alice", nil).want(t, http.StatusOK)

			for _, bad := range []string{"limit=0", "limit=101", "limit=x", "archived=maybe", "q=%22unterminated", "user=../x", "cursor=garbage"} {
				e.do("GET", "/api/v1/sessions?"+bad, "alice", nil).wantError(t, http.StatusBadRequest)
			}
			// A cursor the store cannot read is refused in the API's words,
			// never the store's.
			sub := e.newConv("alice")
			for _, path := range []string{"/api/v1/sessions?cursor=bogus", "/api/v1/sessions/" + sub + "/subagents?cursor=bogus"} {
				ae := e.do("GET", path, "alice", nil).wantError(t, http.StatusBadRequest)
				if ae.Error.Param != "cursor" || ae.Error.Message != "Invalid 'cursor': not one this server gave." {
					t.Errorf("GET %s: %+v", path, ae.Error)
				}
			}
		})
	}
}

func TestAPISessionLifecycle(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{RateLimit: -1}, nil)
			id := e.newConv("alice", msg("user", "one"), msg("assistant", "two"))
			p := "/api/v1/sessions/" + id

			var s session
			e.do("GET", p, "alice", nil).want(t, http.StatusOK).decode(t, &s)
			if s.ID != id || s.ItemCount != 2 || s.Pinned || s.Archived || len(s.Labels) != 0 || s.Metadata == nil {
				t.Fatalf("session %+v", s)
			}
			e.do("PATCH", p, "alice", map[string]any{"title": "Plans", "pinned": true, "labels": []string{"work", "q3"}}).want(t, http.StatusOK).decode(t, &s)
			if s.Title != "Plans" || s.TitleSource != "user" || !s.Pinned || !slices.Equal(s.Labels, []string{"work", "q3"}) {
				t.Fatalf("after patch %+v", s)
			}
			e.do("PATCH", p, "alice", map[string]any{"pinned": false, "archived": true, "labels": []string{}}).want(t, http.StatusOK).decode(t, &s)
			if s.Pinned || !s.Archived || len(s.Labels) != 0 || s.Title != "Plans" {
				t.Fatalf("after second patch %+v", s)
			}
			e.do("GET", p, "alice", nil).want(t, http.StatusOK).decode(t, &s)
			if !s.Archived || s.Title != "Plans" {
				t.Fatalf("read back %+v", s)
			}

			// Bad updates write nothing.
			before := s.LastSeq
			for _, bad := range []string{`{}`, `{"title":7}`, `{"labels":[""]}`, `[1]`, `{"pinned":"yes"}`, `not json`, `{"title":"` + strings.Repeat("x", 2000) + `"}`} {
				e.do("PATCH", p, "alice", bad).wantError(t, http.StatusBadRequest)
			}
			e.do("GET", p, "alice", nil).want(t, http.StatusOK).decode(t, &s)
			if s.LastSeq != before {
				t.Fatalf("a refused update wrote: last seq %d, was %d", s.LastSeq, before)
			}
			// bob cannot touch it; nor can an admin read or change it.
			for _, u := range []string{"bob", "root"} {
				e.do("PATCH", p, u, `{"pinned":true}`).wantError(t, http.StatusNotFound)
				e.do("GET", p+"/usage", u, nil).wantError(t, http.StatusNotFound)
			}
			for _, bad := range []string{"..%2Fx", "a%00b", strings.Repeat("x", 200)} {
				e.do("GET", "/api/v1/sessions/"+bad, "alice", nil).wantError(t, http.StatusNotFound)
			}

			// Usage totals.
			ctx := context.Background()
			key := recall.Key{Project: "user.alice", Session: id}
			e2 := recall.Message("assistant", "three").Entry()
			e2.Usage = &recall.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
			if _, err := e.st.Append(ctx, key, recall.IfExists(), e2); err != nil {
				t.Fatal(err)
			}
			var u struct {
				Object string `json:"object"`
				ID     string `json:"id"`
				recall.Usage
			}
			e.do("GET", p+"/usage", "alice", nil).want(t, http.StatusOK).decode(t, &u)
			if u.ID != id || u.Usage != (recall.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}) {
				t.Fatalf("usage %+v", u)
			}

			// Delete: bob gets a 404, and so does an admin without ?user=;
			// alice or an admin naming her removes it.
			e.do("DELETE", p, "bob", nil).wantError(t, http.StatusNotFound)
			e.do("DELETE", p+"?user=alice", "bob", nil).wantError(t, http.StatusNotFound)
			e.do("DELETE", p, "root", nil).wantError(t, http.StatusNotFound)
			e.do("DELETE", p+"?user=alice", "root", nil).want(t, http.StatusOK)
			e.do("GET", p, "alice", nil).wantError(t, http.StatusNotFound)
			e.do("DELETE", p, "alice", nil).wantError(t, http.StatusNotFound)
			other := e.newConv("alice")
			var del struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Deleted bool   `json:"deleted"`
			}
			e.do("DELETE", "/api/v1/sessions/"+other, "alice", nil).want(t, http.StatusOK).decode(t, &del)
			if del.ID != other || del.Object != "session.deleted" || !del.Deleted {
				t.Fatalf("delete answer %+v", del)
			}
			// A pinned session is deleted only with force=true, as recall rm
			// deletes it only with --force.
			pinned := e.newConv("alice")
			e.do("PATCH", "/api/v1/sessions/"+pinned, "alice", `{"pinned":true}`).want(t, http.StatusOK)
			if ae := e.do("DELETE", "/api/v1/sessions/"+pinned, "alice", nil).wantError(t, http.StatusConflict); ae.Error.Code != "session_pinned" {
				t.Errorf("delete of a pinned session: %+v", ae.Error)
			}
			e.do("DELETE", "/api/v1/sessions/"+pinned+"?force=maybe", "alice", nil).wantError(t, http.StatusBadRequest)
			e.do("GET", "/api/v1/sessions/"+pinned, "alice", nil).want(t, http.StatusOK)
			e.do("DELETE", "/api/v1/sessions/"+pinned+"?force=true", "alice", nil).want(t, http.StatusOK)
			e.do("GET", "/api/v1/sessions/"+pinned, "alice", nil).wantError(t, http.StatusNotFound)
			// A deleted session stays deleted: an update does not bring it
			// back from the trash.
			e.do("PATCH", "/api/v1/sessions/"+other, "alice", `{"pinned":true}`).wantError(t, http.StatusNotFound)
			if m, err := e.st.Stat(ctx, recall.Key{Project: "user.alice", Session: other}); err != nil || m.Trashed.IsZero() || m.Pinned {
				t.Fatalf("a PATCH brought a deleted session back: %+v, %v", m, err)
			}
		})
	}
}

func TestAPIForkEntriesExport(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{RateLimit: -1}, nil)
			id := e.newConv("alice", msg("user", "one"), `{"type":"message","id":"msg_two","role":"assistant","content":"two"}`, msg("user", "three"))
			p := "/api/v1/sessions/" + id

			// The entry log, paged: create, then three items.
			type entryPage struct {
				Data    []recall.Entry `json:"data"`
				LastSeq int64          `json:"last_seq"`
				HasMore bool           `json:"has_more"`
			}
			var pg entryPage
			e.do("GET", p+"/entries?limit=3", "alice", nil).want(t, http.StatusOK).decode(t, &pg)
			if len(pg.Data) != 3 || !pg.HasMore || pg.LastSeq != 3 || pg.Data[0].Kind != recall.KindCreate || pg.Data[0].Seq != 1 {
				t.Fatalf("first page %+v", pg)
			}
			e.do("GET", p+fmt.Sprintf("/entries?after=%d", pg.LastSeq), "alice", nil).want(t, http.StatusOK).decode(t, &pg)
			if len(pg.Data) != 1 || pg.HasMore || pg.Data[0].Seq != 4 || !strings.Contains(string(pg.Data[0].Data), "three") {
				t.Fatalf("second page %+v", pg)
			}
			for _, bad := range []string{"limit=0", "limit=1001", "after=-1", "subpath=../x"} {
				e.do("GET", p+"/entries?"+bad, "alice", nil).wantError(t, http.StatusBadRequest)
			}

			// Fork at an item id (its own id) and at a seq.
			var f session
			e.do("POST", p+"/fork", "alice", `{"at":"msg_two","title":"branch"}`).want(t, http.StatusCreated).decode(t, &f)
			if f.ItemCount != 2 || f.Title != "branch" || f.ForkedFrom == nil || f.ForkedFrom.ID != id || f.ForkedFrom.Seq != 3 || f.ID == id {
				t.Fatalf("fork at msg_two: %+v", f)
			}
			e.do("POST", p+"/fork", "alice", `{"at":2}`).want(t, http.StatusCreated).decode(t, &f)
			if f.ItemCount != 1 || f.ForkedFrom.Seq != 2 {
				t.Fatalf("fork at seq 2: %+v", f)
			}
			e.do("POST", p+"/fork", "alice", `{"at":"recall-4"}`).want(t, http.StatusCreated).decode(t, &f)
			if f.ItemCount != 3 {
				t.Fatalf("fork at a derived id: %+v", f)
			}
			e.do("POST", p+"/fork", "alice", `{}`).want(t, http.StatusCreated).decode(t, &f)
			if f.ItemCount != 3 || !strings.HasPrefix(f.ID, "conv_") {
				t.Fatalf("whole fork: %+v", f)
			}
			// The fork is a conversation of its own under /v1 too.
			r := e.do("GET", "/v1/conversations/"+f.ID+"/items?order=asc", "alice", nil).want(t, http.StatusOK)
			if !bytes.Contains(r.body, []byte("msg_two")) {
				t.Fatalf("fork's items: %s", r.body)
			}
			for _, bad := range []string{`{"at":99}`, `{"at":0}`, `{"at":"msg_none"}`, `{"at":1.5}`, `{"at":true}`, `nope`} {
				e.do("POST", p+"/fork", "alice", bad).wantError(t, http.StatusBadRequest)
			}
			e.do("POST", p+"/fork", "bob", `{}`).wantError(t, http.StatusNotFound)

			// Export as the item list, and as the raw log.
			var list struct {
				Object  string            `json:"object"`
				Data    []json.RawMessage `json:"data"`
				FirstID string            `json:"first_id"`
				LastID  string            `json:"last_id"`
				HasMore bool              `json:"has_more"`
			}
			e.do("GET", p+"/export", "alice", nil).want(t, http.StatusOK).decode(t, &list)
			if list.Object != "list" || len(list.Data) != 3 || list.FirstID != "recall-2" || list.LastID != "recall-4" || list.HasMore {
				t.Fatalf("json export %+v", list)
			}
			r = e.do("GET", p+"/export?format=jsonl", "alice", nil).want(t, http.StatusOK)
			if ct := r.Header.Get("Content-Type"); ct != "application/jsonl" {
				t.Fatalf("jsonl Content-Type %q", ct)
			}
			_, log, err := e.st.Load(context.Background(), recall.Key{Project: "user.alice", Session: id})
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(r.body))
			n := 0
			for sc.Scan() {
				var got recall.Entry
				if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if n >= len(log) || got.Seq != log[n].Seq || got.Kind != log[n].Kind || !bytes.Equal(got.Data, log[n].Data) {
					t.Fatalf("jsonl line %d: %s", n, sc.Bytes())
				}
				n++
			}
			if n != len(log) {
				t.Fatalf("jsonl has %d lines, the log %d entries", n, len(log))
			}
			e.do("GET", p+"/export?format=pdf", "alice", nil).wantError(t, http.StatusBadRequest)
			e.do("GET", p+"/export?format=jsonl", "bob", nil).wantError(t, http.StatusNotFound)
		})
	}
}

func TestAPISubagents(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "main"))
	ctx := context.Background()
	for _, sub := range []string{"subagents/researcher-1", "subagents/coder-2"} {
		k := recall.Key{Project: "user.alice", Session: id, Subpath: sub}
		if _, err := e.st.Append(ctx, k, recall.Guard{}, recall.ItemEntries(recall.Message("user", "task of "+sub))...); err != nil {
			t.Fatal(err)
		}
	}
	var l struct {
		Data []subagent `json:"data"`
	}
	e.do("GET", "/api/v1/sessions/"+id+"/subagents", "alice", nil).want(t, http.StatusOK).decode(t, &l)
	var subs []string
	for _, s := range l.Data {
		subs = append(subs, s.Subpath)
		if s.ItemCount != 1 {
			t.Fatalf("subagent %+v", s)
		}
	}
	slices.Sort(subs)
	if !slices.Equal(subs, []string{"subagents/coder-2", "subagents/researcher-1"}) {
		t.Fatalf("subagents %v", subs)
	}
	var pg struct {
		Data []recall.Entry `json:"data"`
	}
	e.do("GET", "/api/v1/sessions/"+id+"/entries?subpath=subagents/coder-2", "alice", nil).want(t, http.StatusOK).decode(t, &pg)
	if len(pg.Data) != 1 || !strings.Contains(string(pg.Data[0].Data), "task of subagents/coder-2") {
		t.Fatalf("subagent log %+v", pg.Data)
	}
	e.do("GET", "/api/v1/sessions/"+id+"/subagents", "bob", nil).wantError(t, http.StatusNotFound)
	e.do("GET", "/api/v1/sessions/"+id+"/entries?subpath=subagents/none", "alice", nil).wantError(t, http.StatusNotFound)
}

func TestAPICompact(t *testing.T) {
	// Without a model: a clear error, nothing written.
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "one"))
	ae := e.do("POST", "/api/v1/sessions/"+id+"/compact", "alice", `{}`).wantError(t, http.StatusBadRequest)
	if !strings.Contains(ae.Error.Message, "no") || !strings.Contains(ae.Error.Message, "model") || ae.Error.Code != "no_model" {
		t.Fatalf("no-model answer %+v", ae)
	}

	// With a model on a fake OpenAI server speaking the real wire protocol.
	fake := fakeopenai.New()
	t.Cleanup(fake.Close)
	m, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1, Compactor: &compact.Summarizer{Model: m}}, nil)
	var items []string
	for i := range 8 {
		items = append(items, msg("user", fmt.Sprint("question ", i)), msg("assistant", fmt.Sprint("answer ", i)))
	}
	id = e.newConv("alice", items...)
	fake.Enqueue(fakeopenai.Reply{Text: "the gist of it", Usage: fakeopenai.Usage{Input: 100, Output: 7}})
	var res struct {
		Object string `json:"object"`
		ID     string `json:"id"`
		agent.CompactionResult
	}
	e.do("POST", "/api/v1/sessions/"+id+"/compact", "alice", `{"keep":4,"instructions":"keep the numbers"}`).want(t, http.StatusOK).decode(t, &res)
	if !res.Compacted || res.Before != 16 || res.Kept != 4 || res.After != 5 || res.Summarized != 12 || res.Usage.TotalTokens != 107 {
		t.Fatalf("compaction %+v", res)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Instructions()+string(reqs[0].Body), "keep the numbers") {
		t.Fatalf("the model was asked %+v", reqs)
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	e.do("GET", "/v1/conversations/"+id+"/items?order=asc&limit=100", "alice", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 5 || !bytes.Contains(list.Data[0], []byte("the gist of it")) {
		t.Fatalf("view after compaction: %d items, first %s", len(list.Data), list.Data[0])
	}
	for _, bad := range []string{`{"keep":-1}`, `{"keep":"4"}`, `[]`} {
		e.do("POST", "/api/v1/sessions/"+id+"/compact", "alice", bad).wantError(t, http.StatusBadRequest)
	}
	e.do("POST", "/api/v1/sessions/"+id+"/compact", "bob", `{}`).wantError(t, http.StatusNotFound)

	// A model that fails: a 502 that says so; the session is unchanged.
	fake.Enqueue(fakeopenai.Reply{Status: http.StatusInternalServerError, Error: "model down"})
	var before session
	e.do("GET", "/api/v1/sessions/"+id, "alice", nil).want(t, http.StatusOK).decode(t, &before)
	e.do("POST", "/api/v1/sessions/"+id+"/compact", "alice", `{"keep":0}`).wantError(t, http.StatusBadGateway)
	var after session
	e.do("GET", "/api/v1/sessions/"+id, "alice", nil).want(t, http.StatusOK).decode(t, &after)
	if after.LastSeq != before.LastSeq {
		t.Fatal("a failed compaction wrote")
	}
}
