package export_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/conversations"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// The JSON export is an item list the official client decodes: the view's
// items in order, each the stored bytes but for an "id" added to those
// without one, with first_id and last_id naming the ends.
func TestJSONIsAConversationItemList(t *testing.T) {
	s := newLog(recall.Key{Project: "p", Session: "j"}).
		item(recall.Message("user", "hi <there> & \u2028")).
		item(recall.Item(`{"type":"reasoning","id":"rs_own","summary":[]}`)).
		item(recall.Item("{\n  \"type\": \"function_call\", \"call_id\": \"c1\", \"name\": \"ls\", \"arguments\": \"{}\"\n}")).
		item(recall.Item(`{"type":"function_call_output","call_id":"c1","output":"a.go"}`)).
		item(recall.Item(`{}`)).
		item(recall.Message("assistant", "gone")).
		payload(recall.KindPop, recall.ItemRef{Seq: 6}).
		item(recall.Item(`{"type":"message","role":"assistant","id":7,"content":"odd id"}`)).
		session()
	var out bytes.Buffer
	if err := export.JSON(&out, s); err != nil {
		t.Fatal(err)
	}
	var list conversations.ConversationItemList
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("openai-go cannot decode the export: %v\n%s", err, out.Bytes())
	}
	wantIDs := []string{"recall-1", "rs_own", "recall-3", "recall-4", "recall-5", "7"}
	if len(list.Data) != len(wantIDs) {
		t.Fatalf("%d items, want %d:\n%s", len(list.Data), len(wantIDs), out.Bytes())
	}
	if string(list.Object) != "list" || list.FirstID != "recall-1" || list.LastID != "7" || list.HasMore {
		t.Errorf("list = object %q first %q last %q has_more %v", list.Object, list.FirstID, list.LastID, list.HasMore)
	}
	var raw struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	view := s.Items()
	for i, it := range list.Data {
		if it.ID != wantIDs[i] {
			t.Errorf("item %d id %q, want %q", i, it.ID, wantIDs[i])
		}
		want := []byte(view[i].Item)
		if wantIDs[i] != "7" && wantIDs[i] != "rs_own" {
			want = append([]byte(`{"id":"`+wantIDs[i]+`"`+map[bool]string{true: "", false: ","}[len(want) == 2]), want[1:]...)
		}
		if !bytes.Equal(raw.Data[i], want) {
			t.Errorf("item %d:\n got %s\nwant %s", i, raw.Data[i], want)
		}
	}
	if list.Data[0].Type != "message" || list.Data[2].Type != "function_call" || list.Data[2].AsFunctionCall().CallID != "c1" {
		t.Errorf("items decode as %q, %q", list.Data[0].Type, list.Data[2].Type)
	}
}

// An empty session is an empty list, still one the client decodes.
func TestJSONEmpty(t *testing.T) {
	s := newLog(recall.Key{Project: "p", Session: "e"}).add(recall.KindCreate, "").session()
	var out bytes.Buffer
	if err := export.JSON(&out, s); err != nil {
		t.Fatal(err)
	}
	var list conversations.ConversationItemList
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list.Data) != 0 || list.FirstID != "" {
		t.Errorf("empty export %s: %+v, %v", out.Bytes(), list, err)
	}
	if !json.Valid(out.Bytes()) {
		t.Errorf("not JSON: %s", out.Bytes())
	}
}
