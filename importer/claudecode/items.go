package claudecode

import (
	"encoding/json"

	"github.com/recallkit/recall"
)

// The Claude Code content blocks, as its transcripts hold them.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// thinking, redacted_thinking
	Thinking string `json:"thinking"`
	Data     string `json:"data"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// image
	Source *imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// The Responses items an import writes.
type (
	messageItem struct {
		Type    string `json:"type"` // "message"
		Role    string `json:"role"`
		Content []part `json:"content"`
	}
	// part is a message content part: input_text, output_text or
	// input_image.
	part struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
		Detail   string `json:"detail,omitempty"`
	}
	functionCall struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	functionCallOutput struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		// Output is a string, or content parts when the result holds
		// images.
		Output any `json:"output"`
		// IsError marks a tool result Claude Code flagged as an error;
		// the Responses shape has no field of its own for it.
		IsError bool `json:"is_error,omitempty"`
	}
	reasoningItem struct {
		Type    string        `json:"type"` // "reasoning"
		Summary []summaryText `json:"summary"`
		// EncryptedContent keeps a redacted_thinking block's data.
		EncryptedContent string `json:"encrypted_content,omitempty"`
	}
	summaryText struct {
		Type string `json:"type"` // "summary_text"
		Text string `json:"text"`
	}
)

// item encodes v, one of the item types above; they always encode.
func item(v any) recall.Item {
	b, _ := json.Marshal(v)
	return b
}

// textPart returns the text part of a message of role.
func textPart(role, text string) part {
	if role == "assistant" {
		return part{Type: "output_text", Text: text}
	}
	return part{Type: "input_text", Text: text}
}

// imagePart returns an input_image part for an image block: a data URL
// for an inline image, or the image's URL.
func imagePart(src *imageSource) (part, bool) {
	switch {
	case src == nil:
		return part{}, false
	case src.Type == "url" && src.URL != "":
		return part{Type: "input_image", ImageURL: src.URL, Detail: "auto"}, true
	case src.Data != "":
		mt := src.MediaType
		if mt == "" {
			mt = "application/octet-stream"
		}
		return part{Type: "input_image", ImageURL: "data:" + mt + ";base64," + src.Data, Detail: "auto"}, true
	}
	return part{}, false
}

// toolOutput turns a tool_result's content into a function_call_output's
// output: the string as it is, one text block's text, or content parts
// (input_text, input_image) when there are several blocks or images. It
// returns the kinds of blocks it could not keep.
func toolOutput(raw json.RawMessage) (any, []string) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw), nil // neither: keep its JSON as the text
	}
	if len(blocks) == 1 && blocks[0].Type == "text" {
		return blocks[0].Text, nil
	}
	parts := []part{}
	var lost []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, part{Type: "input_text", Text: b.Text})
		case "image":
			if p, ok := imagePart(b.Source); ok {
				parts = append(parts, p)
			} else {
				lost = append(lost, "block:image")
			}
		default:
			lost = append(lost, "block:"+b.Type)
		}
	}
	return parts, lost
}
