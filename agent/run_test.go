package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/title"
)

// fixture is a fake OpenAI server, a model on it, and a session in a
// memstore.
type fixture struct {
	srv   *fakeopenai.Server
	model *openai.Model
	store *memstore.Store
	sess  *recall.StoreSession
}

func newFixture(t *testing.T, api openai.API) *fixture {
	t.Helper()
	srv := fakeopenai.New()
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.Options{})
	return &fixture{srv: srv, model: m, store: store,
		sess: recall.NewSession(store, recall.Key{Project: "proj", Session: recall.NewSessionID()})}
}

func (f *fixture) items(t *testing.T) []recall.Item {
	t.Helper()
	items, err := f.sess.GetItems(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func types(items []recall.Item) string {
	var s []string
	for _, it := range items {
		typ := it.Type()
		if typ == "message" {
			typ = it.Role()
		}
		s = append(s, typ)
	}
	return strings.Join(s, ",")
}

func sameItems(t *testing.T, what string, got []json.RawMessage, want []recall.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d\ngot:  %s\nwant: %s", what, len(got), len(want), got, want)
	}
	for i := range got {
		var g, w any
		json.Unmarshal(got[i], &g)
		json.Unmarshal(want[i], &w)
		if gb, _ := json.Marshal(g); string(gb) != string(mustJSON(w)) {
			t.Errorf("%s: item %d = %s, want %s", what, i, got[i], want[i])
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

var readTool = agent.Func("read_note", "Read the note.", nil,
	func(context.Context, json.RawMessage) (string, error) { return "the note says 42", nil })

func TestHistoryPrepended(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	a := &agent.Agent{Name: "t", Instructions: "Be kind.", Model: f.model}

	res, err := agent.Run(ctx, a, agent.UserText("my name is Ann"), agent.RunOptions{Session: f.sess})
	if err != nil {
		t.Fatal(err)
	}
	if res.History != 0 || res.Output != "echo: my name is Ann" || res.Turns != 1 {
		t.Errorf("run 1: %+v", res)
	}
	stored := f.items(t)
	if types(stored) != "user,assistant" {
		t.Fatalf("stored after run 1: %s", types(stored))
	}

	res, err = agent.Run(ctx, a, agent.UserText("what is my name?"), agent.RunOptions{Session: f.sess})
	if err != nil {
		t.Fatal(err)
	}
	if res.History != 2 {
		t.Errorf("run 2 history = %d, want 2", res.History)
	}
	// The model saw the stored items verbatim, then the new input; the
	// instructions went separately and were never stored.
	r := f.srv.Requests()[1]
	sameItems(t, "run 2 input", r.Input(), append(stored, agent.UserText("what is my name?")...))
	if r.Instructions() != "Be kind." {
		t.Errorf("instructions = %q", r.Instructions())
	}
	if types(f.items(t)) != "user,assistant,user,assistant" {
		t.Errorf("stored after run 2: %s", types(f.items(t)))
	}

	// A history limit sends only the newest items.
	if _, err := agent.Run(ctx, a, agent.UserText("third"), agent.RunOptions{Session: f.sess, HistoryLimit: 3}); err != nil {
		t.Fatal(err)
	}
	all := f.items(t)
	sameItems(t, "limited input", f.srv.Requests()[2].Input(), append(slices.Clone(all[1:4]), agent.UserText("third")...))
}

func TestHistoryPrependedChat(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIChat)
	a := &agent.Agent{Instructions: "sys", Model: f.model}
	for _, in := range []string{"one", "two"} {
		if _, err := agent.Run(ctx, a, agent.UserText(in), agent.RunOptions{Session: f.sess}); err != nil {
			t.Fatal(err)
		}
	}
	got := f.srv.Requests()[1].Messages()
	want := []fakeopenai.Message{{Role: "system", Text: "sys"}, {Role: "user", Text: "one"}, {Role: "assistant", Text: "echo: one"}, {Role: "user", Text: "two"}}
	if !slices.Equal(got, want) {
		t.Errorf("chat messages = %v, want %v", got, want)
	}
}

// TestOrphanOutputDropped cuts the history window between a call and its
// output: the output must not be sent, and the limit must not make the
// model see a call without its output either.
func TestOrphanOutputDropped(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	hist := []recall.Item{
		recall.Message("user", "read it"),
		agent.FunctionCallItem("call_1", "read_note", "{}"),
		agent.FunctionCallOutput("call_1", "42"),
		recall.Message("assistant", "It says 42."),
	}
	if err := f.sess.AddItems(ctx, hist...); err != nil {
		t.Fatal(err)
	}
	res, err := agent.Run(ctx, &agent.Agent{Model: f.model}, agent.UserText("thanks"), agent.RunOptions{Session: f.sess, HistoryLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	in := f.srv.Requests()[0].Input()
	sameItems(t, "input", in, []recall.Item{hist[3], recall.Message("user", "thanks")})
	if res.History != 1 {
		t.Errorf("History = %d, want 1", res.History)
	}
}

func TestToolTurnPersistence(t *testing.T) {
	for _, api := range []openai.API{openai.APIResponses, openai.APIChat} {
		t.Run(string(api), func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, api)
			// When the second model call arrives, the first turn must
			// already be in the store: persistence is per turn.
			var (
				mu      sync.Mutex // the responder runs on the server's goroutine
				atTurn2 []recall.Item
			)
			f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
				if r.N == 1 {
					return fakeopenai.Reply{Text: "Let me read it.", ToolCalls: []fakeopenai.ToolCall{{ID: "call_n", Name: "read_note", Arguments: "{}"}}}
				}
				mu.Lock()
				defer mu.Unlock()
				atTurn2, _ = f.sess.GetItems(context.Background(), 0) // not f.items: t.Fatal is for the test goroutine
				return fakeopenai.Reply{Text: "The note says 42."}
			})
			var persisted [][]recall.Item
			var tools []agent.ToolEvent
			var deltas strings.Builder
			a := &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}
			res, err := agent.Run(ctx, a, agent.UserText("read the note"), agent.RunOptions{
				Session: f.sess,
				OnDelta: func(s string) { deltas.WriteString(s) },
				OnTool:  func(e agent.ToolEvent) { tools = append(tools, e) },
				OnPersist: func(_ context.Context, items []recall.Item) error {
					persisted = append(persisted, items)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := types(f.items(t)); got != "user,assistant,function_call,function_call_output,assistant" {
				t.Fatalf("stored = %s", got)
			}
			mu.Lock()
			if types(atTurn2) != "user,assistant,function_call,function_call_output" {
				t.Errorf("store when turn 2 was asked for = %s", types(atTurn2))
			}
			mu.Unlock()
			if len(persisted) != 3 || types(persisted[0]) != "user" || len(persisted[1]) != 3 || types(persisted[2]) != "assistant" {
				t.Errorf("hook calls = %d: %v", len(persisted), persisted)
			}
			if len(tools) != 1 || tools[0].Output != "the note says 42" || tools[0].Call.CallID != "call_n" {
				t.Errorf("tool events = %+v", tools)
			}
			if deltas.String() != "Let me read it.The note says 42." {
				t.Errorf("deltas = %q", deltas.String())
			}
			if res.Output != "The note says 42." || res.Turns != 2 || len(res.Items) != 5 {
				t.Errorf("result = %+v", res)
			}
			// The second request carried the call and its output.
			if got := f.srv.Requests()[1]; !strings.Contains(string(got.Body), "the note says 42") {
				t.Errorf("second request lacks the tool output: %s", got.Body)
			}
		})
	}
}

// TestCallNeverStoredWithoutOutput watches the store while a tool runs,
// then cancels the run inside the tool.
func TestCallNeverStoredWithoutOutput(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	f.srv.Enqueue(fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "slow"}, {Name: "slow"}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	slow := agent.Func("slow", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		calls++
		for _, it := range f.items(t) {
			if it.Type() == "function_call" {
				t.Errorf("a function_call is stored while its tool runs: %s", it)
			}
		}
		if calls == 2 {
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "first done", nil
	})
	res, err := agent.Run(ctx, &agent.Agent{Model: f.model, Tools: []agent.Tool{slow}}, agent.UserText("go"), agent.RunOptions{Session: f.sess})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if got := types(f.items(t)); got != "user" {
		t.Errorf("stored = %s, want only the input", got)
	}
	if res.Turns != 0 || len(res.Items) != 1 {
		t.Errorf("result = %+v", res)
	}
}

// TestFailedTurnLosesOnlyItself fails the second model call: the input
// and the first turn stay, and the next run carries on from them.
func TestFailedTurnLosesOnlyItself(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIChat)
	f.srv.Enqueue(
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{ID: "c1", Name: "read_note"}}},
		fakeopenai.Reply{Status: 500, Error: "down"},
	)
	a := &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}
	res, err := agent.Run(ctx, a, agent.UserText("read"), agent.RunOptions{Session: f.sess})
	if err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("err = %v", err)
	}
	if got := types(f.items(t)); got != "user,function_call,function_call_output" {
		t.Errorf("stored = %s", got)
	}
	if res.Turns != 1 || len(res.Items) != 3 {
		t.Errorf("result = %+v", res)
	}
	// The next run sends everything stored.
	if _, err := agent.Run(ctx, a, agent.UserText("again"), agent.RunOptions{Session: f.sess}); err != nil {
		t.Fatal(err)
	}
	// In chat form: user, assistant with the tool call, tool, user.
	in := f.srv.Requests()[2].Input()
	want := `[{"role":"user","content":"read"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_note","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"the note says 42"},{"role":"user","content":"again"}]`
	var g, w any
	json.Unmarshal(mustJSON(in), &g)
	json.Unmarshal([]byte(want), &w)
	if string(mustJSON(g)) != string(mustJSON(w)) {
		t.Errorf("third request = %s\nwant %s", mustJSON(in), want)
	}
}

