package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/pagination"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

func userMessage(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func functionCall(id, callID string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCall(`{"q":1}`, callID, "lookup")
	it.OfFunctionCall.ID = param.NewOpt(id)
	return it
}

// text returns the text of a message item as the server sent it.
func text(t *testing.T, it conversations.ConversationItemUnion) string {
	t.Helper()
	if !json.Valid([]byte(it.RawJSON())) {
		t.Fatalf("item is not JSON: %s", it.RawJSON())
	}
	return recall.Item(it.RawJSON()).Text()
}

// TestConversationsAPI drives every route of the Conversations API with
// the official client, over each backend.
func TestConversationsAPI(t *testing.T) {
	eachBackend(t, testConversationsAPI)
}

func testConversationsAPI(t *testing.T, st recall.Store) {
	ctx := context.Background()
	srv := serve(t, st)
	c := client(srv, "")

	// Create without items.
	before := time.Now().Unix()
	empty, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(empty.ID, "conv_") || len(empty.ID) != len("conv_")+48 {
		t.Errorf("id %q, want conv_ and 48 hex digits", empty.ID)
	}
	if empty.Object != "conversation" || empty.CreatedAt < before || empty.CreatedAt > time.Now().Unix() {
		t.Errorf("created %s", empty.RawJSON())
	}
	if md, ok := empty.Metadata.(map[string]any); !ok || len(md) != 0 {
		t.Errorf("metadata %#v, want {}", empty.Metadata)
	}
	got, err := c.Conversations.Get(ctx, empty.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != empty.ID || got.CreatedAt != empty.CreatedAt {
		t.Errorf("get %s, created %s", got.RawJSON(), empty.RawJSON())
	}
	page, err := c.Conversations.Items.List(ctx, empty.ID, conversations.ItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 0 || page.HasMore {
		t.Errorf("empty conversation lists %s", page.RawJSON())
	}

	// Create with items and metadata: an item with an id keeps it, the
	// others get derived ids.
	withItems, err := c.Conversations.New(ctx, conversations.ConversationNewParams{
		Items:    []responses.ResponseInputItemUnionParam{userMessage("one"), userMessage("two"), functionCall("fc_own", "call_1")},
		Metadata: shared.Metadata{"topic": "tests"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if md := withItems.Metadata.(map[string]any); md["topic"] != "tests" || len(md) != 1 {
		t.Errorf("metadata %v", md)
	}
	page, err = c.Conversations.Items.List(ctx, withItems.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 3 || page.HasMore {
		t.Fatalf("list %s", page.RawJSON())
	}
	if page.Data[0].Type != "message" || text(t, page.Data[0]) != "one" || text(t, page.Data[1]) != "two" {
		t.Errorf("messages %s", page.RawJSON())
	}
	if fc := page.Data[2].AsFunctionCall(); fc.ID != "fc_own" || fc.CallID != "call_1" || fc.Name != "lookup" {
		t.Errorf("function call %s", page.Data[2].RawJSON())
	}
	ids := []string{page.Data[0].ID, page.Data[1].ID, page.Data[2].ID}
	if ids[0] == "" || ids[0] == ids[1] || !strings.HasPrefix(ids[0], "recall-") {
		t.Errorf("ids %q", ids)
	}
	if page.JSON.ExtraFields["first_id"].Raw() != `"`+ids[0]+`"` || page.LastID != ids[2] {
		t.Errorf("first/last id of %s", page.RawJSON())
	}

	// Add 250 items in batches of at most 20.
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	const total = 250
	seen := map[string]bool{}
	for start := 0; start < total; start += 20 {
		var batch []responses.ResponseInputItemUnionParam
		for i := start; i < min(start+20, total); i++ {
			batch = append(batch, userMessage(fmt.Sprint(i)))
		}
		added, err := c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: batch})
		if err != nil {
			t.Fatal(err)
		}
		if len(added.Data) != len(batch) || added.HasMore || added.Object != "list" {
			t.Fatalf("add returned %s", added.RawJSON())
		}
		for i, it := range added.Data {
			if text(t, it) != fmt.Sprint(start+i) || seen[it.ID] || it.ID == "" {
				t.Fatalf("added item %d: %s", start+i, it.RawJSON())
			}
			seen[it.ID] = true
		}
		if added.FirstID != added.Data[0].ID || added.LastID != added.Data[len(added.Data)-1].ID {
			t.Errorf("first/last id of %s", added.RawJSON())
		}
	}

	// List every item in both orders with the SDK's auto-pager, at the
	// default page size and at one that does not divide 250.
	idOf := map[int]string{}
	for _, limit := range []int64{0, 7, 100} {
		for _, order := range []conversations.ItemListParamsOrder{conversations.ItemListParamsOrderAsc, conversations.ItemListParamsOrderDesc} {
			p := conversations.ItemListParams{Order: order}
			if limit > 0 {
				p.Limit = param.NewOpt(limit)
			}
			var texts []string
			iter := c.Conversations.Items.ListAutoPaging(ctx, conv.ID, p)
			for iter.Next() {
				it := iter.Current()
				texts = append(texts, text(t, it))
				var n int
				fmt.Sscan(text(t, it), &n)
				if prev, ok := idOf[n]; ok && prev != it.ID {
					t.Errorf("item %d has id %q, earlier %q", n, it.ID, prev)
				}
				idOf[n] = it.ID
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			want := make([]string, total)
			for i := range want {
				want[i] = fmt.Sprint(i)
			}
			if order == conversations.ItemListParamsOrderDesc {
				slices.Reverse(want)
			}
			if !slices.Equal(texts, want) {
				t.Fatalf("limit %d order %s: listed %d items %v..., want each of %d once in order", limit, order, len(texts), texts[:min(10, len(texts))], total)
			}
		}
	}
	// The default order is newest first, 20 items.
	page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 20 || !page.HasMore || text(t, page.Data[0]) != "249" || text(t, page.Data[19]) != "230" {
		t.Errorf("default page: %d items, has_more %v, first %s", len(page.Data), page.HasMore, page.Data[0].RawJSON())
	}

	// Get one item, delete it: the others keep their ids.
	it, err := c.Conversations.Items.Get(ctx, conv.ID, idOf[100], conversations.ItemGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if it.ID != idOf[100] || text(t, *it) != "100" || it.Type != "message" {
		t.Errorf("get item: %s", it.RawJSON())
	}
	after, err := c.Conversations.Items.Delete(ctx, conv.ID, idOf[100])
	if err != nil {
		t.Fatal(err)
	}
	if after.ID != conv.ID || after.Object != "conversation" || after.CreatedAt != conv.CreatedAt {
		t.Errorf("delete item returned %s", after.RawJSON())
	}
	_, err = c.Conversations.Items.Get(ctx, conv.ID, idOf[100], conversations.ItemGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "item_id", "not found")
	_, err = c.Conversations.Items.Delete(ctx, conv.ID, idOf[100])
	wantAPIError(t, err, http.StatusNotFound, "item_id", "not found")
	var left []string
	iter := c.Conversations.Items.ListAutoPaging(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc, Limit: param.NewOpt[int64](100)})
	for iter.Next() {
		n := text(t, iter.Current())
		var i int
		fmt.Sscan(n, &i)
		if iter.Current().ID != idOf[i] {
			t.Errorf("after a delete, item %d has id %q, was %q", i, iter.Current().ID, idOf[i])
		}
		left = append(left, n)
	}
	if iter.Err() != nil || len(left) != total-1 || slices.Contains(left, "100") {
		t.Errorf("after deleting item 100: %d items, err %v", len(left), iter.Err())
	}
	// A page after the deleted item's id goes on from its place.
	page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(idOf[100]), Limit: param.NewOpt[int64](2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || text(t, page.Data[0]) != "99" || text(t, page.Data[1]) != "98" || !page.HasMore {
		t.Errorf("desc after a deleted item: %s", page.RawJSON())
	}
	page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(idOf[100]), Order: conversations.ItemListParamsOrderAsc, Limit: param.NewOpt[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || text(t, page.Data[0]) != "101" || !page.HasMore {
		t.Errorf("asc after a deleted item: %s", page.RawJSON())
	}
	// The oldest item: a desc page after it is empty, an asc page holds the rest.
	page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(idOf[0])})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 0 || page.HasMore || page.LastID != "" {
		t.Errorf("desc after the oldest item: %s", page.RawJSON())
	}

	// Update replaces the metadata.
	up, err := c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"a": "1", "b": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if md := up.Metadata.(map[string]any); len(md) != 2 || md["a"] != "1" {
		t.Errorf("update: %s", up.RawJSON())
	}
	up, err = c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"c": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = c.Conversations.Get(ctx, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range []*conversations.Conversation{up, got} {
		if md := cv.Metadata.(map[string]any); len(md) != 1 || md["c"] != "3" {
			t.Errorf("metadata after the second update: %s, want only c", cv.RawJSON())
		}
	}

	// Delete: gone for the API's clients, and adding items does not
	// bring it back.
	del, err := c.Conversations.Delete(ctx, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	trashed, err := st.Stat(ctx, localKey(conv.ID))
	if err != nil {
		t.Fatal(err)
	}
	trashedAt := trashed.LastSeq
	if del.ID != conv.ID || !del.Deleted || del.Object != "conversation.deleted" {
		t.Errorf("delete: %s", del.RawJSON())
	}
	_, err = c.Conversations.Get(ctx, conv.ID)
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("ghost")}})
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	_, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	_, err = c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"x": "y"}})
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	_, err = c.Conversations.Delete(ctx, conv.ID)
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	// It is in the trash, restorable through /api/v1, and none of the
	// refused calls brought it back or wrote to it.
	if m, err := st.Stat(ctx, localKey(conv.ID)); err != nil || m.Trashed.IsZero() || m.LastSeq != trashedAt {
		t.Errorf("the deleted conversation is not in the trash as it was deleted: %+v, %v (last seq %d then)", m, err, trashedAt)
	}
}

// TestItemsVerbatim checks bytes in, bytes out: the stored item is the
// request's bytes, and the API sends them back with only "id" (and the
// "type" of an easy message) inserted.
func TestItemsVerbatim(t *testing.T) {
	st := backends()[0].open(t)
	srv := serve(t, st)
	c := client(srv, "")
	conv, err := c.Conversations.New(context.Background(), conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	items := []string{
		`{"role":"user",  "content":"h\u00e9llo <b>&amp;</b>", "extra": {"z":1,"a":[1, 2]}}`,
		`{ }`,
		`{"type":"function_call","id":"fc_x","call_id":"c","name":"f","arguments":"{}"}`,
		`{"id":null,"type":"function_call_output","call_id":"c","output":"ok"}`,
	}
	status, _, body := raw(t, srv, "POST", "/v1/conversations/"+conv.ID+"/items", `{"items":[`+strings.Join(items, ",")+`]}`)
	if status != http.StatusOK {
		t.Fatalf("add: %d %s", status, body)
	}
	live, _, err := st.Items(context.Background(), localKey(conv.ID), 0)
	if err != nil || len(live) != 4 {
		t.Fatalf("stored %d items, %v", len(live), err)
	}
	for i, l := range live {
		if string(l.Item) != items[i] {
			t.Errorf("stored item %d is %s, sent %s", i, l.Item, items[i])
		}
	}
	for _, path := range []string{"/v1/conversations/" + conv.ID + "/items?order=asc", "/v1/conversations/" + conv.ID + "/items/fc_x"} {
		_, _, body := raw(t, srv, "GET", path, "")
		for i, want := range []string{
			`{"id":"recall-` + fmt.Sprint(live[0].Ref.Seq) + `","type":"message","role":"user",  "content":"h\u00e9llo <b>&amp;</b>", "extra": {"z":1,"a":[1, 2]}}`,
			`{"id":"recall-` + fmt.Sprint(live[1].Ref.Seq) + `" }`,
			items[2],
			`{"id":"recall-` + fmt.Sprint(live[3].Ref.Seq) + `","type":"function_call_output","call_id":"c","output":"ok"}`,
		} {
			if strings.HasSuffix(path, "fc_x") && i != 2 {
				continue
			}
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: %s\ndoes not hold %s", path, body, want)
			}
		}
	}
}

// TestConversationsErrors sends bad input to every route: each gets
// OpenAI's error shape, and nothing is written.
func TestConversationsErrors(t *testing.T) {
	eachBackend(t, testConversationsErrors)
}

func testConversationsErrors(t *testing.T, st recall.Store) {
	ctx := context.Background()
	srv := serve(t, st)
	c := client(srv, "")
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{userMessage("keep"), functionCall("fc_1", "call_1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	key := localKey(conv.ID)
	before, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	countSessions := func() int {
		p, err := st.List(ctx, key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Sessions)
	}
	sessions := countSessions()
	unchanged := func(what string) {
		t.Helper()
		m, err := st.Stat(ctx, key)
		if err != nil || m.LastSeq != before.LastSeq || m.ItemCount != 2 {
			t.Errorf("%s changed the conversation: %+v, %v", what, m, err)
		}
		if n := countSessions(); n != sessions {
			t.Errorf("%s: %d conversations, want %d", what, n, sessions)
		}
	}
	many := make([]responses.ResponseInputItemUnionParam, 21)
	for i := range many {
		many[i] = userMessage("x")
	}

	// Through the SDK.
	_, err = c.Conversations.Get(ctx, "conv_doesnotexist")
	wantAPIError(t, err, http.StatusNotFound, "conversation_id", "Conversation with id 'conv_doesnotexist' not found")
	for _, bad := range []string{"../" + conv.ID, "a\x00b", strings.Repeat("c", 200)} {
		_, err = c.Conversations.Get(ctx, bad)
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = c.Conversations.Items.New(ctx, bad, conversations.ItemNewParams{Items: many[:1]})
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	}
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: many})
	wantAPIError(t, err, http.StatusBadRequest, "items", "maximum length 20")
	_, err = c.Conversations.New(ctx, conversations.ConversationNewParams{Items: many})
	wantAPIError(t, err, http.StatusBadRequest, "items", "maximum length 20")
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{})
	wantAPIError(t, err, http.StatusBadRequest, "items", "Missing required parameter")
	_, err = c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{})
	wantAPIError(t, err, http.StatusBadRequest, "metadata", "Missing required parameter")
	big := shared.Metadata{}
	for i := range 17 {
		big[fmt.Sprint("k", i)] = "v"
	}
	_, err = c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: big})
	wantAPIError(t, err, http.StatusBadRequest, "metadata", "17 pairs")
	_, err = c.Conversations.New(ctx, conversations.ConversationNewParams{Metadata: big})
	wantAPIError(t, err, http.StatusBadRequest, "metadata", "17 pairs")
	_, err = c.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{strings.Repeat("k", 65): "v"}})
	wantAPIError(t, err, http.StatusBadRequest, "metadata", "at most 64")
	_, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: param.NewOpt[int64](101)})
	wantAPIError(t, err, http.StatusBadRequest, "limit", "between 1 and 100")
	_, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: "sideways"})
	wantAPIError(t, err, http.StatusBadRequest, "order", "'asc' or 'desc'")
	_, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt("msg_nope")})
	wantAPIError(t, err, http.StatusBadRequest, "after", "no item with id 'msg_nope'")
	_, err = c.Conversations.Items.Get(ctx, conv.ID, "msg_nope", conversations.ItemGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "item_id", "Item with id 'msg_nope' not found")
	_, err = c.Conversations.Items.Delete(ctx, conv.ID, "recall-999")
	wantAPIError(t, err, http.StatusNotFound, "item_id", "not found")
	// Item ids: taken, twice in one call, or in the reserved form.
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("x"), functionCall("fc_1", "call_2")}})
	ae := wantAPIError(t, err, http.StatusBadRequest, "items[1].id", "already exists")
	if ae.Code != "duplicate_item_id" {
		t.Errorf("code %q", ae.Code)
	}
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{functionCall("fc_2", "a"), functionCall("fc_2", "b")}})
	wantAPIError(t, err, http.StatusBadRequest, "items[1].id", "Duplicate item id")
	_, err = c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{functionCall("recall-3", "a")}})
	wantAPIError(t, err, http.StatusBadRequest, "items[0].id", "reserved")
	unchanged("bad SDK calls")

	// Raw bodies the SDK would not send.
	items := "/v1/conversations/" + conv.ID + "/items"
	for _, tc := range []struct {
		method, path, body string
		status             int
		param, msg         string
	}{
		{"POST", items, `{"items":[{"role":"user"`, 400, "", "could not parse the JSON body"},
		{"POST", items, `{"items":[{"role":"user"}]} {"x":1}`, 400, "", "could not parse the JSON body"},
		{"POST", items, ``, 400, "", "empty"},
		{"POST", items, `[]`, 400, "", "must be a JSON object"},
		{"POST", items, `{"items":{"role":"user"}}`, 400, "items", "Invalid type for 'items'"},
		{"POST", items, `{"items":[{"role":"user"}, 1]}`, 400, "items[1]", "not a JSON object"},
		{"POST", items, `{"items":["hello"]}`, 400, "items[0]", "not a JSON object"},
		{"POST", items, `{"items":[null]}`, 400, "items[0]", "not a JSON object"},
		{"POST", items, `{"items":[[{"role":"user"}]]}`, 400, "items[0]", "not a JSON object"},
		{"POST", items, `{"items":[{"id":7,"role":"user"}]}`, 400, "items[0].id", "non-empty string"},
		{"POST", items, `{"items":[{"id":"","role":"user"}]}`, 400, "items[0].id", "non-empty string"},
		{"POST", items, `{"items":null}`, 400, "items", "Missing required parameter"},
		{"POST", "/v1/conversations", `{"items":[{"role":"user"}, "x"]}`, 400, "items[1]", "not a JSON object"},
		{"POST", "/v1/conversations", `{"metadata":{"a":1}}`, 400, "metadata", "Invalid type for 'metadata': expected string"},
		{"POST", "/v1/conversations", `{"metadata":"x"}`, 400, "metadata", "Invalid type"},
		{"POST", "/v1/conversations/" + conv.ID, `{"metadata":null}`, 400, "metadata", "Missing required parameter"},
		{"POST", "/v1/conversations/" + conv.ID, `{"metadata":{"a":"\u0000"}}`, 400, "metadata", "not valid UTF-8 text"},
		{"GET", "/v1/conversations/..%2F..%2Fetc%2Fpasswd", ``, 404, "conversation_id", "not found"},
		{"GET", "/v1/conversations/conv%00x/items", ``, 404, "conversation_id", "not found"},
		{"DELETE", "/v1/conversations/..%2F" + conv.ID, ``, 404, "conversation_id", "not found"},
		{"GET", items + "?limit=0", ``, 400, "limit", "between 1 and 100"},
		{"GET", items + "?limit=ten", ``, 400, "limit", "between 1 and 100"},
	} {
		status, hdr, body := raw(t, srv, tc.method, tc.path, tc.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    any     `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s %s %q: body %s is not OpenAI's error shape (%v)", tc.method, tc.path, tc.body, body, err)
			continue
		}
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if status != tc.status || param != tc.param || !strings.Contains(e.Error.Message, tc.msg) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s %q: %d %s, want %d param %q message with %q", tc.method, tc.path, tc.body, status, body, tc.status, tc.param, tc.msg)
		}
	}
	unchanged("bad bodies")
}

// TestBodyLimit checks that a body over Options.MaxBodyBytes is a 413 that
// writes nothing, on every POST route, and that the default limit takes
// an item of the store's default item size.
func TestBodyLimit(t *testing.T) {
	st := backends()[0].open(t)
	srv := serve(t, st, serverOptions(1024))
	c := client(srv, "")
	conv, err := c.Conversations.New(context.Background(), conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"items":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`
	for _, path := range []string{"/v1/conversations", "/v1/conversations/" + conv.ID + "/items", "/v1/conversations/" + conv.ID} {
		for _, key := range []string{"", "same-key"} {
			status, _, body := raw(t, srv, "POST", path, big, "Idempotency-Key", key)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, "limit of 1024 bytes") {
				t.Errorf("POST %s (key %q): %d %s, want 413", path, key, status, body)
			}
		}
	}
	m, err := st.Stat(context.Background(), localKey(conv.ID))
	if err != nil || m.ItemCount != 0 || m.LastSeq != 1 {
		t.Errorf("after refused bodies: %+v, %v", m, err)
	}

	// The default limit: an item of 1 MiB goes through.
	srv = serve(t, st)
	item := `{"role":"user","content":"` + strings.Repeat("b", 1<<20) + `"}`
	status, _, body := raw(t, srv, "POST", "/v1/conversations/"+conv.ID+"/items", `{"items":[`+item+`]}`)
	if status != http.StatusOK {
		t.Errorf("a 1 MiB item: %d %.200s", status, body)
	}
}

