package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server"
)

// TestConversationsIsolation checks the Conversations API under token
// auth: no token or a wrong one is a 401 on every route; another user's
// conversation (an admin's included) is a 404 on every route and is left
// as it was; one user's Idempotency-Key does not replay for another.
func TestConversationsIsolation(t *testing.T) {
	eachBackend(t, testConversationsIsolation)
}

func testConversationsIsolation(t *testing.T, st recall.Store) {
	ctx := context.Background()
	srv := serve(t, st, server.Options{Auth: server.AuthToken})
	token := func(user string, admin bool) string {
		tok, _, err := server.CreateToken(ctx, st, user, admin)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice, bob, root := client(srv, token("alice", false)), client(srv, token("bob", false)), client(srv, token("root", true))

	conv, err := alice.Conversations.New(ctx, conversations.ConversationNewParams{
		Items:    []responses.ResponseInputItemUnionParam{userMessage("secret"), functionCall("fc_1", "c")},
		Metadata: shared.Metadata{"owner": "alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	aliceKey := recall.Key{Project: server.User{Name: "alice"}.Project(), Session: conv.ID}
	before, err := st.Stat(ctx, aliceKey)
	if err != nil {
		t.Fatal(err)
	}

	// Every route, as someone else: 404, as for a conversation that does
	// not exist.
	add := conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("intruder")}}
	for _, o := range []struct {
		name string
		c    openai.Client
	}{{"bob", bob}, {"root", root}} {
		name, other := o.name, o.c
		_, err = other.Conversations.Get(ctx, conv.ID)
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"owner": name}})
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Items.New(ctx, conv.ID, add)
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Items.Get(ctx, conv.ID, "fc_1", conversations.ItemGetParams{})
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Items.Delete(ctx, conv.ID, "fc_1")
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
		_, err = other.Conversations.Delete(ctx, conv.ID)
		wantAPIError(t, err, http.StatusNotFound, "conversation_id", "not found")
	}
	after, err := st.Stat(ctx, aliceKey)
	if err != nil || after.LastSeq != before.LastSeq || after.Metadata["owner"] != "alice" {
		t.Errorf("other users changed alice's conversation: %+v, %v", after, err)
	}
	if _, err := st.Stat(ctx, recall.Key{Project: server.User{Name: "bob"}.Project(), Session: conv.ID}); err == nil {
		t.Errorf("bob's writes made a conversation of his own with alice's id")
	}

	// No token, or a wrong one: 401 on every route.
	for _, c := range []struct {
		msg  string
		opts []option.RequestOption
	}{{"didn't provide an API key", []option.RequestOption{option.WithHeaderDel("Authorization")}}, {"Incorrect API key", []option.RequestOption{option.WithAPIKey("rk_wrong")}}} {
		anon := client(srv, "x", c.opts...)
		_, err = anon.Conversations.New(ctx, conversations.ConversationNewParams{})
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Get(ctx, conv.ID)
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"a": "b"}})
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Items.New(ctx, conv.ID, add)
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Items.Get(ctx, conv.ID, "fc_1", conversations.ItemGetParams{})
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Items.Delete(ctx, conv.ID, "fc_1")
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
		_, err = anon.Conversations.Delete(ctx, conv.ID)
		wantAPIError(t, err, http.StatusUnauthorized, "", c.msg)
	}
	if after, err := st.Stat(ctx, aliceKey); err != nil || after.LastSeq != before.LastSeq {
		t.Errorf("unauthenticated calls changed alice's conversation: %+v, %v", after, err)
	}

	// The owner still has it all.
	page, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("alice lists %v, %v", page, err)
	}

	// One Idempotency-Key, two users: two conversations.
	key := option.WithHeader("Idempotency-Key", "shared-key")
	a, err := alice.Conversations.New(ctx, conversations.ConversationNewParams{}, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bob.Conversations.New(ctx, conversations.ConversationNewParams{}, key)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Errorf("bob's request replayed alice's result %s", a.RawJSON())
	}
	if _, err := bob.Conversations.Get(ctx, b.ID); err != nil {
		t.Errorf("bob's conversation: %v", err)
	}
}
