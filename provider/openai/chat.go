package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

// chatMessage is a Chat Completions message as sent.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string   `json:"name"`
		Arguments flexText `json:"arguments"`
	} `json:"function"`
}

// flexText decodes what servers put where the spec has a string: the
// string itself, null, a list of content parts (their text joined), or,
// as some servers send tool arguments, a JSON object (its JSON text).
type flexText string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexText) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*f = flexText(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(b, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*f = flexText(sb.String())
		return nil
	}
	if string(b) == "null" {
		*f = ""
		return nil
	}
	*f = flexText(b)
	return nil
}

// chatMessages converts Responses items to chat messages, the edge
// between recall's item shape and Chat Completions:
//
//   - a message keeps its role and the text of its content ("developer"
//     becomes "system", which every server knows);
//   - function_call items become tool_calls of an assistant message,
//     joined to the assistant message just before them, as chat models
//     produce them;
//   - a function_call_output becomes a "tool" message;
//   - items chat cannot express (reasoning, hosted tool calls, ...) are
//     left out.
func chatMessages(instructions string, items []recall.Item) []chatMessage {
	var out []chatMessage
	if instructions != "" {
		out = append(out, chatMessage{Role: "system", Content: instructions})
	}
	for _, it := range items {
		switch it.Type() {
		case "message":
			role := it.Role()
			switch role {
			case "developer":
				role = "system"
			case "user", "system", "assistant":
			default:
				continue
			}
			out = append(out, chatMessage{Role: role, Content: messageText(it)})
		case "function_call":
			call, ok := agent.ParseFunctionCall(it)
			if !ok {
				continue
			}
			tc := chatToolCall{ID: call.CallID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = call.Name, flexText(call.Arguments)
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, tc)
			} else {
				out = append(out, chatMessage{Role: "assistant", ToolCalls: []chatToolCall{tc}})
			}
		case "function_call_output":
			out = append(out, chatMessage{Role: "tool", ToolCallID: it.CallID(), Content: it.OutputText()})
		}
	}
	return out
}

// messageText is the text of a message item, refusals included.
func messageText(it recall.Item) string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(it, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String()
}

func (m *Model) chatParams(req *agent.Request, stream bool) oai.ChatCompletionNewParams {
	p := oai.ChatCompletionNewParams{Model: m.name}
	for _, msg := range chatMessages(req.Instructions, req.Items) {
		p.Messages = append(p.Messages, param.Override[oai.ChatCompletionMessageParamUnion](msg))
	}
	if p.Messages == nil {
		p.Messages = []oai.ChatCompletionMessageParamUnion{}
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	for _, t := range req.Tools {
		raw := chatTool(t.Name(), t.Description(), toolSchema(t))
		p.Tools = append(p.Tools, param.Override[oai.ChatCompletionToolUnionParam](raw))
	}
	if stream {
		p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	}
	return p
}

// chatTool is a function tool as Chat Completions takes it.
func chatTool(name, description string, parameters json.RawMessage) json.RawMessage {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	raw, _ := json.Marshal(struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{name, description, parameters}})
	return raw
}

// chatUsage is Chat Completions usage as received.
type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (u *chatUsage) usage() recall.Usage {
	if u == nil {
		return recall.Usage{}
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return recall.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: total}
}

// chatReply converts an assistant reply to Responses items: a message
// with the text (and refusal), then one function_call per tool call.
func chatReply(content, refusal string, calls []chatToolCall) []recall.Item {
	var items []recall.Item
	if content != "" || refusal != "" {
		type part struct {
			Type        string `json:"type"`
			Text        string `json:"text,omitempty"`
			Refusal     string `json:"refusal,omitempty"`
			Annotations []any  `json:"annotations,omitempty"`
		}
		var parts []part
		if content != "" {
			parts = append(parts, part{Type: "output_text", Text: content, Annotations: []any{}})
		}
		if refusal != "" {
			parts = append(parts, part{Type: "refusal", Refusal: refusal})
		}
		b, _ := json.Marshal(struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []part `json:"content"`
		}{"message", "assistant", parts})
		items = append(items, b)
	}
	for _, c := range calls {
		id := c.ID
		if id == "" {
			// Some local servers omit call IDs; the pairing with the
			// output needs one.
			id = newCallID()
		}
		items = append(items, agent.FunctionCallItem(id, c.Function.Name, string(c.Function.Arguments)))
	}
	return items
}