func TestUsageRecorded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	f.srv.Enqueue(
		fakeopenai.Reply{Text: "Reading.", ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}, Usage: fakeopenai.Usage{Input: 10, Output: 5}},
		fakeopenai.Reply{Text: "42.", Usage: fakeopenai.Usage{Input: 20, Output: 7}},
		fakeopenai.Reply{Text: "Bye.", Usage: fakeopenai.Usage{Input: 30, Output: 1}},
	)
	a := &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}
	res, err := agent.Run(ctx, a, agent.UserText("read"), agent.RunOptions{Session: f.sess})
	if err != nil {
		t.Fatal(err)
	}
	if want := (recall.Usage{InputTokens: 30, OutputTokens: 12, TotalTokens: 42}); res.Usage != want {
		t.Errorf("result usage = %+v, want %+v", res.Usage, want)
	}
	if _, err := agent.Run(ctx, a, agent.UserText("bye"), agent.RunOptions{Session: f.sess}); err != nil {
		t.Fatal(err)
	}
	meta, entries, err := f.store.Load(ctx, f.sess.Key())
	if err != nil {
		t.Fatal(err)
	}
	if want := (recall.Usage{InputTokens: 60, OutputTokens: 13, TotalTokens: 73}); meta.Usage != want {
		t.Errorf("session usage = %+v, want %+v", meta.Usage, want)
	}
	// Usage sits on the model's last item of each turn, never on the
	// input or on a tool output.
	var with []string
	for _, e := range entries {
		if e.Usage != nil {
			it := recall.Item(e.Data)
			with = append(with, it.Type()+":"+it.Text())
		}
	}
	if want := []string{"function_call:", "message:42.", "message:Bye."}; !slices.Equal(with, want) {
		t.Errorf("entries with usage = %q, want %q", with, want)
	}
}

