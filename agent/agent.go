// Package agent runs an AI agent over recall sessions.
//
// It has two layers. [Loop] is the agent loop itself: items in, items out.
// It calls the model, runs the tools the model asks for, and repeats until
// the model answers without a tool call. It knows nothing of sessions.
// [Run] wraps the loop with a [recall.Session]: it loads the history,
// persists the user input before the model is called, persists every turn
// as soon as it is complete, records token usage, titles the session after
// its first completed run, and calls a memory hook after every persist.
//
// Items are OpenAI Responses API items ([recall.Item]): "message",
// "function_call", "function_call_output", "reasoning" and any other type
// a model produces, kept as JSON verbatim. A [Model] speaks that shape;
// provider/openai adapts OpenAI-compatible servers to it and
// provider/offline is a deterministic stand-in that needs no network.
package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/recallkit/recall"
)

// Agent is a model with instructions and tools.
type Agent struct {
	// Name labels the agent in logs and UIs. The model never sees it.
	Name string
	// Instructions is the system prompt, sent with every model call. It is
	// not stored in the session, so changing it affects old sessions too.
	Instructions string
	// Model answers. It must not be nil.
	Model Model
	// Tools the model may call. Names must be unique.
	Tools []Tool
}

// Model is one call to a language model: the conversation so far in, the
// model's new output items out.
//
// Implementations must not modify req.Items, must return only items that
// are JSON objects, and must honour ctx. A Model is used by one Loop at a
// time but may be shared by several loops; implementations that keep state
// must be safe for concurrent use.
type Model interface {
	Respond(ctx context.Context, req *Request) (*Response, error)
}

// Request is what a Model is asked.
type Request struct {
	// Instructions is the system prompt; "" sends none.
	Instructions string
	// Items is the conversation: history, input and the turns so far.
	// Read-only.
	Items []recall.Item
	// Tools the model may call; nil offers none.
	Tools []Tool
	// Temperature, when not nil, sets the sampling temperature. Nil leaves
	// the model's default.
	Temperature *float64
	// OnDelta, when not nil, receives the reply's text as it is generated.
	// A Model that cannot stream calls it once with the whole text. The
	// concatenation of the deltas is the text of the reply's messages.
	OnDelta func(text string)
}

// Response is what a Model answered.
type Response struct {
	// Items are the new output items, in order: messages, function calls,
	// reasoning and whatever else the model produced, as Responses API
	// items.
	Items []recall.Item
	// Usage is the token usage the model reported for this call; zero when
	// it reported none.
	Usage recall.Usage
}

// Tool is a function the model can call.
type Tool interface {
	// Name is the function name the model calls, unique within an Agent.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Parameters is the JSON schema of the arguments object.
	Parameters() json.RawMessage
	// Call runs the tool with the model's arguments (a JSON object) and
	// returns the text the model sees. An error is shown to the model as
	// the tool's output ("error: ..."); it does not stop the loop. Call
	// must honour ctx.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Func returns a Tool that calls fn. params is the JSON schema of the
// arguments; nil means an object with no properties.
func Func(name, description string, params json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error)) Tool {
	if params == nil {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return &funcTool{name: name, desc: description, params: params, fn: fn}
}

type funcTool struct {
	name, desc string
	params     json.RawMessage
	fn         func(context.Context, json.RawMessage) (string, error)
}

func (t *funcTool) Name() string                { return t.name }
func (t *funcTool) Description() string         { return t.desc }
func (t *funcTool) Parameters() json.RawMessage { return t.params }
func (t *funcTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.fn(ctx, args)
}

// UserText returns the input of one user message with text, the usual
// argument of Run.
func UserText(text string) []recall.Item {
	return []recall.Item{recall.Message("user", text)}
}

// check validates an Agent before it runs.
func (a *Agent) check() error {
	if a == nil || a.Model == nil {
		return fmt.Errorf("agent: no model")
	}
	seen := map[string]bool{}
	for _, t := range a.Tools {
		if t == nil {
			return fmt.Errorf("agent %s: nil tool", a.Name)
		}
		if seen[t.Name()] {
			return fmt.Errorf("agent %s: duplicate tool %q", a.Name, t.Name())
		}
		seen[t.Name()] = true
	}
	return nil
}

func (a *Agent) tool(name string) Tool {
	for _, t := range a.Tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}
