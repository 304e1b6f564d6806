package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	oaiprov "github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/server"
)

// upstreamAPIs are the two upstream modes every Responses test runs in.
var upstreamAPIs = []oaiprov.API{oaiprov.APIResponses, oaiprov.APIChat}

// respEnv is a recall server over st whose POST /v1/responses goes to a
// fake OpenAI server speaking api.
type respEnv struct {
	st  recall.Store
	up  *fakeopenai.Server
	srv *httptest.Server
	c   openai.Client
	api oaiprov.API
}

func newRespEnv(t *testing.T, st recall.Store, api oaiprov.API, opts ...server.Options) *respEnv {
	t.Helper()
	up := fakeopenai.New()
	t.Cleanup(up.Close)
	o := server.Options{Auth: server.AuthNone}
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Upstream, o.UpstreamAPI = up.URL(), api
	srv := serve(t, st, o)
	return &respEnv{st: st, up: up, srv: srv, c: client(srv, ""), api: api}
}

// eachAPI runs fn once per upstream API over a memory store.
func eachAPI(t *testing.T, fn func(t *testing.T, e *respEnv)) {
	for _, api := range upstreamAPIs {
		t.Run(string(api), func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			fn(t, newRespEnv(t, st, api))
		})
	}
}

// newConversation creates an empty conversation through the
// Conversations API.
func (e *respEnv) newConversation(t *testing.T) string {
	t.Helper()
	conv, err := e.c.Conversations.New(context.Background(), conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	return conv.ID
}

// items returns the raw items of the conversation, oldest first.
func (e *respEnv) items(t *testing.T, id string) []recall.Item {
	t.Helper()
	live, _, err := e.st.Items(context.Background(), localKey(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]recall.Item, len(live))
	for i, l := range live {
		out[i] = l.Item
	}
	return out
}

// kinds describes items as "type/role" (role for messages), to compare a
// conversation with what it should hold.
func kinds(items []recall.Item) []string {
	var out []string
	for _, it := range items {
		k := it.Type()
		if k == "message" {
			k += "/" + it.Role()
		}
		out = append(out, k)
	}
	return out
}

// firstText is the text of the first content part of a message item.
func firstText(it recall.Item) string {
	var m struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(it, &m)
	if len(m.Content) == 0 {
		return ""
	}
	return m.Content[0].Text
}

func withConv(id string) responses.ResponseNewParamsConversationUnion {
	return responses.ResponseNewParamsConversationUnion{OfString: openai.String(id)}
}

func textParams(id, text string) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "test-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
	if id != "" {
		p.Conversation = withConv(id)
	}
	return p
}

// nameResponder answers "What is my name?" with the name of an earlier
// "My name is X." in the messages it was sent, so it answers right only
// when it was sent the history.
func nameResponder(r fakeopenai.Request) fakeopenai.Reply {
	name := ""
	for _, m := range r.Messages() {
		if n, ok := strings.CutPrefix(m.Text, "My name is "); ok && m.Role == "user" {
			name = strings.TrimSuffix(n, ".")
		}
	}
	if strings.Contains(r.LastUserText(), "What is my name") {
		if name == "" {
			return fakeopenai.Reply{Text: "I do not know your name."}
		}
		return fakeopenai.Reply{Text: "Your name is " + name + "."}
	}
	return fakeopenai.Reply{Text: "Nice to meet you."}
}

