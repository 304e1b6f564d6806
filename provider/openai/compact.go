package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
)

// CompactItems compacts a conversation with the Responses API's compact
// endpoint (POST /responses/compact): the server returns items that stand
// for items (the user messages and one opaque "compaction" item), which
// the next Responses request takes as input. It implements compact.Endpoint.
//
// Only the Responses API has the endpoint: a model speaking Chat
// Completions, or a server that answers 404, 405 or 501, gets an error
// wrapping recall.ErrUnsupported, so compact.Fallback moves on to a
// summary.
func (m *Model) CompactItems(ctx context.Context, instructions string, items []recall.Item) ([]recall.Item, recall.Usage, error) {
	if m.cfg.API != APIResponses {
		return nil, recall.Usage{}, fmt.Errorf("openai: compact: %w: the %s API has no compact endpoint", recall.ErrUnsupported, m.cfg.API)
	}
	if items == nil {
		items = []recall.Item{}
	}
	p := responses.ResponseCompactParams{
		Model: responses.ResponseCompactParamsModel(m.name),
		// Items go out verbatim, as in Respond.
		Input: param.Override[responses.ResponseCompactParamsInputUnion](items),
	}
	if instructions != "" {
		p.Instructions = param.NewOpt(instructions)
	}
	resp, err := m.client.Responses.Compact(ctx, p)
	if err != nil {
		var apiErr *oai.Error
		if errors.As(err, &apiErr) {
			switch apiErr.StatusCode {
			case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
				return nil, recall.Usage{}, fmt.Errorf("openai: compact %s: %w: %w", m.name, recall.ErrUnsupported, err)
			}
			if apiErr.Message != "" {
				return nil, recall.Usage{}, fmt.Errorf("openai: compact %s: %w: %.300s", m.name, err, apiErr.Message)
			}
		}
		return nil, recall.Usage{}, fmt.Errorf("openai: compact %s: %w", m.name, err)
	}
	var w wireResponse // a compaction answers output items and usage
	if err := json.Unmarshal([]byte(resp.RawJSON()), &w); err != nil {
		return nil, recall.Usage{}, fmt.Errorf("openai: compact %s: decode response: %w", m.name, err)
	}
	out := make([]recall.Item, len(w.Output))
	for i, raw := range w.Output {
		out[i] = recall.Item(raw)
	}
	return out, w.Usage.usage(), nil
}
