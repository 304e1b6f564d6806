package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/provider/openai"
)

// A Chat Completions upstream (Ollama, vLLM, llama.cpp, LM Studio) gets
// the Responses request translated, with provider/openai's translation
// (the one recall chat uses), and its answer is translated back into a
// Responses object or stream.
//
// Translated: model; instructions and input (as messages); function
// tools and tool_choice; temperature, top_p, max_output_tokens (as
// max_tokens), parallel_tool_calls, user; stream (asking for usage).
// Everything else of the Responses request (text formats, reasoning,
// hosted tools, include, ...) has no Chat Completions counterpart and is
// left out.

// chatRequest translates a Responses request body, with input as its
// input items, to a Chat Completions one.
func chatRequest(body map[string]json.RawMessage, input []recall.Item, stream bool) ([]byte, error) {
	var instructions string
	if raw, ok := body["instructions"]; ok {
		_ = json.Unmarshal(raw, &instructions)
	}
	out := map[string]any{"model": body["model"]}
	if _, ok := body["model"]; !ok {
		return nil, invalidParam("model", "Missing required parameter: 'model'.")
	}
	msgs := openai.ChatMessages(instructions, input)
	if msgs == nil {
		msgs = []json.RawMessage{}
	}
	out["messages"] = msgs
	for _, f := range []string{"temperature", "top_p", "parallel_tool_calls", "user"} {
		if v, ok := body[f]; ok && string(v) != "null" {
			out[f] = v
		}
	}
	if v, ok := body["max_output_tokens"]; ok && string(v) != "null" {
		out["max_tokens"] = v
	}
	if raw, ok := body["tools"]; ok {
		var tools []json.RawMessage
		if json.Unmarshal(raw, &tools) != nil {
			return nil, invalidParam("tools", "Invalid 'tools': expected a list.")
		}
		if ct := openai.ChatTools(tools); len(ct) > 0 {
			out["tools"] = ct
			if tc, ok := chatToolChoice(body["tool_choice"]); ok {
				out["tool_choice"] = tc
			}
		}
	}
	if stream {
		out["stream"] = true
		out["stream_options"] = map[string]bool{"include_usage": true}
	}
	return json.Marshal(out)
}

// chatToolChoice translates a Responses tool_choice: "auto", "none" and
// "required" are the same; {"type":"function","name":N} names the
// function differently.
func chatToolChoice(raw json.RawMessage) (any, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var fn struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &fn) != nil || fn.Type != "function" || fn.Name == "" {
		return nil, false
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": fn.Name}}, true
}

// responseObject is the Responses API response object for an answer of a
// Chat Completions upstream.
func responseObject(body map[string]json.RawMessage, status string, output []recall.Item, usage *recall.Usage, id string) map[string]json.RawMessage {
	if output == nil {
		output = []recall.Item{}
	}
	m := map[string]any{
		"id": id, "object": "response", "created_at": time.Now().Unix(), "status": status,
		"error": nil, "incomplete_details": nil, "instructions": nil,
		"model": body["model"], "output": output, "parallel_tool_calls": true,
		"tool_choice": "auto", "tools": []any{}, "metadata": map[string]string{},
		"text": map[string]any{"format": map[string]string{"type": "text"}}, "usage": nil,
		"temperature": nil, "top_p": nil, "store": true,
	}
	for _, f := range []string{"instructions", "tools", "tool_choice", "temperature", "top_p", "metadata", "store", "parallel_tool_calls"} {
		if v, ok := body[f]; ok {
			m[f] = v
		}
	}
	if usage != nil {
		m["usage"] = map[string]any{
			"input_tokens": usage.InputTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": usage.OutputTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": usage.TotalTokens,
		}
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k], _ = json.Marshal(v)
	}
	return out
}

// newObjectID returns prefix and 48 random hex digits.
func newObjectID(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}
