package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall/internal/fakeopenai"
)

// TestServeResponses runs recall serve --upstream in front of the fake
// OpenAI server in both upstream modes and drives POST /v1/responses with
// the official client: a name remembered across two requests (the
// upstream answers right only when it was sent the history), a streamed
// turn, an upstream 500 that stores nothing, and the conversation as the
// Conversations API lists it afterwards.
func TestServeResponses(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"responses", "chat"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			up := fakeopenai.New()
			t.Cleanup(up.Close)
			up.SetAPIKey("sk-upstream") // a request without the key gets a 401
			up.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
				name := ""
				for _, m := range r.Messages() {
					if n, ok := strings.CutPrefix(m.Text, "My name is "); ok && m.Role == "user" {
						name = strings.TrimSuffix(n, ".")
					}
				}
				if strings.Contains(r.LastUserText(), "What is my name") {
					return fakeopenai.Reply{Text: "Your name is " + name + "."}
				}
				return fakeopenai.Reply{Text: "Nice to meet you."}
			})
			e.vars = []string{"OPENAI_API_KEY=sk-upstream"}
			s := e.serve("--auth", "none", "--upstream", up.URL(), "--upstream-api", api)
			contains(t, "start line", s.log(), "upstream=")
			contains(t, "start line", s.log(), api+" API")
			ctx := context.Background()
			c := s.client("unused")
			conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
			if err != nil {
				t.Fatal(err)
			}
			turn := func(text string) responses.ResponseNewParams {
				return responses.ResponseNewParams{
					Model:        "local-model",
					Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(text)},
					Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
				}
			}
			if _, err := c.Responses.New(ctx, turn("My name is Ada.")); err != nil {
				t.Fatal(err)
			}
			stream := c.Responses.NewStreaming(ctx, turn("What is my name?"))
			var text strings.Builder
			var done *responses.Response
			for stream.Next() {
				switch ev := stream.Current(); ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					r := ev.AsResponseCompleted().Response
					done = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text.String() != "Your name is Ada." || done == nil || done.Conversation.ID != conv.ID {
				t.Fatalf("streamed answer %q, completed %v", text.String(), done != nil)
			}

			up.Enqueue(fakeopenai.Reply{Status: http.StatusInternalServerError, Error: "The model fell over."})
			_, err = c.Responses.New(ctx, turn("Still there?"))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || apiErr.Message != "The model fell over." {
				t.Errorf("upstream 500: %v", err)
			}

			page, err := c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range page.Data {
				got = append(got, it.Role)
			}
			if strings.Join(got, ",") != "user,assistant,user,assistant" {
				t.Errorf("conversation roles %q, want two turns and nothing of the failed one", got)
			}
			for _, r := range up.Requests() {
				if r.API != api {
					t.Errorf("upstream got a %s request, want %s", r.API, api)
				}
			}
		})
	}
}

// TestServeResponsesUsage: the upstream flags are checked before the
// server starts.
func TestServeResponsesUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(2, "--upstream-api needs --upstream", "serve", "--auth", "none", "--addr", "127.0.0.1:0", "--upstream-api", "chat")
	e.fails(2, "want", "serve", "--auth", "none", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/v1", "--upstream-api", "grpc")
	e.fails(2, "--upstream takes an http(s) URL", "serve", "--auth", "none", "--addr", "127.0.0.1:0", "--upstream", "localhost:11434")
	e.fails(2, "--context-tokens", "serve", "--auth", "none", "--addr", "127.0.0.1:0", "--context-tokens", "-1")
}