// TestItemIDsSurviveRestart checks that item ids, derived and own, are the
// same after the server and the file store are opened again, and after
// items are deleted.
func TestItemIDsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	list := func(c openai.Client, id string) []string {
		t.Helper()
		var ids []string
		iter := c.Conversations.Items.ListAutoPaging(ctx, id, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
		for iter.Next() {
			ids = append(ids, iter.Current().ID)
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	c := client(serve(t, openFileStore(t, dir)), "")
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("a"), functionCall("fc_a", "1"), userMessage("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("c"), functionCall("fc_b", "2")}}); err != nil {
		t.Fatal(err)
	}
	first := list(c, conv.ID)
	if len(first) != 5 || first[1] != "fc_a" || first[4] != "fc_b" {
		t.Fatalf("ids %q", first)
	}

	c = client(serve(t, openFileStore(t, dir)), "")
	if again := list(c, conv.ID); !slices.Equal(again, first) {
		t.Errorf("after a restart the ids are %q, were %q", again, first)
	}
	if _, err := c.Conversations.Items.Delete(ctx, conv.ID, first[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversations.Items.Delete(ctx, conv.ID, "fc_a"); err != nil {
		t.Fatal(err)
	}
	c = client(serve(t, openFileStore(t, dir)), "")
	if again := list(c, conv.ID); !slices.Equal(again, first[2:]) {
		t.Errorf("after deletes and a restart the ids are %q, want %q", again, first[2:])
	}
	// A deleted own id may be used again; it is then unique once more.
	if _, err := c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{functionCall("fc_a", "3")}}); err != nil {
		t.Errorf("reusing a deleted item's id: %v", err)
	}
	it, err := c.Conversations.Items.Get(ctx, conv.ID, "fc_a", conversations.ItemGetParams{}, option.WithMaxRetries(0))
	if err != nil || it.AsFunctionCall().CallID != "3" {
		t.Errorf("get the reused id: %v", err)
	}
}

// TestListReadsLittle checks that every page of a 10,000-item
// conversation, in either order and after any item, and any item got by
// its id, read only the items they answer with (the store reads the page
// by position: recall.StoreSession.ReadItems), not the whole conversation.
func TestListReadsLittle(t *testing.T) {
	ctx := context.Background()
	st, c, conv := countedConversation(t, 10000)
	reads := func(what string, max int64, call func() error) {
		t.Helper()
		st.items.Store(0)
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := st.items.Load(); n > max {
			t.Errorf("%s read %d items, want at most %d", what, n, max)
		}
	}
	var page *pagination.ConversationCursorPage[conversations.ConversationItemUnion]
	reads("the newest page", 20, func() (err error) {
		page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
		return err
	})
	reads("the second page", 20, func() (err error) {
		page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(page.LastID)})
		return err
	})
	if len(page.Data) != 20 || text(t, page.Data[0]) != "9979" {
		t.Errorf("second page starts at %s", page.Data[0].RawJSON())
	}
	reads("an asc page after an item near the end", 20, func() (err error) {
		page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(page.LastID), Order: conversations.ItemListParamsOrderAsc})
		return err
	})
	if len(page.Data) != 20 || text(t, page.Data[0]) != "9961" || text(t, page.Data[19]) != "9980" || !page.HasMore {
		t.Errorf("asc page starts at %s", page.Data[0].RawJSON())
	}
	reads("getting an item near the end", 1, func() error {
		_, err := c.Conversations.Items.Get(ctx, conv.ID, page.Data[0].ID, conversations.ItemGetParams{})
		return err
	})
	var oldest string
	reads("the first asc page", 1, func() error {
		p, err := c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc, Limit: param.NewOpt[int64](1)})
		if err == nil {
			oldest = p.Data[0].ID
		}
		return err
	})
	reads("the oldest item", 1, func() error {
		it, err := c.Conversations.Items.Get(ctx, conv.ID, oldest, conversations.ItemGetParams{})
		if err == nil && text(t, *it) != "0" {
			t.Errorf("oldest item %s", it.RawJSON())
		}
		return err
	})

	// Items with ids of their own: the server remembers where the items
	// it answered with sit, so the page after the newest page's last id
	// reads that item, then its own 20.
	batch := make([]recall.Item, 1000)
	for i := range batch {
		batch[i] = recall.Item(fmt.Sprintf(`{"type":"message","id":"msg_%d","role":"user","content":"own %d"}`, i, i))
	}
	if _, err := st.Append(ctx, localKey(conv.ID), recall.IfExists(), recall.ItemEntries(batch...)...); err != nil {
		t.Fatal(err)
	}
	reads("the newest page of own ids", 20, func() (err error) {
		page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
		return err
	})
	lastID := page.LastID
	reads("the page after an own id", 1+20, func() (err error) {
		page, err = c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(lastID)})
		return err
	})
	if page.Data[0].ID != "msg_979" || page.LastID != "msg_960" {
		t.Errorf("the page after msg_980 runs from %s to %s", page.Data[0].ID, page.LastID)
	}
	// Another server process never saw the page: it looks for the id
	// from the newest item back, one page of 64 here.
	other := client(serve(t, st), "")
	reads("the page after an own id on another server", 64+20, func() (err error) {
		page, err = other.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(lastID)})
		return err
	})
	if page.Data[0].ID != "msg_979" {
		t.Errorf("on another server, the page after msg_980 starts at %s", page.Data[0].ID)
	}
	// A remembered place whose item is gone is not used: the id is
	// looked for again and is not found.
	if _, err := c.Conversations.Items.Delete(ctx, conv.ID, lastID); err != nil {
		t.Fatal(err)
	}
	_, err := c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{After: param.NewOpt(lastID)})
	wantAPIError(t, err, http.StatusBadRequest, "after", "no item with id")
}