func TestResponsesRemembersName(t *testing.T) {
	for _, b := range backends() {
		for _, api := range upstreamAPIs {
			t.Run(b.name+"/"+string(api), func(t *testing.T) {
				e := newRespEnv(t, b.open(t), api)
				e.up.SetResponder(nameResponder)
				ctx := context.Background()
				id := e.newConversation(t)

				r1, err := e.c.Responses.New(ctx, textParams(id, "My name is Ada."))
				if err != nil {
					t.Fatal(err)
				}
				if r1.Conversation.ID != id {
					t.Errorf("first response's conversation %q, want %q", r1.Conversation.ID, id)
				}
				// The second turn names the conversation as an object.
				p := textParams("", "What is my name?")
				p.Conversation = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: id}}
				r2, err := e.c.Responses.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if got := r2.OutputText(); got != "Your name is Ada." {
					t.Errorf("second answer %q: the upstream did not get the history", got)
				}
				if r2.Conversation.ID != id {
					t.Errorf("second response's conversation %q, want %q", r2.Conversation.ID, id)
				}
				reqs := e.up.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d upstream requests, want 2", len(reqs))
				}
				if reqs[1].API != string(api) {
					t.Errorf("upstream API %q, want %q", reqs[1].API, api)
				}
				var sent []string
				for _, m := range reqs[1].Messages() {
					sent = append(sent, m.Role+": "+m.Text)
				}
				want := []string{"user: My name is Ada.", "assistant: Nice to meet you.", "user: What is my name?"}
				if !slices.Equal(sent, want) {
					t.Errorf("second request sent %q, want %q", sent, want)
				}
				if strings.Contains(string(reqs[1].Body), `"conversation"`) {
					t.Errorf("the conversation parameter went upstream: %s", reqs[1].Body)
				}

				// The conversation holds both turns, listed by the
				// Conversations API, with the usage of both.
				page, err := e.c.Conversations.Items.List(ctx, id, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
				if err != nil {
					t.Fatal(err)
				}
				var roles []string
				for _, it := range page.Data {
					roles = append(roles, it.Role+":"+firstText(recall.Item(it.RawJSON())))
				}
				wantRoles := []string{"user:My name is Ada.", "assistant:Nice to meet you.", "user:What is my name?", "assistant:Your name is Ada."}
				if !slices.Equal(roles, wantRoles) {
					t.Errorf("conversation items %q, want %q", roles, wantRoles)
				}
				m, err := e.st.Stat(ctx, localKey(id))
				if err != nil {
					t.Fatal(err)
				}
				wantUsage := r1.Usage.TotalTokens + r2.Usage.TotalTokens
				if wantUsage == 0 || m.Usage.TotalTokens != wantUsage {
					t.Errorf("stored usage %+v, want a total of %d", m.Usage, wantUsage)
				}
			})
		}
	}
}

func TestResponsesWithoutConversation(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		e.up.SetResponder(nameResponder)
		ctx := context.Background()
		id := e.newConversation(t)
		if _, err := e.c.Responses.New(ctx, textParams(id, "My name is Ada.")); err != nil {
			t.Fatal(err)
		}
		// No conversation: relayed as sent, nothing read or stored.
		r, err := e.c.Responses.New(ctx, textParams("", "What is my name?"))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.OutputText(); got != "I do not know your name." {
			t.Errorf("answer without a conversation %q", got)
		}
		if r.JSON.Conversation.Valid() && r.Conversation.ID != "" {
			t.Errorf("a response without a conversation echoes one: %q", r.Conversation.ID)
		}
		// store: false reads the history but stores nothing.
		p := textParams(id, "What is my name?")
		p.Store = openai.Bool(false)
		r, err = e.c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.OutputText(); got != "Your name is Ada." {
			t.Errorf("answer with store false %q", got)
		}
		if got := kinds(e.items(t, id)); len(got) != 2 {
			t.Errorf("conversation holds %q after a request without it and one with store false, want the first turn only", got)
		}
	})
}

func TestResponsesToolCall(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		ctx := context.Background()
		id := e.newConversation(t)
		e.up.Enqueue(fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
		p := textParams(id, "What is the weather in Paris?")
		p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		}, false)}
		r1, err := e.c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.up.Requests()[0].ToolNames(); !slices.Equal(got, []string{"get_weather"}) {
			t.Errorf("upstream got tools %q", got)
		}
		var call responses.ResponseFunctionToolCall
		for _, o := range r1.Output {
			if o.Type == "function_call" {
				call = o.AsFunctionCall()
			}
		}
		if call.Name != "get_weather" || call.Arguments != `{"city":"Paris"}` || call.CallID == "" {
			t.Fatalf("function call %+v in %s", call, r1.RawJSON())
		}

		out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 21°C")
		out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
		p2 := responses.ResponseNewParams{Model: "test-model", Conversation: withConv(id),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}}
		e.up.Enqueue(fakeopenai.Reply{Text: "It is sunny in Paris."})
		r2, err := e.c.Responses.New(ctx, p2)
		if err != nil {
			t.Fatal(err)
		}
		if r2.OutputText() != "It is sunny in Paris." {
			t.Errorf("answer %q", r2.OutputText())
		}
		// The second request carried the call and its output, in the
		// upstream's own shape.
		body := string(e.up.Requests()[1].Body)
		for _, want := range []string{call.CallID, "get_weather", "sunny, 21°C"} {
			if !strings.Contains(body, want) {
				t.Errorf("second upstream request lacks %q: %s", want, body)
			}
		}
		if e.api == oaiprov.APIChat && (!strings.Contains(body, `"tool_calls"`) || !strings.Contains(body, `"role":"tool"`)) {
			t.Errorf("chat upstream did not get the call as tool_calls and a tool message: %s", body)
		}
		items := e.items(t, id)
		want := []string{"message/user", "function_call", "function_call_output", "message/assistant"}
		if got := kinds(items); !slices.Equal(got, want) {
			t.Errorf("conversation %q, want %q", got, want)
		}
		if items[1].CallID() != call.CallID || items[2].CallID() != call.CallID {
			t.Errorf("stored call ids %q, %q, want %q", items[1].CallID(), items[2].CallID(), call.CallID)
		}
	})
}

