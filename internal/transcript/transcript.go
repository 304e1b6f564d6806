// Package transcript renders a session's items for people to read: plain
// text for a terminal and Markdown for notes and issues. Items are the
// OpenAI Responses item shapes recall stores; an item of a type it does
// not know is shown by its type, never dropped silently.
package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/recallkit/recall"
)

// Part is one item reduced to what a reader needs.
type Part struct {
	// Kind is "user", "assistant", "system", "developer" for messages, or
	// "tool call", "tool output", "reasoning", or the item's own type.
	Kind string
	// Name is the function a tool call names.
	Name string
	// Text is the message text, the call's arguments or the output.
	Text string
}

// Describe reduces one item to a Part.
func Describe(it recall.Item) Part {
	switch it.Type() {
	case "message":
		role := it.Role()
		if role == "" {
			role = "message"
		}
		return Part{Kind: role, Text: it.Text()}
	case "function_call":
		var c struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		_ = json.Unmarshal(it, &c)
		return Part{Kind: "tool call", Name: c.Name, Text: c.Arguments}
	case "function_call_output":
		var o struct {
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(it, &o)
		var s string
		if json.Unmarshal(o.Output, &s) != nil {
			s = string(o.Output) // structured output: show its JSON
		}
		return Part{Kind: "tool output", Text: s}
	case "reasoning":
		var r struct {
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		_ = json.Unmarshal(it, &r)
		var b strings.Builder
		for _, p := range r.Summary {
			b.WriteString(p.Text)
		}
		return Part{Kind: "reasoning", Text: b.String()}
	case "":
		return Part{Kind: "item"}
	default:
		return Part{Kind: it.Type()}
	}
}

// Text writes items as plain text: one block per item, headed by who
// spoke, with the text indented under it.
func Text(w io.Writer, items []recall.Item) error {
	ew := &ErrWriter{W: w}
	for i, it := range items {
		p := Describe(it)
		if i > 0 {
			ew.Printf("\n")
		}
		head := p.Kind
		if p.Name != "" {
			head += " " + p.Name
		}
		ew.Printf("%s:\n", head)
		if p.Text != "" {
			for _, line := range strings.Split(strings.TrimRight(p.Text, "\n"), "\n") {
				ew.Printf("  %s\n", line)
			}
		}
	}
	return ew.Err
}

// Markdown writes items as Markdown: a bold heading per message, tool
// calls and outputs in fenced blocks.
func Markdown(w io.Writer, title string, items []recall.Item) error {
	ew := &ErrWriter{W: w}
	if title != "" {
		ew.Printf("# %s\n\n", title)
	}
	for _, it := range items {
		p := Describe(it)
		switch p.Kind {
		case "tool call", "tool output":
			head := p.Kind
			if p.Name != "" {
				head += " `" + p.Name + "`"
			}
			ew.Printf("**%s**\n\n%s\n\n", capitalize(head), fence(p.Text))
		case "reasoning":
			ew.Printf("> *reasoning:* %s\n\n", strings.ReplaceAll(strings.TrimSpace(p.Text), "\n", "\n> "))
		default:
			ew.Printf("**%s**\n\n%s\n\n", capitalize(p.Kind), strings.TrimSpace(p.Text))
		}
	}
	return ew.Err
}

// fence wraps s in a code fence longer than any run of backticks in it.
func fence(s string) string {
	n, run := 3, 0
	for _, r := range s {
		if r == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ErrWriter keeps the first write error, so rendering code stays linear:
// Printf writes to W until a write fails, and Err holds that failure.
type ErrWriter struct {
	W   io.Writer
	Err error
}

// Printf writes to W as fmt.Fprintf does, unless an earlier write failed.
func (e *ErrWriter) Printf(format string, args ...any) {
	if e.Err == nil {
		_, e.Err = fmt.Fprintf(e.W, format, args...)
	}
}
