package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// scripted is a Model that answers from a list, for tests of the loop's
// own logic. Provider behaviour is tested against the fake server.
type scripted struct {
	replies []*Response
	seen    [][]recall.Item
}

func (s *scripted) Respond(ctx context.Context, req *Request) (*Response, error) {
	s.seen = append(s.seen, slices.Clone(req.Items))
	if len(s.replies) == 0 {
		return nil, errors.New("script exhausted")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, nil
}

func reply(items ...recall.Item) *Response { return &Response{Items: items} }

func TestLoopToolErrorsReachTheModel(t *testing.T) {
	boom := Func("boom", "panics", nil, func(context.Context, json.RawMessage) (string, error) { panic("kaboom") })
	fail := Func("fail", "fails", nil, func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk full") })
	echo := Func("echo", "echoes", nil, func(_ context.Context, a json.RawMessage) (string, error) { return string(a), nil })
	m := &scripted{replies: []*Response{
		reply(
			FunctionCallItem("c1", "nope", `{}`),
			FunctionCallItem("c2", "boom", `{}`),
			FunctionCallItem("c3", "fail", `{}`),
			FunctionCallItem("c4", "echo", `{"a":`),
			FunctionCallItem("c5", "echo", ``),
			FunctionCallItem("c6", "echo", `{"x":1}`),
		),
		reply(recall.Message("assistant", "done")),
	}}
	var events []ToolEvent
	a := &Agent{Name: "t", Model: m, Tools: []Tool{boom, fail, echo}}
	out, err := Loop(context.Background(), a, UserText("go"), LoopOptions{OnTool: func(e ToolEvent) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`error: unknown tool "nope"`,
		"error: tool boom panicked: kaboom",
		"error: disk full",
		"error: arguments are not valid JSON",
		"{}",
		`{"x":1}`,
	}
	if len(out) != 6+6+1 {
		t.Fatalf("got %d items: %s", len(out), out)
	}
	for i, w := range want {
		o := out[6+i]
		if o.Type() != "function_call_output" || o.CallID() != "c"+string(rune('1'+i)) || !strings.HasPrefix(o.OutputText(), w) {
			t.Errorf("output %d = %s, want prefix %q", i, o, w)
		}
		if (events[i].Err != nil) != strings.HasPrefix(w, "error:") {
			t.Errorf("event %d: err = %v", i, events[i].Err)
		}
	}
	// The second call saw the whole first turn.
	if len(m.seen[1]) != 1+12 {
		t.Errorf("second call saw %d items", len(m.seen[1]))
	}
}

func TestLoopDoesNotWriteCallerArray(t *testing.T) {
	items := make([]recall.Item, 1, 10) // spare capacity an append could write into
	items[0] = recall.Message("user", "hi")
	spare := items[:2]
	spare[1] = recall.Message("user", "sentinel")
	m := &scripted{replies: []*Response{reply(recall.Message("assistant", "hello"))}}
	if _, err := Loop(context.Background(), &Agent{Model: m}, items, LoopOptions{}); err != nil {
		t.Fatal(err)
	}
	if spare[1].Text() != "sentinel" {
		t.Errorf("Loop wrote into the caller's array: %s", spare[1])
	}
}

func TestLoopRefusesBadModelOutput(t *testing.T) {
	ran := false
	tool := Func("t", "", nil, func(context.Context, json.RawMessage) (string, error) { ran = true; return "", nil })
	m := &scripted{replies: []*Response{reply(FunctionCallItem("c1", "t", "{}"), recall.Item(`[1,2]`))}}
	out, err := Loop(context.Background(), &Agent{Model: m, Tools: []Tool{tool}}, UserText("x"), LoopOptions{})
	if !errors.Is(err, recall.ErrInvalidItem) || out != nil {
		t.Fatalf("err = %v out = %s", err, out)
	}
	if ran {
		t.Error("a tool ran for a turn whose output was refused")
	}
}

func TestLoopMaxTurns(t *testing.T) {
	tool := Func("t", "", nil, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	m := &scripted{}
	for i := range 5 {
		m.replies = append(m.replies, reply(FunctionCallItem("c"+string(rune('0'+i)), "t", "{}")))
	}
	var turns []int
	out, err := Loop(context.Background(), &Agent{Model: m, Tools: []Tool{tool}}, UserText("x"), LoopOptions{
		MaxTurns: 3,
		OnTurn:   func(_ context.Context, t Turn) error { turns = append(turns, t.N); return nil },
	})
	if !errors.Is(err, ErrMaxTurns) {
		t.Fatalf("err = %v", err)
	}
	if len(out) != 6 || !slices.Equal(turns, []int{1, 2, 3}) || len(m.seen) != 3 {
		t.Errorf("out %d items, turns %v, calls %d", len(out), turns, len(m.seen))
	}
}

func TestLoopOnTurnErrorStops(t *testing.T) {
	m := &scripted{replies: []*Response{reply(recall.Message("assistant", "a"))}}
	stop := errors.New("disk gone")
	out, err := Loop(context.Background(), &Agent{Model: m}, UserText("x"), LoopOptions{
		OnTurn: func(context.Context, Turn) error { return stop },
	})
	if !errors.Is(err, stop) || len(out) != 0 {
		t.Errorf("err = %v, out = %s", err, out)
	}
}

func TestAgentCheck(t *testing.T) {
	tool := Func("t", "", nil, nil)
	for _, a := range []*Agent{nil, {}, {Model: &scripted{}, Tools: []Tool{tool, tool}}, {Model: &scripted{}, Tools: []Tool{nil}}} {
		if _, err := Loop(context.Background(), a, nil, LoopOptions{}); err == nil {
			t.Errorf("Loop accepted %+v", a)
		}
	}
}

func TestTrimOrphans(t *testing.T) {
	u := recall.Message("user", "u")
	as := recall.Message("assistant", "a")
	fc := func(id string) recall.Item { return FunctionCallItem(id, "f", "{}") }
	fo := func(id string) recall.Item { return FunctionCallOutput(id, "o") }
	cc := func(id string) recall.Item {
		return recall.Item(`{"type":"computer_call","call_id":"` + id + `","action":{}}`)
	}
	co := func(id string) recall.Item {
		return recall.Item(`{"type":"computer_call_output","call_id":"` + id + `","output":{}}`)
	}
	ws := recall.Item(`{"type":"web_search_call","id":"ws_1","status":"completed"}`)
	cases := []struct {
		name     string
		in, want []recall.Item
	}{
		{"empty", nil, nil},
		{"whole pairs", []recall.Item{u, fc("1"), fo("1"), as}, []recall.Item{u, fc("1"), fo("1"), as}},
		{"window starts at an output", []recall.Item{fo("1"), as, u}, []recall.Item{as, u}},
		{"parallel calls cut", []recall.Item{fc("2"), fo("1"), fo("2"), as}, []recall.Item{fc("2"), fo("2"), as}},
		{"unanswered call", []recall.Item{u, fc("1"), as, fc("2"), fo("2")}, []recall.Item{u, as, fc("2"), fo("2")}},
		{"output before its call", []recall.Item{fo("1"), fc("1"), u}, []recall.Item{u}},
		{"other call types pair too", []recall.Item{co("9"), cc("1"), co("1"), cc("2")}, []recall.Item{cc("1"), co("1")}},
		{"hosted calls need no output", []recall.Item{ws, as}, []recall.Item{ws, as}},
	}
	for _, c := range cases {
		got := TrimOrphans(c.in)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
			continue
		}
		for i := range got {
			if string(got[i]) != string(c.want[i]) {
				t.Errorf("%s: item %d = %s, want %s", c.name, i, got[i], c.want[i])
			}
		}
	}
}