func TestResponsesStream(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		ctx := context.Background()
		id := e.newConversation(t)
		e.up.Enqueue(fakeopenai.Reply{Text: "Streams arrive in several small pieces."})
		stream := e.c.Responses.NewStreaming(ctx, textParams(id, "Tell me about streams."))
		var deltas []string
		var done *responses.Response
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				if done != nil {
					t.Error("a delta after response.completed")
				}
				deltas = append(deltas, ev.Delta)
			case "response.completed":
				r := ev.AsResponseCompleted().Response
				done = &r
			case "error":
				t.Fatalf("error event: %s", ev.RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(deltas) < 3 || strings.Join(deltas, "") != "Streams arrive in several small pieces." {
			t.Errorf("deltas %q", deltas)
		}
		if done == nil {
			t.Fatal("no response.completed")
		}
		if done.Conversation.ID != id || done.OutputText() != "Streams arrive in several small pieces." {
			t.Errorf("completed response: conversation %q, text %q", done.Conversation.ID, done.OutputText())
		}
		if !e.up.Requests()[0].Stream {
			t.Error("the upstream request was not streamed")
		}
		items := e.items(t, id)
		if got := kinds(items); !slices.Equal(got, []string{"message/user", "message/assistant"}) {
			t.Fatalf("conversation %q", got)
		}
		if !strings.Contains(string(items[1]), "Streams arrive in several small pieces.") {
			t.Errorf("stored reply %s", items[1])
		}
		m, _ := e.st.Stat(ctx, localKey(id))
		if m.Usage.TotalTokens == 0 || m.Usage.TotalTokens != done.Usage.TotalTokens {
			t.Errorf("stored usage %+v, response usage %+v", m.Usage, done.Usage)
		}
	})
}

func TestResponsesStreamDisconnect(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		id := e.newConversation(t)
		if _, err := e.c.Conversations.Items.New(context.Background(), id, conversations.ItemNewParams{
			Items: []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("earlier", responses.EasyInputMessageRoleUser)},
		}); err != nil {
			t.Fatal(err)
		}
		before := e.items(t, id)
		e.up.Enqueue(fakeopenai.Reply{Text: "this reply never ends", StallStream: true})
		ctx, cancel := context.WithCancel(context.Background())
		stream := e.c.Responses.NewStreaming(ctx, textParams(id, "Start a long answer."))
		gotDelta := false
		for stream.Next() {
			if stream.Current().Type == "response.output_text.delta" {
				gotDelta = true
				cancel() // the client goes away mid-stream
			}
		}
		cancel()
		stream.Close()
		if !gotDelta {
			t.Fatalf("no delta before the disconnect (err %v)", stream.Err())
		}
		// Close waits for the server's handlers, so the request has ended.
		e.srv.Close()
		after := e.items(t, id)
		if !slices.EqualFunc(before, after, func(a, b recall.Item) bool { return string(a) == string(b) }) {
			t.Errorf("conversation changed by a disconnected stream: %q -> %q", kinds(before), kinds(after))
		}
	})
}

