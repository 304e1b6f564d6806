package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
)

// Prompt is the instructions of a note request.
const Prompt = "You keep the project memory of an AI assistant: short notes that help in future, separate " +
	"conversations about the same project. Read the exchange below and write down only what is worth " +
	"remembering beyond it: decisions taken, rules or preferences the user stated, facts about the project, " +
	"and pitfalls found. Skip small talk, one-off requests and anything already in the existing notes. " +
	"Answer with one line per note, each starting with \"- \", at most 5 lines, each under 200 characters, " +
	"in the language of the conversation. If nothing is worth keeping, answer exactly: NONE"

// Limits on a note request and its answer.
const (
	maxExchangeRunes = 12000 // the end of a long exchange is sent
	maxNotes         = 5
	maxNoteRunes     = 300
)

// Notes is the built-in Extractor: at the end of every exchange (a turn
// whose reply calls no tool), it sends the exchange's transcript and the
// notes already kept to a model, and appends the notes it answers to
// File. It is safe for concurrent use.
//
// Memory must not break the conversation it comes from: Notes never
// fails a run. A failed model call or write is reported to OnError, and
// that exchange's notes are skipped.
type Notes struct {
	// Model writes the notes; a cheap one does. It must not be nil.
	Model agent.Model
	// File receives the notes. It must not be nil.
	File *File
	// Prompt is the instructions. Default: Prompt.
	Prompt string
	// OnNote, when set, is told about each note added, for UIs.
	OnNote func(note string)
	// OnError, when set, is told why notes were skipped.
	OnError func(error)

	mu      sync.Mutex
	pending []recall.Item
}

var _ Extractor = (*Notes)(nil)

// Extract implements Extractor.
func (n *Notes) Extract(ctx context.Context, items []recall.Item) error {
	n.mu.Lock()
	n.pending = append(n.pending, items...)
	if !endsExchange(items) {
		n.mu.Unlock()
		return nil
	}
	exchange := n.pending
	n.pending = nil
	n.mu.Unlock()
	added, err := n.extract(ctx, exchange)
	if err != nil {
		if n.OnError != nil {
			n.OnError(err)
		}
		return nil
	}
	if n.OnNote != nil {
		for _, note := range added {
			n.OnNote(note)
		}
	}
	return nil
}

// endsExchange reports whether a persisted batch is the last turn of a
// run: it holds an assistant message and no tool call or output, so the
// loop will not call the model again.
func endsExchange(items []recall.Item) bool {
	answered := false
	for _, it := range items {
		typ := it.Type()
		switch {
		case strings.HasSuffix(typ, "_call") || strings.HasSuffix(typ, "_call_output"):
			if it.CallID() != "" {
				return false
			}
		case typ == "message" && it.Role() == "assistant":
			answered = true
		}
	}
	return answered
}

// extract asks the model for notes on exchange and appends them.
func (n *Notes) extract(ctx context.Context, exchange []recall.Item) ([]string, error) {
	if n.Model == nil || n.File == nil {
		return nil, errors.New("memory: notes need a model and a file")
	}
	text := compact.Transcript(exchange)
	if r := []rune(text); len(r) > maxExchangeRunes {
		text = "…" + string(r[len(r)-maxExchangeRunes:])
	}
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	existing, err := n.File.Notes()
	if err != nil {
		return nil, err
	}
	prompt := n.Prompt
	if prompt == "" {
		prompt = Prompt
	}
	msg := "The exchange:\n\n" + text
	if len(existing) > 0 {
		msg = "Existing notes:\n- " + strings.Join(existing, "\n- ") + "\n\n" + msg
	}
	resp, err := n.Model.Respond(ctx, &agent.Request{Instructions: prompt, Items: []recall.Item{recall.Message("user", msg)}})
	if err != nil {
		return nil, fmt.Errorf("memory: notes: %w", err)
	}
	if resp == nil {
		return nil, errors.New("memory: notes: the model returned no response")
	}
	notes := ParseNotes(agent.LastAssistantText(resp.Items))
	if len(notes) == 0 {
		return nil, nil
	}
	return n.File.Append(ctx, notes...)
}

// ParseNotes returns the notes of a model's answer: its "- " or "* "
// lines (at most 5, each cut to 300 characters), or none when it answered
// NONE or wrote no bullet.
func ParseNotes(answer string) []string {
	var out []string
	for _, b := range bullets(answer) {
		if b == "" || strings.EqualFold(strings.Trim(b, " ."), "none") {
			continue
		}
		if utf8.RuneCountInString(b) > maxNoteRunes {
			b = string([]rune(b)[:maxNoteRunes]) + "…"
		}
		out = append(out, b)
		if len(out) == maxNotes {
			break
		}
	}
	return out
}