// titleFixture answers title requests (recognised by their instructions)
// with titleText and counts them.
func titleFixture(t *testing.T, titleText string, during func()) (*fixture, *title.Generator, func() int) {
	f := newFixture(t, openai.APIResponses)
	tm, err := openai.NewTitleModel(openai.Config{BaseURL: f.srv.URL(), APIKey: "k", Model: "fake", TitleModel: "cheap", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if r.Instructions() == title.Prompt {
			mu.Lock()
			n++
			mu.Unlock()
			if during != nil {
				during()
			}
			return fakeopenai.Reply{Text: titleText}
		}
		return fakeopenai.Echo(r)
	})
	return f, &title.Generator{Model: tm}, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestTitleOnce(t *testing.T) {
	ctx := context.Background()
	f, gen, count := titleFixture(t, `"Greeting Ann"`, nil)
	a := &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}
	f.srv.Enqueue(fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}})
	res, err := agent.Run(ctx, a, agent.UserText("hello, I am Ann"), agent.RunOptions{Session: f.sess, Titler: gen})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.store.Stat(ctx, f.sess.Key())
	if m.Title != "Greeting Ann" || m.TitleSource != recall.TitleAuto || res.Title != "Greeting Ann" {
		t.Fatalf("title = %q (%s), result %q", m.Title, m.TitleSource, res.Title)
	}
	// The title request: the cheap model, temperature 0.3, and only the
	// text of user and assistant messages.
	var tr fakeopenai.Request
	for _, r := range f.srv.Requests() {
		if r.Instructions() == title.Prompt {
			tr = r
		}
	}
	if tr.Model != "cheap" || tr.Temperature() == nil || *tr.Temperature() != 0.3 || len(tr.ToolNames()) != 0 {
		t.Errorf("title request: model %q temperature %v tools %v", tr.Model, tr.Temperature(), tr.ToolNames())
	}
	body := string(tr.Body)
	if !strings.Contains(body, "hello, I am Ann") || strings.Contains(body, "the note says 42") || strings.Contains(body, "read_note") {
		t.Errorf("title request body = %s", body)
	}

	for range 2 {
		res, err := agent.Run(ctx, a, agent.UserText("more"), agent.RunOptions{Session: f.sess, Titler: gen})
		if err != nil || res.Title != "" {
			t.Fatalf("later run: %v, title %q", err, res.Title)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("%d title requests, want 1", n)
	}
}