// TestItemIDRace checks that of concurrent adds of items with one id,
// exactly one is written, and that include and include[] are accepted.
func TestItemIDRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, st recall.Store) {
		ctx := context.Background()
		srv := serve(t, st)
		c := client(srv, "")
		conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Another item without an id moves the log between the
				// check and the write of the others.
				body := fmt.Sprintf(`{"items":[{"role":"user","content":"%d"},{"type":"function_call","id":"fc_race","call_id":"c%d","name":"f","arguments":"{}"}]}`, i, i)
				statuses[i], _, _ = raw(t, srv, "POST", "/v1/conversations/"+conv.ID+"/items", body)
			}()
		}
		wg.Wait()
		ok := 0
		for _, s := range statuses {
			switch s {
			case http.StatusOK:
				ok++
			case http.StatusBadRequest:
			default:
				t.Errorf("status %d", s)
			}
		}
		m, err := st.Stat(ctx, localKey(conv.ID))
		if ok != 1 || err != nil || m.ItemCount != 2 {
			t.Errorf("%d adds of one id succeeded, %d items (%v); want 1 and 2", ok, m.ItemCount, err)
		}

		page, err := c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Include: []responses.ResponseIncludable{responses.ResponseIncludableMessageOutputTextLogprobs}})
		if err != nil || len(page.Data) != 2 {
			t.Errorf("list with include[]: %v", err)
		}
		for _, q := range []string{"?include=message.output_text.logprobs", "?include[]=reasoning.encrypted_content&include[]=message.input_image.image_url"} {
			if status, _, body := raw(t, srv, "GET", "/v1/conversations/"+conv.ID+"/items"+q, ""); status != http.StatusOK || !strings.Contains(body, "fc_race") {
				t.Errorf("list %s: %d %s", q, status, body)
			}
			if status, _, body := raw(t, srv, "GET", "/v1/conversations/"+conv.ID+"/items/fc_race"+q, ""); status != http.StatusOK || !strings.Contains(body, "fc_race") {
				t.Errorf("get %s: %d %s", q, status, body)
			}
		}
	})
}

