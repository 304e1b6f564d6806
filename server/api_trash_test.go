package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestTrashAPI checks the trash through /api/v1 and the Conversations
// API: a DELETE answers as before and the session is then a 404 on every
// route and in no list or search, but in GET /api/v1/trash; a restore
// brings it back as it was; purge=true deletes it for good; another
// user's trash is not reachable.
func TestTrashAPI(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "walrus hello"), msg("assistant", "hi"))
	key := recall.Key{Project: "user.alice", Session: id}
	sp, cp := "/api/v1/sessions/"+id, "/v1/conversations/"+id
	e.do("PATCH", sp, "alice", `{"title":"Walrus","labels":["x"]}`).want(t, http.StatusOK)
	before, beforeLog, err := e.st.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	// The Conversations API's DELETE: OpenAI's answer, then 404s.
	var del struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}
	e.do("DELETE", cp, "alice", nil).want(t, http.StatusOK).decode(t, &del)
	if del.ID != id || del.Object != "conversation.deleted" || !del.Deleted {
		t.Fatalf("delete answer %+v", del)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", cp, ""}, {"GET", cp + "/items", ""}, {"POST", cp + "/items", `{"items":[{"role":"user","content":"x"}]}`},
		{"POST", cp, `{"metadata":{}}`}, {"DELETE", cp, ""},
		{"GET", sp, ""}, {"PATCH", sp, `{"pinned":true}`}, {"GET", sp + "/entries", ""}, {"GET", sp + "/export", ""}, {"GET", sp + "/export?format=jsonl", ""}, {"GET", sp + "/export?format=markdown", ""},
		{"POST", sp + "/rewind", `{"to":null}`}, {"POST", sp + "/redo", ""},
		{"GET", sp + "/usage", ""}, {"GET", sp + "/subagents", ""}, {"DELETE", sp, ""},
		{"POST", "/v1/responses", `{"model":"m","input":"x","conversation":"` + id + `"}`},
	} {
		if got := e.do(r.method, r.path, "alice", r.body).StatusCode; got != http.StatusNotFound && !(r.path == "/v1/responses" && got == http.StatusBadRequest) {
			t.Errorf("%s %s of a session in the trash: %d, want 404", r.method, r.path, got)
		}
	}
	if m, err := e.st.Stat(ctx, key); err != nil || m.Trashed.IsZero() || m.LastSeq != before.LastSeq+1 {
		t.Fatalf("the session after DELETE and refused writes: %+v, %v", m, err)
	}
	var list struct {
		Data []struct {
			ID      string  `json:"id"`
			Trashed *string `json:"trashed"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/sessions", "alice", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("the session list holds a session in the trash: %+v", list.Data)
	}
	e.do("GET", "/api/v1/search?q=walrus", "alice", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("search finds a session in the trash: %+v", list.Data)
	}
	e.do("GET", "/api/v1/trash", "alice", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 1 || list.Data[0].ID != id || list.Data[0].Trashed == nil {
		t.Fatalf("trash: %+v", list.Data)
	}
	e.do("GET", "/api/v1/trash", "bob", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("bob's trash holds alice's session: %+v", list.Data)
	}
	e.do("POST", sp+"/restore", "bob", nil).wantError(t, http.StatusNotFound)

	// Restored as it was: the log grew by the trash and restore entries.
	e.do("POST", sp+"/restore", "alice", nil).want(t, http.StatusOK)
	after, afterLog, err := e.st.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Title != before.Title || after.ItemCount != before.ItemCount || len(afterLog) != len(beforeLog)+2 || !after.Trashed.IsZero() {
		t.Fatalf("restored %+v (%d entries), was %+v (%d)", after, len(afterLog), before, len(beforeLog))
	}
	e.do("GET", cp+"/items", "alice", nil).want(t, http.StatusOK)
	e.do("POST", sp+"/restore", "alice", nil).wantError(t, http.StatusNotFound)

	// purge=true deletes for good, from the trash too.
	e.do("DELETE", sp, "alice", nil).want(t, http.StatusOK)
	e.do("DELETE", sp+"?purge=maybe", "alice", nil).wantError(t, http.StatusBadRequest)
	e.do("DELETE", sp+"?purge=true", "alice", nil).want(t, http.StatusOK)
	if _, err := e.st.Stat(ctx, key); err == nil {
		t.Fatal("purge=true left the session")
	}
	e.do("DELETE", sp+"?purge=true", "alice", nil).wantError(t, http.StatusNotFound)
}
