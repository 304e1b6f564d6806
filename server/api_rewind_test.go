package server

import (
	"slices"
	"testing"

	"github.com/recallkit/recall/memstore"
)

// TestRewindRedoAPI: POST …/rewind sets the view back to just after an
// item named by its Conversations API id, or empties it; POST …/redo
// brings the items back; bad requests are 400s naming 'to', another
// user's session is a 404, and nothing to redo is a 409.
func TestRewindRedoAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "one"), msg("assistant", "two"), msg("user", "three"))
	sp := "/api/v1/sessions/" + id
	type item struct {
		ID      string `json:"id"`
		Content string `json:"content"`
	}
	view := func() []string { // the items' texts, oldest first
		var page struct {
			Data []item `json:"data"`
		}
		e.do("GET", "/v1/conversations/"+id+"/items?order=asc", "alice", nil).want(t, 200).decode(t, &page)
		var texts []string
		for _, it := range page.Data {
			texts = append(texts, it.Content)
		}
		return texts
	}
	before := view()
	if len(before) != 3 {
		t.Fatalf("the conversation holds %q, want 3 items", before)
	}
	var first struct {
		Data []item `json:"data"`
	}
	e.do("GET", "/v1/conversations/"+id+"/items?order=asc&limit=1", "alice", nil).want(t, 200).decode(t, &first)

	var got viewChange
	e.do("POST", sp+"/rewind", "alice", map[string]any{"to": first.Data[0].ID}).want(t, 200).decode(t, &got)
	if got != (viewChange{"session.rewind", id, 2}) {
		t.Errorf("rewind answered %+v", got)
	}
	if v := view(); len(v) != 1 || v[0] != before[0] {
		t.Errorf("after the rewind the view is %q, want %q", v, before[:1])
	}
	e.do("POST", sp+"/redo", "alice", nil).want(t, 200).decode(t, &got)
	if got != (viewChange{"session.redo", id, 2}) {
		t.Errorf("redo answered %+v", got)
	}
	if after := view(); !slices.Equal(after, before) {
		t.Fatalf("after the redo the view is %q, want %q", after, before)
	}
	if ae := e.do("POST", sp+"/redo", "alice", nil).wantError(t, 409); ae.Error.Code != "nothing_to_redo" {
		t.Errorf("a second redo: %+v", ae)
	}

	for _, body := range []any{map[string]any{}, map[string]any{"to": 5}, map[string]any{"to": "msg_none"}} {
		if ae := e.do("POST", sp+"/rewind", "alice", body).wantError(t, 400); ae.Error.Param != "to" {
			t.Errorf("rewind with %v: %+v, want a 400 naming 'to'", body, ae)
		}
	}
	e.do("POST", sp+"/rewind", "bob", map[string]any{"to": nil}).wantError(t, 404)
	e.do("POST", sp+"/redo", "bob", nil).wantError(t, 404)
	if v := view(); len(v) != 3 {
		t.Errorf("refused requests changed the view to %q", v)
	}

	e.do("POST", sp+"/rewind", "alice", map[string]any{"to": nil}).want(t, 200).decode(t, &got)
	if got.Items != 3 || len(view()) != 0 {
		t.Errorf("rewind to null answered %+v, view %q; want 3 items out, an empty view", got, view())
	}
}