// meddler is a store where another writer writes just before the first
// guarded Append, so that Append meets a conflict.
type meddler struct {
	*countingStore
	once   sync.Once
	meddle func()
}

func (m *meddler) Append(ctx context.Context, key recall.Key, g recall.Guard, es ...recall.Entry) (int64, error) {
	if g.CheckSeq {
		m.once.Do(m.meddle)
	}
	return m.countingStore.Append(ctx, key, g, es...)
}

// TestItemIDCheckAfterConflict checks that when a batch with own ids
// meets a write made after its check, the ids are checked against what
// that write added, and the view is read again only when that write took
// items out of it.
func TestItemIDCheckAfterConflict(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		other  func(st recall.Store, key recall.Key) error
		status int
		views  int64 // whole-view reads
	}{
		{"an item with the same id", func(st recall.Store, key recall.Key) error {
			_, err := st.Append(ctx, key, recall.IfExists(), recall.Item(`{"type":"message","id":"msg_new","role":"user","content":"theirs"}`).Entry())
			return err
		}, http.StatusBadRequest, 1},
		{"another item", func(st recall.Store, key recall.Key) error {
			_, err := st.Append(ctx, key, recall.IfExists(), recall.Message("user", "theirs").Entry())
			return err
		}, http.StatusOK, 1},
		{"an item removed", func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).RemoveItem(ctx, recall.ItemRef{Seq: 1})
			return err
		}, http.StatusOK, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &countingStore{Store: memstore.New(memstore.Options{})}
			st := &meddler{countingStore: inner}
			key := localKey("conv_ids")
			first := `{"type":"message","id":"msg_old","role":"user","content":"first"}`
			if _, err := inner.Append(ctx, key, recall.IfNew(), recall.Item(first).Entry()); err != nil {
				t.Fatal(err)
			}
			st.meddle = func() {
				if err := tc.other(inner.Store, key); err != nil {
					t.Error(err)
				}
			}
			srv := serve(t, st)
			inner.calls.Store(0)
			code, _, body := raw(t, srv, "POST", "/v1/conversations/conv_ids/items", `{"items":[{"type":"message","id":"msg_new","role":"user","content":"mine"}]}`)
			if code != tc.status {
				t.Fatalf("add after %s: %d %s, want %d", tc.name, code, body, tc.status)
			}
			if n := inner.calls.Load(); n != tc.views {
				t.Errorf("the view was read %d times, want %d", n, tc.views)
			}
		})
	}
}

