package gemini

import (
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// built is an item with the time of the record it came from.
type built struct {
	item recall.Item
	at   time.Time
}

// callSet counts the call ids of the calls and outputs already built: a
// call or an output is written once, as Gemini CLI's history keeps one
// (a tool's response is recorded both in the call's record and, in newer
// versions, as a user message of its own).
type callSet struct {
	calls, outputs map[string]int
	// open, when set, holds by name the ids made up for calls that had
	// none, for a later response that has none to answer (a checkpoint's
	// history, where the API's calls and responses carry no ids).
	open map[string][]string
}

func (s *callSet) reset() { s.calls, s.outputs = map[string]int{}, map[string]int{} }

// add counts ids in m by n (1 to add, -1 to remove).
func (s *callSet) add(calls, outputs []string, n int) {
	for _, id := range calls {
		s.calls[id] += n
	}
	for _, id := range outputs {
		s.outputs[id] += n
	}
}

// builder turns the parts of one turn into items.
type builder struct {
	role  string // "user" or "assistant"
	at    time.Time
	seen  *callSet
	skip  func(kind string) // nil when the parts were counted before
	id    string            // the message's id, for ids of calls that have none
	out   []built
	parts []responses.Part
	// calls and outputs are the call ids this turn wrote; unpaired holds,
	// by name, the ids made up for calls that had none, for the outputs
	// of the CLI's own tool call records to answer.
	calls, outputs []string
	unpaired       map[string][]string
}

func (b *builder) counted(kind string) {
	if b.skip != nil {
		b.skip(kind)
	}
}

func (b *builder) add(v any) {
	b.out = append(b.out, built{item: responses.Encode(v), at: b.at})
}

// flush writes the message the text and media parts so far make.
func (b *builder) flush() {
	if len(b.parts) > 0 {
		b.add(responses.Message{Type: "message", Role: b.role, Content: b.parts})
		b.parts = nil
	}
}

func (b *builder) reasoning(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	b.flush()
	b.add(responses.Reasoning{Type: "reasoning", Summary: []responses.Summary{{Type: "summary_text", Text: text}}})
}

// part adds the i-th part of the turn.
func (b *builder) part(p part, i int) {
	switch {
	case p.Text != nil && p.Thought:
		b.reasoning(*p.Text)
	case p.Text != nil:
		if *p.Text == "" {
			return
		}
		typ := "input_text"
		if b.role == "assistant" {
			typ = "output_text"
		}
		b.parts = append(b.parts, responses.Part{Type: typ, Text: *p.Text})
	case p.FunctionCall != nil:
		id := p.FunctionCall.ID
		if id == "" {
			id = b.id + "-" + strconv.Itoa(i)
			name := p.FunctionCall.Name
			if b.unpaired == nil {
				b.unpaired = map[string][]string{}
			}
			b.unpaired[name] = append(b.unpaired[name], id)
			if b.seen.open != nil {
				b.seen.open[name] = append(b.seen.open[name], id)
			}
		}
		b.call(id, p.FunctionCall.Name, p.FunctionCall.Args)
	case p.FunctionResponse != nil:
		id, name := p.FunctionResponse.ID, p.FunctionResponse.Name
		if open := b.seen.open[name]; id == "" && len(open) > 0 {
			id, b.seen.open[name] = open[0], open[1:]
		}
		if id != "" && b.seen.outputs[id] > 0 {
			b.flush() // written before (a response the CLI records twice): not read again
			return
		}
		out, isErr := responseText(p.FunctionResponse.Response)
		b.output(id, "", out, nil, isErr)
	case b.role == "user" && (p.InlineData != nil || p.FileData != nil):
		b.parts = append(b.parts, mediaPart(p))
	case p.InlineData != nil:
		b.counted("part:inlineData")
	case p.FileData != nil:
		b.counted("part:fileData")
	default:
		b.counted("part:" + p.Other)
	}
}

// call writes a function_call, unless one with its id was written.
func (b *builder) call(id, name string, args jsontext.Value) {
	b.flush()
	if b.seen.calls[id] > 0 {
		return
	}
	b.calls = append(b.calls, id)
	b.seen.calls[id]++
	b.add(responses.Call{Type: "function_call", CallID: id, Name: name, Arguments: arguments(args)})
}

// output writes a function_call_output for call id, unless one was
// written. alias is the CLI's own id for a call whose part had none: the
// output answers the id made up for that part, and counts for both.
func (b *builder) output(id, alias, out string, extra []responses.Part, isErr bool) {
	b.flush()
	if id == "" {
		id = b.id + "-response"
	}
	if b.seen.outputs[id] > 0 || alias != "" && b.seen.outputs[alias] > 0 {
		return
	}
	b.outputs = append(b.outputs, id)
	b.seen.outputs[id]++
	if alias != "" {
		b.outputs = append(b.outputs, alias)
		b.seen.outputs[alias]++
	}
	item := responses.Output{Type: "function_call_output", CallID: id, Output: out, IsError: isErr}
	if len(extra) > 0 {
		item.Output = append([]responses.Part{{Type: "input_text", Text: out}}, extra...)
	}
	b.add(item)
}

// result writes the outputs of one of the CLI's tool call records: one
// per functionResponse in its result, the other parts of the result
// (text, images) going with the output before them.
func (b *builder) result(tc toolCall) {
	if len(tc.Result.Parts) == 0 {
		return // not run yet, or no result recorded
	}
	if at := importer.ParseTime(tc.Timestamp); !at.IsZero() {
		b.at = at
	}
	id, alias := tc.ID, ""
	if b.seen.calls[id] == 0 && len(b.unpaired[tc.Name]) > 0 {
		id, alias = b.unpaired[tc.Name][0], tc.ID
		b.unpaired[tc.Name] = b.unpaired[tc.Name][1:]
	}
	type pending struct {
		id, out string
		extra   []responses.Part
		isErr   bool
	}
	var outs []pending
	for _, p := range tc.Result.Parts {
		switch {
		case p.FunctionResponse != nil:
			out, isErr := responseText(p.FunctionResponse.Response)
			rid := p.FunctionResponse.ID
			if rid == "" || rid == tc.ID {
				rid = id
			}
			outs = append(outs, pending{id: rid, out: out, isErr: isErr || tc.Status == "error"})
		case len(outs) == 0 && p.Text != nil:
			outs = append(outs, pending{id: id, out: *p.Text, isErr: tc.Status == "error"})
		case p.Text != nil:
			outs[len(outs)-1].extra = append(outs[len(outs)-1].extra, responses.Part{Type: "input_text", Text: *p.Text})
		case p.InlineData != nil || p.FileData != nil:
			if len(outs) == 0 {
				outs = append(outs, pending{id: id, isErr: tc.Status == "error"})
			}
			outs[len(outs)-1].extra = append(outs[len(outs)-1].extra, mediaPart(p))
		default:
			b.counted("part:" + p.Other)
		}
	}
	for _, o := range outs {
		a := ""
		if o.id == id {
			a = alias
		}
		b.output(o.id, a, o.out, o.extra, o.isErr)
	}
}

// mediaPart returns the input_image or input_file part of an inline or
// file data part.
func mediaPart(p part) responses.Part {
	mime, url, inline := "", "", p.InlineData != nil
	if inline {
		mime = p.InlineData.MimeType
		if mime == "" {
			mime = "application/octet-stream"
		}
		url = "data:" + mime + ";base64," + p.InlineData.Data
	} else {
		mime, url = p.FileData.MimeType, p.FileData.FileURI
	}
	switch {
	case strings.HasPrefix(mime, "image/"):
		return responses.Part{Type: "input_image", ImageURL: url, Detail: "auto"}
	case inline:
		return responses.Part{Type: "input_file", FileData: url}
	}
	return responses.Part{Type: "input_file", FileURL: url}
}

// arguments returns a call's args as the JSON text of function_call
// arguments.
func arguments(args jsontext.Value) string {
	if s := responses.Compact(args); s != "" && s != "null" {
		return s
	}
	return "{}"
}
