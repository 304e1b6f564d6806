package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	oaiprov "github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/server"
)

// serveExample starts a recall server with opts over a memory store, and
// returns its /v1/ base URL, a token of the user "ada", and a function
// that stops it all.
func serveExample(ctx context.Context, opts server.Options) (base, token string, stop func()) {
	store := memstore.New(memstore.Options{})
	srv, err := server.New(ctx, store, opts)
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	token, _, err = server.CreateToken(ctx, store, "ada", false)
	if err != nil {
		log.Fatal(err)
	}
	return ts.URL + "/v1/", token, func() { ts.Close(); srv.Close(); store.Close() }
}

// The official OpenAI client on recall's Conversations API.
func ExampleNew_conversations() {
	ctx := context.Background()
	base, token, stop := serveExample(ctx, server.Options{})
	defer stop()

	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(token)) // base: "http://127.0.0.1:8080/v1/"
	conv, _ := client.Conversations.New(ctx, conversations.ConversationNewParams{})
	client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser)}})
	page, _ := client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})

	for _, it := range page.Data {
		fmt.Println(it.ID, it.Type, it.AsMessage().Role)
	}
	// Output:
	// recall-2 message user
}

// With an upstream model server (here a stand-in for Ollama), the
// Responses API keeps the conversation in recall: the second turn reaches
// the model with the first before it.
func ExampleNew_upstream() {
	ctx := context.Background()
	model := fakeopenai.New()
	defer model.Close()
	model.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if r.LastUserText() == "What is my name?" && strings.Contains(string(r.Body), "My name is Ada.") {
			return fakeopenai.Reply{Text: "Your name is Ada."}
		}
		return fakeopenai.Reply{Text: "Hello!"}
	})
	base, token, stop := serveExample(ctx, server.Options{Upstream: model.URL(), UpstreamAPI: oaiprov.APIChat})
	defer stop()

	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(token)) // base: "http://127.0.0.1:8080/v1/"
	conv, _ := client.Conversations.New(ctx, conversations.ConversationNewParams{})
	turn := func(text string) (*responses.Response, error) {
		return client.Responses.New(ctx, responses.ResponseNewParams{Model: "llama3.2",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}, Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}})
	}
	turn("My name is Ada.")
	r, _ := turn("What is my name?") // the model got the first turn from recall: "Your name is Ada."

	fmt.Println(r.OutputText())
	// Output:
	// Your name is Ada.
}
