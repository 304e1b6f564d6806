package openai

import (
	"encoding/json"

	"github.com/recallkit/recall"
)

// The translation between the Responses API and Chat Completions, for
// code that relays requests rather than running an agent (recall serve's
// POST /v1/responses in front of a Chat Completions server). The Model
// uses the same functions.

// ChatMessages converts Responses items, and the instructions (as a
// leading system message, when not ""), to Chat Completions messages, as
// the Model sends them: see chatMessages for what maps to what.
func ChatMessages(instructions string, items []recall.Item) []json.RawMessage {
	msgs := chatMessages(instructions, items)
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i], _ = json.Marshal(m)
	}
	return out
}

// ChatTools converts Responses tools to Chat Completions tools. Function
// tools ({"type":"function","name",...}) convert; tools chat cannot
// express (hosted tools such as web_search) are left out.
func ChatTools(tools []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	for _, raw := range tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Type != "function" || t.Name == "" {
			continue
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, chatTool(t.Name, t.Description, params))
	}
	return out
}

// ResolveAPI returns the wire API a Config with this BaseURL and API
// uses: api itself when set, else (APIAuto) the Responses API for
// OpenAI's endpoint and Chat Completions for any other server. It fails
// for a base URL or API that cannot work.
func ResolveAPI(baseURL string, api API) (API, error) {
	c, err := Config{BaseURL: baseURL, API: api}.resolved()
	return c.API, err
}