func TestResponsesUpstreamError(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		ctx := context.Background()
		id := e.newConversation(t)
		e.up.Enqueue(fakeopenai.Reply{Status: http.StatusInternalServerError, Error: "The model crashed."})
		_, err := e.c.Responses.New(ctx, textParams(id, "Hello?"))
		wantAPIError(t, err, http.StatusInternalServerError, "", "The model crashed.")

		e.up.Enqueue(fakeopenai.Reply{Status: http.StatusTooManyRequests, Error: "Slow down.", RetryAfter: 1500 * time.Millisecond})
		stream := e.c.Responses.NewStreaming(ctx, textParams(id, "Hello?"))
		for stream.Next() {
		}
		ae := apiError(t, stream.Err())
		if ae.StatusCode != http.StatusTooManyRequests || ae.Message != "Slow down." || ae.Response.Header.Get("retry-after-ms") != "1500" {
			t.Errorf("streamed 429: %d %q retry-after-ms %q", ae.StatusCode, ae.Message, ae.Response.Header.Get("retry-after-ms"))
		}

		e.up.Enqueue(fakeopenai.Reply{Text: "half", StreamError: true, Error: "overloaded"})
		stream = e.c.Responses.NewStreaming(ctx, textParams(id, "Hello?"))
		sawError := false
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "error" && strings.Contains(ev.Message, "overloaded") {
				sawError = true
			}
		}
		if !sawError && (stream.Err() == nil || !strings.Contains(stream.Err().Error(), "overloaded")) {
			t.Errorf("a stream that failed upstream ended without its error (err %v)", stream.Err())
		}
		if got := e.items(t, id); len(got) != 0 {
			t.Errorf("upstream errors stored %q", kinds(got))
		}
	})
}

func TestResponsesBadRequests(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	e := newRespEnv(t, st, oaiprov.APIResponses)
	id := e.newConversation(t)

	p := textParams(id, "Hi")
	p.PreviousResponseID = openai.String("resp_123")
	_, err := e.c.Responses.New(ctx, p)
	wantAPIError(t, err, http.StatusBadRequest, "", "Mutually exclusive parameters")

	_, err = e.c.Responses.New(ctx, textParams("conv_nope", "Hi"))
	wantAPIError(t, err, http.StatusNotFound, "conversation", "conv_nope")
	_, err = e.c.Responses.New(ctx, textParams("../etc", "Hi"))
	wantAPIError(t, err, http.StatusNotFound, "conversation", "not found")

	code, _, body := raw(t, e.srv, "POST", "/v1/responses", `{"model":"m","conversation":"`+id+`","input":[1]}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `"input[0]"`) {
		t.Errorf("input of a number: %d %s", code, body)
	}
	code, _, body = raw(t, e.srv, "POST", "/v1/responses", `{"model":"m","conversation":{"idd":"x"}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `"conversation"`) {
		t.Errorf("conversation object without id: %d %s", code, body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("%d bad requests went upstream", n)
	}
	if got := e.items(t, id); len(got) != 0 {
		t.Errorf("bad requests stored %q", kinds(got))
	}

	// An upstream nobody listens on is a 502.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	srv := serve(t, st, server.Options{Auth: server.AuthNone, Upstream: dead, UpstreamAPI: oaiprov.APIChat})
	deadClient := client(srv, "")
	_, err = deadClient.Responses.New(ctx, textParams(id, "Hi"))
	wantAPIError(t, err, http.StatusBadGateway, "", "could not be reached")

	// A server without an upstream has no such route.
	srv = serve(t, st)
	plain := client(srv, "")
	_, err = plain.Responses.New(ctx, textParams(id, "Hi"))
	if ae := apiError(t, err); ae.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/responses without an upstream: %d %s", ae.StatusCode, ae.RawJSON())
	}
	if got := e.items(t, id); len(got) != 0 {
		t.Errorf("failed requests stored %q", kinds(got))
	}
}

func TestResponsesOtherUser(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	e := newRespEnv(t, st, oaiprov.APIChat, server.Options{Auth: server.AuthToken})
	ada, _, err := server.CreateToken(ctx, st, "ada", false)
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := server.CreateToken(ctx, st, "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	adaC, bobC, anon := client(e.srv, ada), client(e.srv, bob), client(e.srv, "")
	conv, err := adaC.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bobC.Responses.New(ctx, textParams(conv.ID, "Hi"))
	wantAPIError(t, err, http.StatusNotFound, "conversation", conv.ID)
	_, err = anon.Responses.New(ctx, textParams(conv.ID, "Hi"))
	apiErr := apiError(t, err)
	if apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", apiErr.StatusCode)
	}
	if _, err := adaC.Responses.New(ctx, textParams(conv.ID, "Hi")); err != nil {
		t.Errorf("owner: %v", err)
	}
	if n := len(e.up.Requests()); n != 1 {
		t.Errorf("%d upstream requests, want only the owner's", n)
	}
}

// TestResponsesConcurrent sends two turns on one conversation at once,
// held at the upstream until both have read the history: one is stored,
// the other is refused with a 409 that the SDK is told not to retry, and
// nothing of it is stored; sent again, it is answered from the new
// history and stored after the first.
func TestResponsesConcurrent(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		ctx := context.Background()
		id := e.newConversation(t)
		arrived, release := make(chan struct{}, 2), make(chan struct{})
		e.up.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
			arrived <- struct{}{}
			<-release
			return fakeopenai.Echo(r)
		})
		texts := []string{"turn A", "turn B"}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, text := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.c.Responses.New(ctx, textParams(id, text))
			}()
		}
		<-arrived
		<-arrived
		e.up.SetResponder(nil)
		close(release)
		wg.Wait()

		won, lost := -1, -1
		for i, err := range errs {
			if err == nil {
				won = i
				continue
			}
			lost = i
			ae := apiError(t, err)
			if ae.StatusCode != http.StatusConflict || ae.Code != "conversation_changed" || ae.Response.Header.Get("x-should-retry") != "false" {
				t.Errorf("losing request: %d %q x-should-retry %q", ae.StatusCode, ae.Code, ae.Response.Header.Get("x-should-retry"))
			}
		}
		if won < 0 || lost < 0 {
			t.Fatalf("want one turn stored and one refused, got errors %v", errs)
		}
		texts2 := func() []string {
			var out []string
			for _, it := range e.items(t, id) {
				out = append(out, firstText(it))
			}
			return out
		}
		want := []string{texts[won], "echo: " + texts[won]}
		if got := texts2(); !slices.Equal(got, want) {
			t.Fatalf("after the race the conversation holds %q, want %q", got, want)
		}
		// The refused turn, sent again, is answered from the new history.
		if _, err := e.c.Responses.New(ctx, textParams(id, texts[lost])); err != nil {
			t.Fatal(err)
		}
		want = append(want, texts[lost], "echo: "+texts[lost])
		if got := texts2(); !slices.Equal(got, want) {
			t.Errorf("after the retry the conversation holds %q, want %q", got, want)
		}
		reqs := e.up.Requests()
		if n := len(reqs[len(reqs)-1].Messages()); n != 3 {
			t.Errorf("the retry sent %d messages upstream, want 3 (the first turn and its own input)", n)
		}
	})
}