func TestTitleNeverOverwritesUserTitle(t *testing.T) {
	ctx := context.Background()

	// Titled by the user before the first run: no title request at all.
	f, gen, count := titleFixture(t, "Auto Title", nil)
	a := &agent.Agent{Model: f.model}
	if err := f.sess.AddItems(ctx, recall.Message("user", "earlier")); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(f.store, f.sess.Key()).SetTitle(ctx, "Mine", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(ctx, a, agent.UserText("hi"), agent.RunOptions{Session: f.sess, Titler: gen}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.store.Stat(ctx, f.sess.Key()); m.Title != "Mine" || m.TitleSource != recall.TitleUser || count() != 0 {
		t.Errorf("title = %q (%s), %d title requests", m.Title, m.TitleSource, count())
	}

	// Titled by the user while the title was being generated.
	var f2 *fixture
	f2, gen2, _ := titleFixture(t, "Auto Title", func() {
		if _, err := recall.NewSession(f2.store, f2.sess.Key()).SetTitle(ctx, "Typed meanwhile", recall.TitleUser); err != nil {
			t.Error(err)
		}
	})
	res, err := agent.Run(ctx, &agent.Agent{Model: f2.model}, agent.UserText("hi"), agent.RunOptions{Session: f2.sess, Titler: gen2})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := f2.store.Stat(ctx, f2.sess.Key()); m.Title != "Typed meanwhile" || m.TitleSource != recall.TitleUser || res.Title != "" {
		t.Errorf("title = %q (%s), result title %q", m.Title, m.TitleSource, res.Title)
	}
}

func TestTitleFallback(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIChat)
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if r.Temperature() != nil { // title requests
			return fakeopenai.Reply{Status: 500, Error: "no titles today"}
		}
		return fakeopenai.Echo(r)
	})
	now := time.Date(2026, 6, 23, 14, 30, 0, 0, time.Local)
	var why error
	gen := &title.Generator{Model: f.model, Now: func() time.Time { return now }, OnError: func(err error) { why = err }}
	res, err := agent.Run(ctx, &agent.Agent{Model: f.model}, agent.UserText("hi"), agent.RunOptions{Session: f.sess, Titler: gen})
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != "Session 2026-06-23 14:30" || why == nil || !strings.Contains(why.Error(), "no titles today") {
		t.Errorf("title = %q, error = %v", res.Title, why)
	}
}

func TestRunWithoutSession(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	res, err := agent.Run(context.Background(), &agent.Agent{Model: f.model}, agent.UserText("hi"), agent.RunOptions{Titler: &title.Generator{}})
	if err != nil || res.Output != "echo: hi" || len(res.Items) != 2 || res.Title != "" {
		t.Errorf("res = %+v, err = %v", res, err)
	}
}

// plainSession is a Session that is not store-backed.
type plainSession struct{ recall.Session }

