package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// DefaultMaxTurns is the number of model calls one Loop or Run makes when
// its options leave MaxTurns at zero.
const DefaultMaxTurns = 10

// ErrMaxTurns reports that the loop stopped because the model was still
// calling tools after MaxTurns model calls. The turns it completed are
// returned (and, under Run, persisted) with it.
var ErrMaxTurns = errors.New("agent: max turns reached")

// LoopOptions configure Loop. The zero value works.
type LoopOptions struct {
	// MaxTurns bounds the model calls. Default (0): DefaultMaxTurns.
	MaxTurns int
	// OnDelta receives the model's text as it streams. Default: no
	// streaming is asked of the model.
	OnDelta func(text string)
	// OnTool is told about every tool call once it has run.
	OnTool func(ToolEvent)
	// OnTurn receives every completed turn before the next model call. An
	// error stops the loop and is returned. Run persists turns here.
	OnTurn func(ctx context.Context, t Turn) error
}

// Turn is one model call and the tool calls it asked for.
type Turn struct {
	// N counts the turns of the loop from 1.
	N int
	// Reply holds the model's output items, verbatim.
	Reply []recall.Item
	// ToolOutputs holds one function_call_output per function_call of
	// Reply, in the same order.
	ToolOutputs []recall.Item
	// Usage is what the model reported for the call.
	Usage recall.Usage
}

// Items returns the turn's items in order: Reply, then ToolOutputs.
func (t Turn) Items() []recall.Item { return slices.Concat(t.Reply, t.ToolOutputs) }

// ToolEvent describes one tool call that ran.
type ToolEvent struct {
	Call   FunctionCall
	Output string
	// Err is the tool's error (its output then reads "error: ..."), or nil.
	Err error
}

// Loop runs the agent on items, the conversation so far, and returns the
// new items it produced: each turn's model output followed by the outputs
// of the tools it called. It stops when the model answers without a
// function call, or with ErrMaxTurns after MaxTurns model calls.
//
// Loop knows nothing of sessions. On error it returns the items of the
// turns completed (and accepted by OnTurn) so far; the turn in flight is
// dropped whole, so the returned items never hold a function_call without
// its output.
func Loop(ctx context.Context, a *Agent, items []recall.Item, opts LoopOptions) ([]recall.Item, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	maxTurns := opts.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	conv := slices.Clip(items) // appends below must never write into the caller's array
	var added []recall.Item
	for n := 1; n <= maxTurns; n++ {
		t, err := a.turn(ctx, n, conv, opts)
		if err != nil {
			return added, err
		}
		if opts.OnTurn != nil {
			if err := opts.OnTurn(ctx, t); err != nil {
				return added, err
			}
		}
		ti := t.Items()
		added = append(added, ti...)
		conv = append(conv, ti...)
		if len(t.ToolOutputs) == 0 {
			return added, nil
		}
	}
	return added, fmt.Errorf("agent %s: %w (%d)", a.Name, ErrMaxTurns, maxTurns)
}

// turn makes one model call and runs the tools it asks for.
func (a *Agent) turn(ctx context.Context, n int, conv []recall.Item, opts LoopOptions) (Turn, error) {
	resp, err := a.Model.Respond(ctx, &Request{
		Instructions: a.Instructions,
		Items:        conv,
		Tools:        a.Tools,
		OnDelta:      opts.OnDelta,
	})
	if err != nil {
		return Turn{}, fmt.Errorf("agent %s: turn %d: model: %w", a.Name, n, err)
	}
	if resp == nil {
		return Turn{}, fmt.Errorf("agent %s: turn %d: model returned no response", a.Name, n)
	}
	// A bad item would be refused by the store after the tools ran; refuse
	// it before anything has side effects.
	if err := recall.ValidateItems(resp.Items, 0); err != nil {
		return Turn{}, fmt.Errorf("agent %s: turn %d: model output: %w", a.Name, n, err)
	}
	t := Turn{N: n, Reply: recall.CloneItems(resp.Items), Usage: resp.Usage}
	for _, it := range t.Reply {
		call, ok := ParseFunctionCall(it)
		if !ok {
			continue
		}
		out, err := a.callTool(ctx, call)
		if ctx.Err() != nil {
			// Canceled mid-tool: the turn is incomplete and is dropped whole.
			return Turn{}, fmt.Errorf("agent %s: turn %d: tool %s: %w", a.Name, n, call.Name, ctx.Err())
		}
		if err != nil {
			out = "error: " + err.Error()
		}
		if opts.OnTool != nil {
			opts.OnTool(ToolEvent{Call: call, Output: out, Err: err})
		}
		t.ToolOutputs = append(t.ToolOutputs, FunctionCallOutput(call.CallID, out))
	}
	return t, nil
}

// callTool runs one call. Tool failures, including a panic, become an
// error the model is shown, so a faulty tool cannot kill the agent.
func (a *Agent) callTool(ctx context.Context, call FunctionCall) (out string, err error) {
	t := a.tool(call.Name)
	if t == nil {
		return "", fmt.Errorf("unknown tool %q", call.Name)
	}
	args := json.RawMessage(call.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return "", fmt.Errorf("arguments are not valid JSON: %.200q", call.Arguments)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("tool %s panicked: %v", call.Name, r)
		}
	}()
	return t.Call(ctx, args)
}
