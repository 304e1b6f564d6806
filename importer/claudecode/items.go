package claudecode

import (
	stdjson "encoding/json"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input jsontext.Value `json:"input"`
	// tool_result
	ToolUseID string  `json:"tool_use_id"`
	Content   content `json:"content"`
	IsError   bool    `json:"is_error"`
	// image
	Source *imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// content is a message's or a tool result's content: a string, or an
// array of blocks. It is decoded in the same pass as the line around it
// (json.UnmarshalerFrom), where decoding it as a raw value and again would
// read every byte of it twice more.
type content struct {
	// Str is the content when it is a string; Blocks when it is an
	// array. Other is any other value, as it is.
	Str    *string
	Blocks []block
	Other  jsontext.Value
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (c *content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		var s string
		if err := json.UnmarshalDecode(dec, &s); err != nil {
			return err
		}
		c.Str = &s
		return nil
	case '[':
		return json.UnmarshalDecode(dec, &c.Blocks)
	}
	v, err := dec.ReadValue()
	c.Other = v.Clone()
	return err
}

// empty reports whether the content is missing or null.
func (c *content) empty() bool {
	return c.Str == nil && c.Blocks == nil && (len(c.Other) == 0 || string(c.Other) == "null")
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
	b, _ := stdjson.Marshal(v)
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
func toolOutput(c content) (any, []string) {
	switch {
	case c.Str != nil:
		return *c.Str, nil
	case c.Blocks == nil:
		if c.empty() {
			return "", nil
		}
		return string(c.Other), nil // neither: keep its JSON as the text
	case len(c.Blocks) == 1 && c.Blocks[0].Type == "text":
		return c.Blocks[0].Text, nil
	}
	parts := []part{}
	var lost []string
	for _, b := range c.Blocks {
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
