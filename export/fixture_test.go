package export_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// logBuilder writes a log by hand, with the seqs and times a store would
// give, so rendered exports are the same on every run.
type logBuilder struct {
	key     recall.Key
	t       time.Time
	entries []recall.Entry
}

func newLog(key recall.Key) *logBuilder {
	return &logBuilder{key: key, t: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)}
}

func (b *logBuilder) add(kind recall.Kind, data string) *logBuilder {
	b.t = b.t.Add(7 * time.Second)
	var d json.RawMessage
	if data != "" {
		d = json.RawMessage(data)
	}
	b.entries = append(b.entries, recall.Entry{Seq: int64(len(b.entries) + 1), Kind: kind, Time: b.t, Data: d})
	return b
}

func (b *logBuilder) payload(kind recall.Kind, v any) *logBuilder {
	d, _ := json.Marshal(v)
	return b.add(kind, string(d))
}

func (b *logBuilder) item(it recall.Item) *logBuilder { return b.add(recall.KindItem, string(it)) }

func (b *logBuilder) usage(in, out int64) *logBuilder {
	b.entries[len(b.entries)-1].Usage = &recall.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	return b
}

func (b *logBuilder) session() *export.Session {
	m, _ := recall.Replay(b.key, b.entries)
	return &export.Session{Meta: m, Entries: b.entries}
}

func call(id, name, args string) recall.Item {
	b, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": id, "name": name, "arguments": args})
	return b
}

func output(id, out string) recall.Item {
	b, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": id, "output": out})
	return b
}

// tinyPNG is a 1x1 PNG as a data: URI.
const tinyPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// fixture is a session that shows every part the readable formats
// render: turns, a reasoning summary, tool calls with JSON and plain
// arguments, a long output holding backticks, an error, an image, an item
// of another type, a removed item, a compaction, a clear, a damaged item
// and a subagent record.
func fixture() *export.Session {
	key := recall.Key{Project: "-home-ada-parser", Session: "0199a3f2-1b2c-7d4e-8f00-00000000abcd"}
	var long strings.Builder
	long.WriteString("package lexer\n\n// Tokens are split on blanks; a literal may hold ``` too.\n")
	for i := range 40 {
		fmt.Fprintf(&long, "func tok%02d() string { return \"`%d`\" }\n", i, i)
	}
	b := newLog(key).
		add(recall.KindCreate, "").
		payload(recall.KindTitle, recall.TitleChange{Title: "Fix the `parse` bug in <lexer.go>", Source: recall.TitleUser}).
		payload(recall.KindMeta, recall.MetaChange{Labels: []string{"bug", "parser"}, Metadata: map[string]*string{"ticket": ptr("PAR-12")}}).
		item(recall.Message("user", "The lexer drops the last token. Can you look at `lexer.go`?")).
		item(recall.Item(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Read the file first, then run the tests."}]}`)).
		item(call("call_1", "read_file", `{"path":"lexer.go","lines":[1,40]}`)).usage(120, 30).
		item(output("call_1", long.String())).
		item(recall.Message("assistant", "Found it: `next()` stops one early.\n\n```go\nfor i := 0; i < len(s)-1; i++ {\n```\n\nThe fix is to loop to `len(s)`.")).usage(900, 80).
		item(recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Here is the failing screen:"},{"type":"input_image","image_url":"`+tinyPNG+`"},{"type":"input_image","image_url":"https://example.com/shot.png"}]}`)).
		item(recall.Message("assistant", "A draft I took back.")).
		payload(recall.KindPop, recall.ItemRef{Seq: 10}).
		item(call("call_2", "shell", "go test ./...")).
		item(recall.Item(`{"type":"function_call_output","call_id":"call_2","output":"--- FAIL: TestLast (0.00s)","status":"incomplete"}`)).
		item(recall.Item(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go lexer last token"}}`))
	b.payload(recall.KindCompaction, recall.Compaction{Through: 14, Replaced: 9, Strategy: "summary",
		Items: []recall.Item{recall.Message("user", "Summary: the lexer's loop stopped one token early; the test TestLast fails."), recall.Item(b.entries[13].Data)}}).usage(400, 60)
	b.item(recall.Message("user", "Thanks! Anything else?")).
		item(recall.Message("assistant", "One more thing, unfinished:\n\n```python\nprint(1)\n\n<!-- not a comment")).
		add(recall.KindClear, "").
		item(recall.Message("user", "Start over with <b>bold</b> ideas.")).
		add(recall.KindItem, `[1]`)
	s := b.session()
	sub := newLog(recall.Key{Project: key.Project, Session: key.Session, Subpath: "subagents/reviewer"}).
		item(recall.Message("user", "Review the fix.")).
		item(recall.Message("assistant", "LGTM."))
	s.Subagents = []*export.Session{sub.session()}
	return s
}