// TestAddItemsWithIDsReadsLittle adds items with ids of their own to a
// 5,000-item conversation, again and again, and with a write of another
// client in between: the first check of their ids reads the view, and
// each one after reads only the entries written since (takenIDs), while a
// taken id is still refused, whoever added it.
func TestAddItemsWithIDsReadsLittle(t *testing.T) {
	ctx := context.Background()
	st, c, conv := countedConversation(t, 5000)
	add := func(id string) error {
		_, err := c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{functionCall(id, "c")}}, option.WithMaxRetries(0))
		return err
	}
	if err := add("fc_0"); err != nil {
		t.Fatal(err)
	}
	st.items.Store(0)
	st.entries.Store(0)
	for i := 1; i <= 20; i++ {
		if err := add(fmt.Sprintf("fc_%d", i)); err != nil {
			t.Fatal(err)
		}
		// Another client's item, with an id, written past this server.
		other := recall.Item(fmt.Sprintf(`{"type":"function_call","id":"fc_other_%d","call_id":"o","name":"f","arguments":"{}"}`, i))
		if _, err := st.Append(ctx, localKey(conv.ID), recall.IfExists(), other.Entry()); err != nil {
			t.Fatal(err)
		}
	}
	if n, e := st.items.Load(), st.entries.Load(); n != 0 || e > 20 {
		t.Errorf("20 adds read %d items of the view and %d entries; want none of the view, and the 20 other items' entries", n, e)
	}
	for _, id := range []string{"fc_7", "fc_other_7"} {
		wantAPIError(t, add(id), http.StatusBadRequest, "items[0].id", "already exists")
	}
}

// countedConversation returns a server's client on a store that counts
// its reads, and a conversation of n messages ("0", "1", …) made there.
func countedConversation(t *testing.T, n int) (*countingStore, openai.Client, *conversations.Conversation) {
	t.Helper()
	ctx := context.Background()
	st := &countingStore{Store: backends()[0].open(t)}
	c := client(serve(t, st), "")
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < n; start += 500 {
		batch := make([]recall.Item, min(500, n-start))
		for i := range batch {
			batch[i] = recall.Message("user", fmt.Sprint(start+i))
		}
		if _, err := st.Append(ctx, localKey(conv.ID), recall.IfExists(), recall.ItemEntries(batch...)...); err != nil {
			t.Fatal(err)
		}
	}
	return st, c, conv
}
