package claudecode

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall/importer/internal/responses"
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

// imagePart returns an input_image part for an image block: a data URL
// for an inline image, or the image's URL.
func imagePart(src *imageSource) (responses.Part, bool) {
	switch {
	case src == nil:
		return responses.Part{}, false
	case src.Type == "url" && src.URL != "":
		return responses.Part{Type: "input_image", ImageURL: src.URL, Detail: "auto"}, true
	case src.Data != "":
		mt := src.MediaType
		if mt == "" {
			mt = "application/octet-stream"
		}
		return responses.Part{Type: "input_image", ImageURL: "data:" + mt + ";base64," + src.Data, Detail: "auto"}, true
	}
	return responses.Part{}, false
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
	parts := []responses.Part{}
	var lost []string
	for _, b := range c.Blocks {
		switch b.Type {
		case "text":
			parts = append(parts, responses.Part{Type: "input_text", Text: b.Text})
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