// TestResponsesContextTokens: a conversation over ContextTokens is
// compacted (by the configured compactor, here a summary by the same fake
// model) before it goes upstream, and the compacted view is what is sent.
func TestResponsesContextTokens(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	up := fakeopenai.New()
	t.Cleanup(up.Close)
	m, err := oaiprov.New(oaiprov.Config{BaseURL: up.URL(), APIKey: "k", Model: "fake", API: oaiprov.APIChat, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, st, server.Options{Auth: server.AuthNone, Upstream: up.URL(), UpstreamAPI: oaiprov.APIChat,
		ContextTokens: 400, Compactor: &compact.Summarizer{Model: m}})
	c := client(srv, "")
	var items []responses.ResponseInputItemUnionParam
	for i := range 40 {
		items = append(items, responses.ResponseInputItemParamOfMessage(fmt.Sprintf("question %d: %s", i, strings.Repeat("words ", 10)), responses.EasyInputMessageRoleUser))
	}
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{Items: items[:20]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: items[20:]}); err != nil {
		t.Fatal(err)
	}
	up.Enqueue(fakeopenai.Reply{Text: "SUMMARY: forty questions about words"})
	r, err := c.Responses.New(ctx, textParams(conv.ID, "And now?"))
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "echo: And now?" {
		t.Errorf("answer %q", r.OutputText())
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want a summary and the turn", len(reqs))
	}
	sent := reqs[1].Messages()
	if len(sent) >= 41 || !strings.Contains(string(reqs[1].Body), "SUMMARY: forty questions") {
		t.Errorf("the turn sent %d messages, not the compacted view: %s", len(sent), reqs[1].Body)
	}
	if last := sent[len(sent)-1]; last.Text != "And now?" {
		t.Errorf("last message sent %+v", last)
	}
	// Under the limit, nothing is compacted again.
	if _, err := c.Responses.New(ctx, textParams(conv.ID, "Short.")); err != nil {
		t.Fatal(err)
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("%d upstream requests after a turn under the limit, want 3", n)
	}
}