func TestPlainSessionAndHookError(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	sess := plainSession{f.sess}
	hookErr := errors.New("memory full")
	calls := 0
	res, err := agent.Run(ctx, &agent.Agent{Model: f.model}, agent.UserText("hi"), agent.RunOptions{
		Session: sess,
		Titler:  &title.Generator{},
		OnPersist: func(context.Context, []recall.Item) error {
			calls++
			if calls == 2 {
				return hookErr
			}
			return nil
		},
	})
	if !errors.Is(err, hookErr) {
		t.Fatalf("err = %v", err)
	}
	// The turn was stored before the hook failed, and the result says so.
	if types(f.items(t)) != "user,assistant" || len(res.Items) != 2 || res.Turns != 1 {
		t.Errorf("stored %s, result %+v", types(f.items(t)), res)
	}
	// Without Store() and Key(), usage is not recorded and there is no title.
	if m, _ := f.store.Stat(ctx, f.sess.Key()); !m.Usage.IsZero() || m.Title != "" {
		t.Errorf("meta = %+v", m)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	_, err := agent.Run(context.Background(), &agent.Agent{Model: f.model}, []recall.Item{recall.Item(`"just a string"`)}, agent.RunOptions{Session: f.sess})
	if !errors.Is(err, recall.ErrInvalidItem) {
		t.Fatalf("err = %v", err)
	}
	if len(f.srv.Requests()) != 0 || len(f.items(t)) != 0 {
		t.Error("a bad input reached the model or the store")
	}
}

func TestMaxTurnsPersistsPairs(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	f.srv.SetResponder(func(fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}}
	})
	res, err := agent.Run(context.Background(), &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}, agent.UserText("loop"),
		agent.RunOptions{Session: f.sess, MaxTurns: 2, Titler: &title.Generator{}})
	if !errors.Is(err, agent.ErrMaxTurns) {
		t.Fatalf("err = %v", err)
	}
	if got := types(f.items(t)); got != "user,function_call,function_call_output,function_call,function_call_output" {
		t.Errorf("stored = %s", got)
	}
	if res.Title != "" {
		t.Error("an unfinished run titled the session")
	}
}

func TestUndo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	f.srv.Enqueue(fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}}, fakeopenai.Reply{Text: "42"})
	a := &agent.Agent{Model: f.model, Tools: []agent.Tool{readTool}}
	if _, err := agent.Run(ctx, a, agent.UserText("first"), agent.RunOptions{Session: f.sess}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(ctx, a, agent.UserText("second"), agent.RunOptions{Session: f.sess}); err != nil {
		t.Fatal(err)
	}
	if got := types(f.items(t)); got != "user,function_call,function_call_output,assistant,user,assistant" {
		t.Fatalf("stored = %s", got)
	}
	popped, err := agent.Undo(ctx, f.sess)
	if err != nil || types(popped) != "user,assistant" || popped[0].Text() != "second" {
		t.Fatalf("undo 1: %s, %v", popped, err)
	}
	popped, err = agent.Undo(ctx, f.sess)
	if err != nil || types(popped) != "user,function_call,function_call_output,assistant" {
		t.Fatalf("undo 2: %s, %v", popped, err)
	}
	if popped, err := agent.Undo(ctx, f.sess); err != nil || popped != nil || len(f.items(t)) != 0 {
		t.Errorf("undo of an empty session: %s, %v", popped, err)
	}
	// Items before the first user message are not a turn and stay.
	f.sess.AddItems(ctx, recall.Message("assistant", "welcome"))
	if popped, _ := agent.Undo(ctx, f.sess); popped != nil || len(f.items(t)) != 1 {
		t.Errorf("undo without a user message popped %s", popped)
	}
}

// TestEmptyRun runs with no input on an empty session and a model that
// answers nothing: nothing is stored, and titling has nothing to name.
func TestEmptyRun(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	f.srv.Enqueue(fakeopenai.Reply{})
	res, err := agent.Run(context.Background(), &agent.Agent{Model: f.model}, nil, agent.RunOptions{Session: f.sess, Titler: &title.Generator{}})
	if err != nil || res.Turns != 1 || len(res.Items) != 0 || res.Title != "" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	if _, err := f.store.Stat(context.Background(), f.sess.Key()); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("session exists after an empty run: %v", err)
	}
}
