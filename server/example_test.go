package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// The official OpenAI client talks to a recall server with only its base
// URL and API key changed: here a server over a memory store, with a
// token made for the user "ada".
func ExampleNew() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	srv, err := server.New(ctx, store, server.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close() // its background work, after the listener's requests
	ts := httptest.NewServer(srv)
	defer ts.Close()
	token, _, err := server.CreateToken(ctx, store, "ada", false)
	if err != nil {
		log.Fatal(err)
	}

	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(token))
	conv, err := client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("What is recall?", responses.EasyInputMessageRoleUser),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{
		Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("A session layer for agents.", responses.EasyInputMessageRoleAssistant),
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	iter := client.Conversations.Items.ListAutoPaging(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	for iter.Next() {
		it := iter.Current().AsMessage()
		fmt.Println(it.ID, it.Role)
	}
	if err := iter.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// recall-2 user
	// recall-3 assistant
}