func TestResponsesStreamToolCall(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		id := e.newConversation(t)
		e.up.Enqueue(fakeopenai.Reply{Text: "Let me look.", ToolCalls: []fakeopenai.ToolCall{{Name: "lookup", Arguments: `{"q":"recall"}`}}})
		p := textParams(id, "Look it up.")
		p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("lookup", map[string]any{"type": "object"}, false)}
		stream := e.c.Responses.NewStreaming(context.Background(), p)
		var doneItems []string
		var done *responses.Response
		for stream.Next() {
			switch ev := stream.Current(); ev.Type {
			case "response.output_item.done":
				doneItems = append(doneItems, ev.Item.Type)
			case "response.completed":
				r := ev.AsResponseCompleted().Response
				done = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(doneItems, []string{"message", "function_call"}) || done == nil {
			t.Fatalf("items done %q, completed %v", doneItems, done != nil)
		}
		var call responses.ResponseFunctionToolCall
		for _, o := range done.Output {
			if o.Type == "function_call" {
				call = o.AsFunctionCall()
			}
		}
		if call.Name != "lookup" || call.Arguments != `{"q":"recall"}` || call.CallID == "" {
			t.Errorf("completed call %+v", call)
		}
		items := e.items(t, id)
		if got := kinds(items); !slices.Equal(got, []string{"message/user", "message/assistant", "function_call"}) {
			t.Fatalf("conversation %q", got)
		}
		if items[2].CallID() != call.CallID {
			t.Errorf("stored call id %q, want %q", items[2].CallID(), call.CallID)
		}
	})
}

// TestResponsesConcurrentStreams: of two streamed turns on one
// conversation at once, the one stored second cannot be: it gets an error
// event in place of response.completed, and nothing of it is stored.
func TestResponsesConcurrentStreams(t *testing.T) {
	eachAPI(t, func(t *testing.T, e *respEnv) {
		id := e.newConversation(t)
		arrived, release := make(chan struct{}, 2), make(chan struct{})
		e.up.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
			arrived <- struct{}{}
			<-release
			return fakeopenai.Echo(r)
		})
		texts := []string{"stream A", "stream B"}
		completed := make([]bool, 2)
		failed := make([]string, 2)
		var wg sync.WaitGroup
		for i, text := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := e.c.Responses.NewStreaming(context.Background(), textParams(id, text))
				for stream.Next() {
					switch ev := stream.Current(); ev.Type {
					case "response.completed":
						completed[i] = true
					case "error":
						failed[i] = ev.Code
					}
				}
			}()
		}
		<-arrived
		<-arrived
		close(release)
		wg.Wait()
		won := slices.Index(completed, true)
		if won < 0 || completed[1-won] || failed[1-won] != "conversation_changed" || failed[won] != "" {
			t.Fatalf("completed %v, error codes %q: want one completed and one conversation_changed", completed, failed)
		}
		var got []string
		for _, it := range e.items(t, id) {
			got = append(got, firstText(it))
		}
		if want := []string{texts[won], "echo: " + texts[won]}; !slices.Equal(got, want) {
			t.Errorf("conversation %q, want %q", got, want)
		}
	})
}

// TestResponsesItemIDs: the conversation's item ids stay unique. An input
// item with an id the conversation has is a 400 before the model is
// asked; an output item whose upstream id the conversation has already
// is stored without it, and gets a derived id.
func TestResponsesItemIDs(t *testing.T) {
	// The stored item holds the id plainly, or spells its key or its
	// value with JSON escapes: the same id either way.
	for name, taken := range map[string]string{
		"plain":       `"id":"msg_1"`,
		"escaped key": `"\u0069d":"msg_1"`,
		"escaped id":  `"id":"msg\u005f1"`,
	} {
		t.Run(name, func(t *testing.T) { testResponsesItemIDs(t, taken) })
	}
}

