package opencode

import (
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer/internal/responses"
)

// turn collects the items of one message.
type turn struct {
	role  string // "user" or "assistant"
	items []recall.Item
	parts []responses.Part
	skip  func(kind string)
}

func (t *turn) add(v any) {
	t.items = append(t.items, responses.Encode(v))
}

// flush writes the message the text and media so far make.
func (t *turn) flush() {
	if len(t.parts) > 0 {
		t.add(responses.Message{Type: "message", Role: t.role, Content: t.parts})
		t.parts = nil
	}
}

func (t *turn) text(s string) {
	if s == "" {
		return
	}
	typ := "input_text"
	if t.role == "assistant" {
		typ = "output_text"
	}
	t.parts = append(t.parts, responses.Part{Type: typ, Text: s})
}

func (t *turn) reasoning(s string) {
	if strings.TrimSpace(s) == "" {
		return // a provider's encrypted reasoning, which opencode keeps in metadata
	}
	t.flush()
	t.add(responses.Reasoning{Type: "reasoning", Summary: []responses.Summary{{Type: "summary_text", Text: s}}})
}

// tool writes a tool part as a function_call and the output its state
// holds, as opencode sends it back to the model: a call that never
// finished is answered as interrupted.
func (t *turn) tool(p part) {
	t.flush()
	args := "{}"
	if s := responses.Compact(p.State.Input); s != "" && s != "null" {
		args = s
	}
	t.add(responses.Call{Type: "function_call", CallID: p.CallID, Name: p.Tool, Arguments: args})
	out := responses.Output{Type: "function_call_output", CallID: p.CallID}
	st := p.State
	switch {
	case st.Status == "completed":
		out.Output = st.Output
		if len(st.Attachments) > 0 {
			parts := []responses.Part{{Type: "input_text", Text: st.Output}}
			for _, a := range st.Attachments {
				parts = append(parts, filePart(a))
			}
			out.Output = parts
		}
	case st.Status == "error" && st.Metadata.Interrupted && st.Metadata.Output != nil:
		out.Output = *st.Metadata.Output
	case st.Status == "error":
		out.Output, out.IsError = st.Error, true
	default: // pending, running
		out.Output, out.IsError = "[Tool execution was interrupted]", true
	}
	t.add(out)
}

// filePart returns the input_image or input_file part of a file part.
func filePart(p part) responses.Part {
	if strings.HasPrefix(p.Mime, "image/") {
		return responses.Part{Type: "input_image", ImageURL: p.URL, Detail: "auto"}
	}
	if strings.HasPrefix(p.URL, "data:") {
		return responses.Part{Type: "input_file", FileData: p.URL, Filename: p.Filename}
	}
	return responses.Part{Type: "input_file", FileURL: p.URL, Filename: p.Filename}
}

// bookkeeping are the part kinds opencode keeps for itself or its
// interface, which give the model nothing (step markers, snapshots,
// patches, retries, the agent a prompt named).
var bookkeeping = map[string]bool{
	"step-start": true, "step-finish": true, "snapshot": true, "patch": true, "retry": true, "agent": true,
}

// items returns the items of a message, as opencode turns it into model
// input (MessageV2.toModelMessages), and whether it starts a compaction
// (a user message with a compaction part: the summary that follows is all
// the model sees of what came before).
func (m *message) items(skip func(string)) (items []recall.Item, compaction bool) {
	switch m.info.Role {
	case "user":
		t := turn{role: "user", skip: skip}
		for _, p := range m.parts {
			compaction = t.userPart(p) || compaction
		}
		t.flush()
		return t.items, compaction
	case "assistant":
		if e := m.info.Error; e != nil && !(e.Name == "MessageAbortedError" && m.answered()) {
			skip("assistant:error") // opencode leaves it out of the model's input
			return nil, false
		}
		t := turn{role: "assistant", skip: skip}
		for _, p := range m.parts {
			t.assistantPart(p)
		}
		t.flush()
		return t.items, false
	}
	if m.good {
		skip("unknown:" + m.info.Role)
	}
	return nil, false
}

// answered reports whether an aborted assistant message holds more than
// its start and reasoning: opencode keeps such a message.
func (m *message) answered() bool {
	for _, p := range m.parts {
		if p.Type != "step-start" && p.Type != "reasoning" {
			return true
		}
	}
	return false
}

// userPart adds a part of a user message, and reports a compaction part.
func (t *turn) userPart(p part) bool {
	switch p.Type {
	case "text":
		if !p.Ignored {
			t.text(p.Text)
		}
	case "file":
		// opencode sends text files and folders as the synthetic text
		// parts it adds beside them.
		if p.Mime != "text/plain" && p.Mime != "application/x-directory" {
			t.parts = append(t.parts, filePart(p))
		}
	case "compaction":
		t.text("What did we do so far?")
		return true
	case "subtask":
		t.text("The following tool was executed by the user")
	case "tool", "reasoning":
	default:
		if !bookkeeping[p.Type] {
			t.skip("part:" + p.Type)
		}
	}
	return false
}

// assistantPart adds a part of an assistant message.
func (t *turn) assistantPart(p part) {
	switch p.Type {
	case "text":
		t.text(p.Text)
	case "reasoning":
		t.reasoning(p.Text)
	case "tool":
		if p.State == nil {
			t.skip("malformed")
			return
		}
		t.tool(p)
	case "file", "compaction", "subtask":
	default:
		if !bookkeeping[p.Type] {
			t.skip("part:" + p.Type)
		}
	}
}
