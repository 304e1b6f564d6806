// Package title names sessions. A Generator asks a cheap model for a
// short title from the text of the conversation's user and assistant
// messages, cleans the answer (at most 10 words, no quotes, cut to a
// display width without splitting a character), and falls back to
// "Session 2006-01-02 15:04" (local time) on any failure. It implements
// agent.Titler; agent.Run stores its result as an auto title, which never
// replaces a title the user set.
package title

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

const (
	// MaxWords is the most words a title keeps.
	MaxWords = 10
	// DefaultMaxWidth is the display width, in terminal columns, a title
	// is cut to when Generator.MaxWidth is 0: 60 columns is 60 Latin
	// letters or 30 CJK characters.
	DefaultMaxWidth = 60
	// Temperature is the sampling temperature of title requests: low, for
	// stable titles.
	Temperature = 0.3
	// FallbackLayout is the time layout of the fallback title.
	FallbackLayout = "Session 2006-01-02 15:04"
)

// Prompt is the instructions of a title request.
const Prompt = "Generate a concise title (max 10 words) for this conversation, " +
	"in the language the user writes in. Output only the title text, " +
	"no quotes or formatting."

// Limits on the transcript sent, so a title stays cheap however long the
// conversation: the topic is set by its first messages.
const (
	maxMessageRunes    = 1000
	maxTranscriptRunes = 4000
)

// ErrNoText reports a conversation with no user or assistant text to
// title.
var ErrNoText = errors.New("title: no user or assistant text")

// Generator generates titles. The zero value always returns the fallback.
type Generator struct {
	// Model answers title requests; use a cheap one. Nil: every title is
	// the fallback.
	Model agent.Model
	// MaxWidth is the most display columns a title takes. Default (0):
	// DefaultMaxWidth.
	MaxWidth int
	// Now returns the time of the fallback title. Default: time.Now.
	Now func() time.Time
	// OnError, when set, is told why Title fell back.
	OnError func(error)
}

var _ agent.Titler = (*Generator)(nil)

// Title implements agent.Titler: the generated title, or the fallback
// title when generation fails for any reason.
func (g *Generator) Title(ctx context.Context, items []recall.Item) string {
	t, err := g.Generate(ctx, items)
	if err != nil {
		if g.OnError != nil {
			g.OnError(err)
		}
		now := time.Now
		if g.Now != nil {
			now = g.Now
		}
		return Fallback(now())
	}
	return t
}

// Generate asks the model for a title of items and returns it cleaned.
// Only the text of user and assistant messages is sent; tool calls, tool
// outputs and other items never are. A model that is also an agent.Titler
// (the offline model, which answers any request with its canned reply)
// is asked for the title that way instead of with a request. It fails
// when there is no model, no text, the model fails, or its answer cleans
// to nothing.
func (g *Generator) Generate(ctx context.Context, items []recall.Item) (string, error) {
	if g.Model == nil {
		return "", errors.New("title: no model")
	}
	text := Transcript(items)
	if text == "" {
		return "", ErrNoText
	}
	if tm, ok := g.Model.(agent.Titler); ok {
		if t := Clean(tm.Title(ctx, items), g.MaxWidth); t != "" {
			return t, nil
		}
		return "", errors.New("title: the model's titler gave no usable title")
	}
	temp := Temperature
	resp, err := g.Model.Respond(ctx, &agent.Request{
		Instructions: Prompt,
		Items:        []recall.Item{recall.Message("user", text)},
		Temperature:  &temp,
	})
	if err != nil {
		return "", fmt.Errorf("title: %w", err)
	}
	var answer strings.Builder
	for _, it := range resp.Items {
		if it.Type() == "message" && it.Role() == "assistant" {
			answer.WriteString(it.Text())
		}
	}
	t := Clean(answer.String(), g.MaxWidth)
	if t == "" {
		return "", fmt.Errorf("title: model answered no usable title (%.80q)", answer.String())
	}
	return t, nil
}

// Fallback returns the title used when generation fails:
// "Session 2006-01-02 15:04" in local time.
func Fallback(t time.Time) string { return t.Local().Format(FallbackLayout) }

// Transcript returns the text a title is generated from: one "role: text"
// line per user or assistant message, oldest first, each message and the
// whole cut by runes to stay cheap. Other items are left out.
func Transcript(items []recall.Item) string {
	var b strings.Builder
	budget := maxTranscriptRunes
	for _, it := range items {
		role := it.Role()
		if it.Type() != "message" || (role != "user" && role != "assistant") {
			continue
		}
		text := strings.Join(strings.Fields(it.Text()), " ")
		if text == "" {
			continue
		}
		text = cutRunes(text, min(maxMessageRunes, budget))
		budget -= utf8.RuneCountInString(text)
		fmt.Fprintf(&b, "%s: %s\n", role, text)
		if budget <= 0 {
			break
		}
	}
	return b.String()
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// width measures display columns the same way whatever the locale, so
// titles do not depend on the environment they were made in.
var width = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// Prefixes a model sometimes puts before the title.
var prefixes = []string{"title:", "title -", "标题：", "标题:", "題名：", "タイトル："}

// Clean turns a model's answer into a title: its first non-empty line,
// without a "Title:" prefix, markdown marks, quotes, control characters or
// a trailing full stop, at most MaxWords words, and at most maxWidth
// display columns (DefaultMaxWidth when maxWidth <= 0), cut on a grapheme
// boundary with "…". It returns "" when nothing is left.
func Clean(s string, maxWidth int) string {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxWidth
	}
	s = strings.ToValidUTF8(s, "")
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) != "" {
			s = line
			break
		}
	}
	s = strings.Map(func(r rune) rune {
		switch {
		case strings.ContainsRune("\"“”„«»「」『』", r):
			return -1
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	for _, p := range prefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			s = s[len(p):]
			break
		}
	}
	// Quotes and marks around the title; an apostrophe inside ("don't")
	// stays.
	s = strings.Trim(s, " \t#*_`'‘’")
	s = strings.TrimRight(s, ".。 ")
	words := strings.Fields(s)
	if len(words) > MaxWords {
		words = words[:MaxWords]
	}
	return truncate(strings.Join(words, " "), maxWidth)
}

// truncate cuts s to maxWidth columns, ending in "…", preferring a word
// boundary when one is in the second half.
func truncate(s string, maxWidth int) string {
	if width.StringWidth(s) <= maxWidth {
		return s
	}
	cut := width.Truncate(s, maxWidth-width.StringWidth("…"), "")
	if i := strings.LastIndexByte(cut, ' '); i > 0 && width.StringWidth(cut[:i]) >= maxWidth/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ") + "…"
}