func testResponsesItemIDs(t *testing.T, taken string) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	e := newRespEnv(t, st, oaiprov.APIResponses)
	// The fake names its first reply's message "msg_1".
	conv, err := e.c.Conversations.New(ctx, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{
		{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("seed")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := raw(t, e.srv, "POST", "/v1/conversations/"+conv.ID+"/items", `{"items":[{"type":"message",`+taken+`,"role":"assistant","content":[{"type":"output_text","text":"taken"}]}]}`)
	if code != http.StatusOK {
		t.Fatalf("seed: %d %s", code, body)
	}
	code, _, body = raw(t, e.srv, "POST", "/v1/responses", `{"model":"m","conversation":"`+conv.ID+`","input":[{"type":"message","id":"msg_1","role":"user","content":"again"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "duplicate_item_id") || !strings.Contains(body, `"input[0].id"`) {
		t.Errorf("input with a taken id: %d %s", code, body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests went upstream", n)
	}
	r, err := e.c.Responses.New(ctx, textParams(conv.ID, "Hello."))
	if err != nil {
		t.Fatal(err)
	}
	if r.Output[0].ID != "msg_1" {
		t.Fatalf("the fake's reply id %q, want msg_1 (the test relies on it)", r.Output[0].ID)
	}
	ids := map[string]bool{}
	iter := e.c.Conversations.Items.ListAutoPaging(ctx, conv.ID, conversations.ItemListParams{})
	n := 0
	for iter.Next() {
		id := iter.Current().ID
		if ids[id] {
			t.Errorf("id %q twice in the conversation", id)
		}
		ids[id] = true
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("%d items, want 4", n)
	}
}

// TestResponsesUpstreamRedirect: an upstream that answers with a
// redirect (to the same host on another port) is not followed: the
// request, its conversation and the upstream key go nowhere else, and
// the client gets a 502, streamed or not, on either upstream API.
func TestResponsesUpstreamRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "not here", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(up.Close)
	for _, api := range upstreamAPIs {
		st := memstore.New(memstore.Options{})
		t.Cleanup(func() { st.Close() })
		srv := serve(t, st, server.Options{Auth: server.AuthNone, Upstream: up.URL + "/v1", UpstreamAPI: api, UpstreamKey: "sk-secret"})
		c := client(srv, "")
		conv, err := c.Conversations.New(context.Background(), conversations.ConversationNewParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"false", "true"} {
			code, _, body := raw(t, srv, "POST", "/v1/responses", `{"model":"m","stream":`+stream+`,"conversation":"`+conv.ID+`","input":"My secret plan."}`)
			if code != http.StatusBadGateway || !strings.Contains(body, `"upstream_redirect"`) {
				t.Errorf("%s, stream %s: %d %s; want a 502 upstream_redirect", api, stream, code, body)
			}
		}
		if items, _, _ := st.Items(context.Background(), localKey(conv.ID), 0); len(items) != 0 {
			t.Errorf("%s: %d items stored", api, len(items))
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d requests followed the redirect", n)
	}
}

// TestResponsesUpstreamUnreachableSaysNoAddress: an upstream nobody
// listens on is a 502 whose message names no address (the upstream's
// host and port are the operator's business); the log has them.
func TestResponsesUpstreamUnreachableSaysNoAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	for _, api := range upstreamAPIs {
		st := memstore.New(memstore.Options{})
		t.Cleanup(func() { st.Close() })
		log := &testkit.SyncBuffer{}
		srv := serve(t, st, server.Options{Auth: server.AuthNone, Upstream: "http://" + addr + "/v1", UpstreamAPI: api,
			Logger: slog.New(slog.NewTextHandler(log, nil))})
		for _, stream := range []string{"false", "true"} {
			code, _, body := raw(t, srv, "POST", "/v1/responses", `{"model":"m","stream":`+stream+`,"input":"Hi"}`)
			if code != http.StatusBadGateway || !strings.Contains(body, "upstream_unreachable") ||
				strings.Contains(body, "127.0.0.1") || strings.Contains(body, port) || strings.Contains(body, "refused") {
				t.Errorf("%s, stream %s: %d %s; want a 502 that names no address", api, stream, code, body)
			}
		}
		if !strings.Contains(log.String(), addr) {
			t.Errorf("%s: the log does not say which upstream: %s", api, log.String())
		}
	}
}
