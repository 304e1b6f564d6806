package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/recallkit/recall/agent"
)

// Output formats of chat -p, as Claude Code names them.
const (
	outputText       = "text"
	outputJSON       = "json"
	outputStreamJSON = "stream-json"
)

// resultEvent is the last line of -p --output-format json or
// stream-json, in Claude Code's shape: the reply, the session it went to,
// and what it cost. total_cost_usd is left out: recall does not know the
// prices of the server's models.
type resultEvent struct {
	Type       string      `json:"type"`    // "result"
	Subtype    string      `json:"subtype"` // "success" or "error"
	IsError    bool        `json:"is_error"`
	Result     string      `json:"result"` // the reply, or the error
	SessionID  string      `json:"session_id"`
	DurationMS int64       `json:"duration_ms"`
	NumTurns   int         `json:"num_turns"`
	Usage      usageFields `json:"usage"`
}

// usageFields are the tokens of a run.
type usageFields struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// initEvent is the first line of stream-json.
type initEvent struct {
	Type      string `json:"type"`    // "system"
	Subtype   string `json:"subtype"` // "init"
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	CWD       string `json:"cwd"`
}

// streamEvent carries one piece of the reply as it streams.
type streamEvent struct {
	Type      string     `json:"type"` // "stream_event"
	Event     deltaEvent `json:"event"`
	SessionID string     `json:"session_id"`
}

type deltaEvent struct {
	Type  string    `json:"type"` // "content_block_delta"
	Delta textDelta `json:"delta"`
}

type textDelta struct {
	Type string `json:"type"` // "text_delta"
	Text string `json:"text"`
}

// messageEvent is a whole message: the assistant's reply or tool call,
// or a tool's result given back ("user", as Claude Code has it).
type messageEvent struct {
	Type      string      `json:"type"` // "assistant" or "user"
	Message   messageBody `json:"message"`
	SessionID string      `json:"session_id"`
}

type messageBody struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is a text, tool_use or tool_result block; only the fields
// of its type are set.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// sendStructured runs one -p exchange and prints it as JSON on stdout:
// one result object (json), or one event per line (stream-json): init,
// the reply's deltas, tool calls and results, the whole reply, and the
// result. A failed run still prints its result (is_error true) and then
// fails as usual.
func (c *chatSession) sendStructured(ctx context.Context, text, format, cwd string) error {
	start := time.Now()
	enc := json.NewEncoder(c.app.stdout)
	stream := format == outputStreamJSON
	id := c.key.Session
	emit := func(v any) {
		if stream {
			_ = enc.Encode(v)
		}
	}
	emit(initEvent{Type: "system", Subtype: "init", SessionID: id, Model: c.model.label, CWD: cwd})
	res, err := agent.Run(ctx, c.agent, agent.UserText(text), c.extras.runOptions(c.st, c.key, agent.RunOptions{
		HistoryLimit: c.history,
		OnDelta: func(s string) {
			emit(streamEvent{Type: "stream_event", SessionID: id, Event: deltaEvent{Type: "content_block_delta", Delta: textDelta{Type: "text_delta", Text: s}}})
		},
		OnTool: func(ev agent.ToolEvent) {
			input := json.RawMessage(ev.Call.Arguments)
			if !json.Valid(input) {
				input, _ = json.Marshal(ev.Call.Arguments)
			}
			emit(messageEvent{Type: "assistant", SessionID: id, Message: messageBody{Role: "assistant",
				Content: []contentBlock{{Type: "tool_use", ID: ev.Call.CallID, Name: ev.Call.Name, Input: input}}}})
			emit(messageEvent{Type: "user", SessionID: id, Message: messageBody{Role: "user",
				Content: []contentBlock{{Type: "tool_result", ToolUseID: ev.Call.CallID, Content: ev.Output, IsError: ev.Err != nil}}}})
		},
		OnPersist: c.onPersist,
		Titler:    c.model.titler,
	}))
	if err != nil {
		c.titleFromMessage(ctx, text)
	}
	r := resultEvent{Type: "result", Subtype: "success", SessionID: id, DurationMS: time.Since(start).Milliseconds()}
	if res != nil {
		r.NumTurns, r.Result = res.Turns, res.Output
		r.Usage = usageFields(res.Usage)
	}
	if err != nil {
		r.Subtype, r.IsError, r.Result = "error", true, errorLine(err)
	} else {
		emit(messageEvent{Type: "assistant", SessionID: id, Message: messageBody{Role: "assistant",
			Content: []contentBlock{{Type: "text", Text: r.Result}}}})
	}
	if encErr := enc.Encode(r); encErr != nil && err == nil {
		err = encErr
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return withHint(errors.New("interrupted; the reply in flight was not saved"), "your message is saved; 'recall chat -c' continues")
	}
	return err
}
