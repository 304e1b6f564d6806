// Package responses holds the Responses items the importers write: the
// message, function_call, function_call_output and reasoning shapes of
// OpenAI's Responses API, with only the fields an import fills, in the
// order the API documents them. Every importer maps its tool's lines to
// these, so that the same conversation reads the same whichever tool
// wrote it.
package responses

import (
	stdjson "encoding/json"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
)

type (
	// Message is a message item.
	Message struct {
		Type    string `json:"type"` // "message"
		Role    string `json:"role"`
		Content []Part `json:"content"`
	}
	// Part is a message content part: input_text, output_text,
	// input_image or input_file.
	Part struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
		FileURL  string `json:"file_url,omitempty"`
		FileData string `json:"file_data,omitempty"`
		Filename string `json:"filename,omitempty"`
		Detail   string `json:"detail,omitempty"`
	}
	// Call is a function_call item.
	Call struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	// Output is a function_call_output item.
	Output struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		// Output is a string, or content parts when the result holds
		// images or files.
		Output any `json:"output"`
		// IsError marks a tool result the tool recorded as an error; the
		// Responses shape has no field of its own for it.
		IsError bool `json:"is_error,omitempty"`
	}
	// Reasoning is a reasoning item.
	Reasoning struct {
		Type    string    `json:"type"` // "reasoning"
		Summary []Summary `json:"summary"`
		// EncryptedContent keeps reasoning the model's provider sent
		// encrypted (Claude's redacted_thinking).
		EncryptedContent string `json:"encrypted_content,omitempty"`
	}
	// Summary is a reasoning item's summary_text part.
	Summary struct {
		Type string `json:"type"` // "summary_text"
		Text string `json:"text"`
	}
)

// Encode encodes v, one of the item types above; they always encode.
func Encode(v any) recall.Item {
	b, _ := stdjson.Marshal(v)
	return b
}

// Text returns the text part of a message of role: output_text for the
// assistant's, input_text for the others.
func Text(role, text string) Part {
	if role == "assistant" {
		return Part{Type: "output_text", Text: text}
	}
	return Part{Type: "input_text", Text: text}
}

// DecodeOptions make the decoder (github.com/go-json-experiment/json,
// faster than encoding/json) as lenient as JSON.parse and encoding/json,
// which the tools write and read their files with: a duplicate name takes
// the last value, and invalid UTF-8 becomes U+FFFD.
var DecodeOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// Compact returns v without insignificant space, v as it is when it does
// not parse, or "" when it is empty.
func Compact(v jsontext.Value) string {
	if len(v) == 0 {
		return ""
	}
	c := v.Clone()
	if c.Compact(DecodeOptions) != nil {
		return string(v)
	}
	return string(c)
}
