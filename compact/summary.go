package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/transcript"
)

// Prompt is the instructions of a summary request.
const Prompt = "You compact conversations between a user and an AI assistant, so that the assistant " +
	"can carry on without the full history. Summarize the conversation you are given, in the " +
	"language it is written in. Keep what the assistant needs to continue: the user's goals and " +
	"requests, decisions made and why, facts, names, numbers, file paths and identifiers that " +
	"matter, what tools found or changed, mistakes to avoid, and the open questions and next " +
	"steps. Be concise; write notes for the assistant, not a reply to the user. Output only the summary."

// SummaryPrefix starts the text of every summary message, so that people
// and models can tell it from what the user wrote.
const SummaryPrefix = "[Summary of the earlier conversation, compacted by recall]\n\n"

// Limits on what a summary request sends. A tool's arguments and output
// are cut, since a long file read or listing is rarely worth its tokens
// twice; messages are sent whole.
const (
	maxToolRunes = 2000
)

// Summarizer is the default Compactor: it asks a model to summarize the
// older items and replaces them with one user message holding the
// summary (SummaryPrefix, then the model's text).
//
// The items are sent as a plain-text transcript in one user message, not
// as conversation items: any model can read it (Responses or Chat
// Completions, whatever items it supports), and the request carries no
// tool definitions, so the model cannot call one.
type Summarizer struct {
	// Model writes the summary. It must not be nil; a cheap model does.
	Model agent.Model
	// Prompt is the instructions. Default: Prompt.
	Prompt string
}

var _ Compactor = (*Summarizer)(nil)

// Compact implements Compactor.
func (s *Summarizer) Compact(ctx context.Context, req *Request) (*Result, error) {
	if s.Model == nil {
		return nil, errors.New("compact: summarizer has no model")
	}
	text := Transcript(req.Items)
	if req.Instructions != "" {
		text += "\n\nWhen you summarize, follow these instructions too: " + req.Instructions
	}
	prompt := s.Prompt
	if prompt == "" {
		prompt = Prompt
	}
	resp, err := s.Model.Respond(ctx, &agent.Request{
		Instructions: prompt,
		Items:        []recall.Item{recall.Message("user", "The conversation to summarize:\n\n"+text)},
	})
	if err != nil {
		return nil, fmt.Errorf("compact: summarize: %w", err)
	}
	if resp == nil {
		return nil, errors.New("compact: summarize: the model returned no response")
	}
	summary := strings.TrimSpace(agent.LastAssistantText(resp.Items))
	if summary == "" {
		return nil, errors.New("compact: summarize: the model answered no text")
	}
	return &Result{
		Items:    []recall.Item{recall.Message("user", SummaryPrefix+summary)},
		Usage:    resp.Usage,
		Strategy: "summary",
	}, nil
}

// Transcript renders items as the text a summary is made from: one
// paragraph per item ("User: ...", "Assistant: ...", "Tool call name:
// args", "Tool output: ..."), tool arguments and outputs cut to 2000
// characters. Reasoning is left out: it is the model's scratch work, and
// its result is in the items that follow it.
func Transcript(items []recall.Item) string {
	var b strings.Builder
	for _, it := range items {
		p := transcript.Describe(it)
		var line string
		switch p.Kind {
		case "reasoning":
			continue
		case "tool call":
			line = "Tool call " + p.Name + ": " + cut(p.Text, maxToolRunes)
		case "tool output":
			line = "Tool output: " + cut(p.Text, maxToolRunes)
		default:
			kind := p.Kind
			if kind != "" {
				kind = strings.ToUpper(kind[:1]) + kind[1:]
			}
			line = kind + ": " + p.Text
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}

// cut shortens s to n runes, saying how much was left out.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return fmt.Sprintf("%s… [%d more characters]", string(r[:n]), len(r)-n)
}
