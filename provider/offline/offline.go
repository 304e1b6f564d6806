// Package offline is a deterministic stand-in for a language model, used
// when no model is configured. It makes no network calls and does not
// pretend to understand anything: every reply says it is offline, counts
// the earlier items it was given, and echoes the user's last message.
// Demos and end-to-end tests run on it. It titles a conversation with its
// first user message, never with its canned reply.
package offline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/title"
)

// Model is the offline model. The zero value is ready to use and safe for
// concurrent use.
type Model struct{}

var (
	_ agent.Model  = Model{}
	_ agent.Titler = Model{}
)

// Title implements agent.Titler: the first user message, cleaned as a
// title (title.Clean), or the fallback title when there is none. Asked
// for a title through Respond, the model would answer with its canned
// reply; title.Generator asks Title instead.
func (Model) Title(_ context.Context, items []recall.Item) string {
	for _, it := range items {
		if it.Type() == "message" && it.Role() == "user" {
			if t := title.Clean(it.Text(), 0); t != "" {
				return t
			}
		}
	}
	return title.Fallback(time.Now())
}

// Respond implements agent.Model. The reply is one assistant message:
//
//	[offline] No model is configured (set OPENAI_API_KEY), so this reply
//	is canned. I see N earlier items. You said: <the last user message>
//
// where N counts the items before the last user message. It streams the
// reply word by word to req.OnDelta and reports no usage, because no
// tokens were spent.
func (Model) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	last := -1
	for i := len(req.Items) - 1; i >= 0; i-- {
		if req.Items[i].Type() == "message" && req.Items[i].Role() == "user" {
			last = i
			break
		}
	}
	earlier, said := len(req.Items), ""
	if last >= 0 {
		earlier, said = last, req.Items[last].Text()
	}
	text := Reply(earlier, said)
	if req.OnDelta != nil {
		for _, w := range strings.SplitAfter(text, " ") {
			req.OnDelta(w)
		}
	}
	return &agent.Response{Items: []recall.Item{recall.Message("assistant", text)}}, nil
}

// Reply returns the offline reply for earlier items and the user's text,
// so tests can state exactly what they expect.
func Reply(earlier int, said string) string {
	items := "items"
	if earlier == 1 {
		items = "item"
	}
	if said == "" {
		return fmt.Sprintf("[offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see %d earlier %s.", earlier, items)
	}
	return fmt.Sprintf("[offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see %d earlier %s. You said: %s", earlier, items, said)
}
