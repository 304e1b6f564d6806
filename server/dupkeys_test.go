package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/conversations"

	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	oaiprov "github.com/recallkit/recall/provider/openai"
)

// TestItemDuplicateKeys: an item that names a member twice (the server
// reads the first "id", a client's JSON parser the last) is refused by
// the Conversations API and as the Responses API's input, however the
// name is spelled; one in an upstream's output is stored as a reader
// takes it (the last), so an id the server reserves never gets through
// and no two items show one id.
func TestItemDuplicateKeys(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	e := newRespEnv(t, st, oaiprov.APIResponses)
	conv := e.newConversation(t)
	items := "/v1/conversations/" + conv + "/items"
	for _, c := range []struct{ path, body, param string }{
		{items, `{"items":[{"role":"user","content":"a","id":"dk","id":"recall-2"}]}`, "items[0]"},
		{items, `{"items":[{"role":"user","content":"a"},{"role":"user","content":"b","id":"dk","\u0069d":"recall-3"}]}`, "items[1]"},
		{items, `{"items":[{"role":"user","role":"assistant","content":"a"}]}`, "items[0]"},
		{"/v1/conversations", `{"items":[{"role":"user","content":"a","id":"dk","id":"recall-1"}]}`, "items[0]"},
		{"/v1/responses", `{"model":"m","conversation":"` + conv + `","input":[{"type":"message","role":"user","content":"a","id":"dk","id":"recall-2"}]}`, "input[0]"},
	} {
		code, _, body := raw(t, e.srv, "POST", c.path, c.body)
		var ae struct {
			Error struct{ Message, Param string }
		}
		_ = json.Unmarshal([]byte(body), &ae)
		if code != http.StatusBadRequest || ae.Error.Param != c.param || !strings.Contains(ae.Error.Message, "appears twice") {
			t.Errorf("POST %s %s: %d %s; want a 400 of %s", c.path, c.body, code, body, c.param)
		}
	}
	if got := e.items(t, conv); len(got) != 0 {
		t.Fatalf("refused items were stored: %s", got)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests went upstream", n)
	}

	// An upstream's output item with two ids, the last reserved.
	e.up.Enqueue(fakeopenai.Reply{Text: "hi", Extra: []json.RawMessage{json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"id":"recall-1"}`)}})
	if _, err := e.c.Responses.New(context.Background(), textParams(conv, "Hello.")); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	iter := e.c.Conversations.Items.ListAutoPaging(context.Background(), conv, conversations.ItemListParams{})
	for iter.Next() {
		id := iter.Current().ID
		if ids[id] {
			t.Errorf("id %q twice in the conversation", id)
		}
		ids[id] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for _, it := range e.items(t, conv) {
		if strings.Count(string(it), `"id"`) > 1 {
			t.Errorf("stored with a member twice: %s", it)
		}
	}
}
