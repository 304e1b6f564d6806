package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

// responsesParams builds a Responses request. Items and tool schemas go
// out as raw JSON (param.Override), so stored items reach the model
// exactly as they were stored, unknown fields and item types included.
func (m *Model) responsesParams(req *agent.Request) responses.ResponseNewParams {
	items := req.Items
	if items == nil {
		items = []recall.Item{} // "input" must be a list, never null
	}
	p := responses.ResponseNewParams{
		Model: m.name,
		Input: param.Override[responses.ResponseNewParamsInputUnion](items),
	}
	if req.Instructions != "" {
		p.Instructions = param.NewOpt(req.Instructions)
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	for _, t := range req.Tools {
		raw, _ := json.Marshal(struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		}{"function", t.Name(), t.Description(), toolSchema(t), false})
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](json.RawMessage(raw)))
	}
	return p
}

// wireUsage is the usage object of a Responses API response.
type wireUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// usage converts u (nil when the response had none).
func (u *wireUsage) usage() recall.Usage {
	if u == nil {
		return recall.Usage{}
	}
	return recall.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
}

// wireResponse is the part of a Responses API response object read here.
// Output items are kept as raw JSON: they are stored verbatim.
type wireResponse struct {
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  *wireUsage        `json:"usage"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// result converts a response object to an agent.Response.
func (w *wireResponse) result() (*agent.Response, error) {
	if w.Status == "failed" || w.Status == "cancelled" {
		msg := w.Status
		if w.Error != nil {
			msg = fmt.Sprintf("%s: %s: %s", w.Status, w.Error.Code, w.Error.Message)
		}
		return nil, fmt.Errorf("response %s", msg)
	}
	out := &agent.Response{}
	for _, raw := range w.Output {
		out.Items = append(out.Items, recall.Item(raw))
	}
	out.Usage = w.Usage.usage()
	return out, nil
}

func (m *Model) responses(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	p := m.responsesParams(req)
	if req.OnDelta == nil {
		resp, err := m.client.Responses.New(ctx, p)
		if err != nil {
			return nil, err
		}
		var w wireResponse
		if err := json.Unmarshal([]byte(resp.RawJSON()), &w); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		return w.result()
	}

	stream := m.client.Responses.NewStreaming(ctx, p)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			req.OnDelta(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			// The final event carries the whole response; its output is
			// what is stored, so deltas never have to be reassembled.
			var e struct {
				Response wireResponse `json:"response"`
			}
			if err := json.Unmarshal([]byte(ev.RawJSON()), &e); err != nil {
				return nil, fmt.Errorf("decode %s: %w", ev.Type, err)
			}
			return e.Response.result()
		case "error":
			return nil, fmt.Errorf("stream error: %s: %s", ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("stream ended before the response completed")
}