func newCallID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

func (m *Model) chat(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	if req.OnDelta == nil {
		resp, err := m.client.Chat.Completions.New(ctx, m.chatParams(req, false))
		if err != nil {
			return nil, err
		}
		items, usage, err := ChatCompletionItems([]byte(resp.RawJSON()))
		if err != nil {
			return nil, err
		}
		return &agent.Response{Items: items, Usage: usage}, nil
	}

	stream := m.client.Chat.Completions.NewStreaming(ctx, m.chatParams(req, true))
	defer stream.Close()
	var acc ChatStream
	for stream.Next() {
		d, err := acc.Add([]byte(stream.Current().RawJSON()))
		if err != nil {
			return nil, err
		}
		if d != "" {
			req.OnDelta(d)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if !acc.Finished() {
		// The SDK ends a stream quietly at EOF; a reply without a finish
		// reason was cut off and must not be stored as if complete.
		return nil, fmt.Errorf("chat stream ended before the reply finished")
	}
	return &agent.Response{Items: acc.Items(), Usage: acc.Usage()}, nil
}

// ChatCompletionItems converts a Chat Completions response body (a
// "chat.completion" object) to Responses items, as ChatStream does for a
// stream: a message with the text (and refusal), then one function_call
// per tool call. It returns the usage the server reported.
func ChatCompletionItems(body []byte) ([]recall.Item, recall.Usage, error) {
	var w struct {
		Choices []struct {
			Message struct {
				Content   flexText       `json:"content"`
				Refusal   flexText       `json:"refusal"`
				ToolCalls []chatToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, recall.Usage{}, fmt.Errorf("decode chat completion: %w", err)
	}
	if len(w.Choices) == 0 {
		return nil, recall.Usage{}, fmt.Errorf("chat completion without choices")
	}
	msg := w.Choices[0].Message
	return chatReply(string(msg.Content), string(msg.Refusal), msg.ToolCalls), w.Usage.usage(), nil
}

// ChatStream gathers a streamed Chat Completions reply, chunk by chunk,
// into Responses items. The zero value is ready to use.
type ChatStream struct {
	content, refusal strings.Builder
	calls            map[int64]*chatToolCall
	usage            *chatUsage
	finished         bool
}

// Add takes one chunk (the JSON of a "chat.completion.chunk" event) and
// returns the text it adds to the reply, if any. Only the first choice
// is kept.
func (c *ChatStream) Add(chunk []byte) (string, error) {
	var ck struct {
		Choices []struct {
			Index        int64   `json:"index"`
			FinishReason *string `json:"finish_reason"`
			Delta        struct {
				Content   flexText `json:"content"`
				Refusal   flexText `json:"refusal"`
				ToolCalls []struct {
					Index    int64  `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string   `json:"name"`
						Arguments flexText `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(chunk, &ck); err != nil {
		return "", fmt.Errorf("decode chat chunk: %w", err)
	}
	if ck.Usage != nil {
		c.usage = ck.Usage
	}
	var delta strings.Builder
	for _, ch := range ck.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			c.finished = true
		}
		d := string(ch.Delta.Content)
		c.content.WriteString(d)
		delta.WriteString(d)
		c.refusal.WriteString(string(ch.Delta.Refusal))
		// A tool call arrives in pieces keyed by index: the first piece
		// carries its id and name, later ones more arguments.
		for _, tc := range ch.Delta.ToolCalls {
			if c.calls == nil {
				c.calls = map[int64]*chatToolCall{}
			}
			call := c.calls[tc.Index]
			if call == nil {
				call = &chatToolCall{Type: "function"}
				c.calls[tc.Index] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
	}
	return delta.String(), nil
}

// Finished reports whether a chunk carried a finish reason: a stream that
// ends without one was cut off.
func (c *ChatStream) Finished() bool { return c.finished }

// Usage is the usage the stream reported (zero if none).
func (c *ChatStream) Usage() recall.Usage { return c.usage.usage() }

// Items returns the reply so far as Responses items: the message, then
// the function calls in index order.
func (c *ChatStream) Items() []recall.Item {
	idx := make([]int64, 0, len(c.calls))
	for i := range c.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	ordered := make([]chatToolCall, len(idx))
	for i, k := range idx {
		ordered[i] = *c.calls[k]
	}
	return chatReply(c.content.String(), c.refusal.String(), ordered)
}
