package title_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/offline"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/title"
)

var cols = &runewidth.Condition{StrictEmojiNeutral: true}

func TestClean(t *testing.T) {
	cases := []struct {
		in, want string
		width    int
	}{
		{"Debugging Go Race Conditions", "Debugging Go Race Conditions", 0},
		{`"Debugging Go Race Conditions"`, "Debugging Go Race Conditions", 0},
		{"“Smart quotes” «here» 「括号」", "Smart quotes here 括号", 0},
		{"Title: Fixing the Build.", "Fixing the Build", 0},
		{"**Fixing the Build**", "Fixing the Build", 0},
		{"# Heading Title\n\nextra explanation line", "Heading Title", 0},
		{"\n\n  'Don't Panic'  \n", "Don't Panic", 0},
		{"one two three four five six seven eight nine ten eleven twelve", "one two three four five six seven eight nine ten", 0},
		{"修复 Go 程序中的数据竞争问题", "修复 Go 程序中的数据竞争问题", 0},
		{"标题：修复数据竞争。", "修复数据竞争", 0},
		{"tab\tand\x1b[31mred\x1b[0m\x00null", "tab and [31mred [0m null", 0},
		{"bad \xff\xfe utf8", "bad utf8", 0},
		{`""`, "", 0},
		{"   \n\t", "", 0},
		// Width: English is cut at a word boundary.
		{"Understanding the subtle semantics of context cancellation", "Understanding the subtle…", 28},
		// Width: 24 CJK characters are 48 columns; 30 columns hold 14 and "…".
		{"如何在分布式系统中实现可靠的消息传递与持久化存储", "如何在分布式系统中实现可靠的…", 30},
		// Width: an emoji ZWJ sequence is never split.
		{"👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦", "👩‍👩‍👧‍👦👩‍👩‍👧‍👦…", 6},
		// Width: a combining accent stays with its letter.
		{"cafe\u0301cafe\u0301cafe\u0301", "cafe\u0301ca…", 7},
	}
	for _, c := range cases {
		got := title.Clean(c.in, c.width)
		if got != c.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
		w := c.width
		if w == 0 {
			w = title.DefaultMaxWidth
		}
		if !utf8.ValidString(got) || cols.StringWidth(got) > w || len(strings.Fields(got)) > title.MaxWords {
			t.Errorf("Clean(%q) = %q breaks a limit", c.in, got)
		}
	}
}

// TestCleanLongCJK checks the default width with a title that has no
// spaces, so the word limit does not apply.
func TestCleanLongCJK(t *testing.T) {
	in := strings.Repeat("数据", 40) // 80 characters, 160 columns
	got := title.Clean(in, 0)
	if cols.StringWidth(got) > title.DefaultMaxWidth || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("Clean = %q (%d columns)", got, cols.StringWidth(got))
	}
	if want := strings.Repeat("数据", 14) + "数…"; got != want {
		t.Errorf("Clean = %q, want %q", got, want)
	}
}

func newGenerator(t *testing.T, api openai.API) (*title.Generator, *fakeopenai.Server) {
	t.Helper()
	srv := fakeopenai.New()
	t.Cleanup(srv.Close)
	m, err := openai.NewTitleModel(openai.Config{BaseURL: srv.URL(), Model: "chat", TitleModel: "cheap", API: api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &title.Generator{Model: m}, srv
}

func conversation() []recall.Item {
	return []recall.Item{
		recall.Message("system", "SECRET SYSTEM PROMPT"),
		recall.Message("developer", "DEVELOPER NOTE"),
		recall.Message("user", "我的 Go 程序有数据竞争，怎么修？"),
		recall.Item(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"REASONING TEXT"}]}`),
		agent.FunctionCallItem("call_1", "read_file", `{"path":"TOOL_ARGUMENT.go"}`),
		agent.FunctionCallOutput("call_1", "TOOL OUTPUT TEXT"),
		recall.Message("assistant", "用 go test -race 找到它，然后加锁。"),
	}
}

func TestGenerate(t *testing.T) {
	for _, api := range []openai.API{openai.APIResponses, openai.APIChat} {
		t.Run(string(api), func(t *testing.T) {
			gen, srv := newGenerator(t, api)
			srv.Enqueue(fakeopenai.Reply{Text: "「修复 Go 数据竞争」\n"})
			got, err := gen.Generate(context.Background(), conversation())
			if err != nil {
				t.Fatal(err)
			}
			if got != "修复 Go 数据竞争" {
				t.Errorf("title = %q", got)
			}
			r := srv.Requests()[0]
			if r.Model != "cheap" || r.Temperature() == nil || *r.Temperature() != title.Temperature || r.Instructions() != title.Prompt {
				t.Errorf("request: model %q temperature %v instructions %q", r.Model, r.Temperature(), r.Instructions())
			}
			body := string(r.Body)
			for _, leak := range []string{"SECRET SYSTEM PROMPT", "DEVELOPER NOTE", "REASONING TEXT", "TOOL_ARGUMENT", "TOOL OUTPUT TEXT", "read_file"} {
				if strings.Contains(body, leak) {
					t.Errorf("title request leaks %q: %s", leak, body)
				}
			}
			want := "user: 我的 Go 程序有数据竞争，怎么修？\nassistant: 用 go test -race 找到它，然后加锁。\n"
			if ms := r.Messages(); len(ms) < 1 || ms[len(ms)-1].Text != want {
				t.Errorf("transcript sent = %+v, want %q", ms, want)
			}
		})
	}
}

func TestTranscriptLimits(t *testing.T) {
	long := strings.Repeat("长", 3000)
	items := []recall.Item{recall.Message("user", long), recall.Message("assistant", long), recall.Message("user", long), recall.Message("user", long), recall.Message("user", "never reached")}
	tr := title.Transcript(items)
	if !utf8.ValidString(tr) {
		t.Fatal("transcript is not valid UTF-8")
	}
	if n := strings.Count(tr, "长"); n != 4000 {
		t.Errorf("transcript holds %d runes of text, want the 4000 budget", n)
	}
	if strings.Contains(tr, "never reached") || strings.Count(tr, "\n") != 4 {
		t.Errorf("transcript lines = %d", strings.Count(tr, "\n"))
	}
}

func TestFallback(t *testing.T) {
	// Fallback titles are in local time.
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.FixedZone("UTC+8", 8*3600)
	now := time.Date(2026, 6, 23, 6, 30, 59, 0, time.UTC)
	const want = "Session 2026-06-23 14:30"
	if got := title.Fallback(now); got != want {
		t.Fatalf("Fallback = %q, want %q", got, want)
	}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		reply *fakeopenai.Reply
		items []recall.Item
		ctx   context.Context
		noGen bool
	}{
		{name: "server error", reply: &fakeopenai.Reply{Status: 500, Error: "down"}},
		{name: "rate limited", reply: &fakeopenai.Reply{Status: 429}},
		{name: "empty answer", reply: &fakeopenai.Reply{Text: `"" `}},
		{name: "only tool calls", reply: &fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "x"}}}},
		{name: "no text to title", items: []recall.Item{agent.FunctionCallOutput("c", "x")}},
		{name: "canceled", ctx: canceled},
		{name: "no model", noGen: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gen, srv := newGenerator(t, openai.APIChat)
			if c.noGen {
				gen = &title.Generator{}
			}
			if c.reply != nil {
				srv.Enqueue(*c.reply)
			}
			items, ctx := c.items, c.ctx
			if items == nil {
				items = conversation()
			}
			if ctx == nil {
				ctx = context.Background()
			}
			var why error
			gen.Now = func() time.Time { return now }
			gen.OnError = func(err error) { why = err }
			if got := gen.Title(ctx, items); got != want {
				t.Errorf("Title = %q, want the fallback %q", got, want)
			}
			if why == nil {
				t.Error("OnError was not told why")
			}
		})
	}
}

// With the offline model, agent.Run titles a session from its first user
// message, never with the offline model's canned reply.
func TestOfflineModelTitle(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	sess := recall.NewSession(st, recall.Key{Project: "p", Session: "s"})
	a := &agent.Agent{Model: offline.Model{}}
	res, err := agent.Run(ctx, a, agent.UserText("Fix the flaky parser test"), agent.RunOptions{
		Session: sess, Titler: &title.Generator{Model: offline.Model{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Stat(ctx, sess.Key())
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "Fix the flaky parser test" || res.Title != m.Title || m.TitleSource != recall.TitleAuto {
		t.Errorf("title %q (%s), result %q; want the first user message", m.Title, m.TitleSource, res.Title)
	}
	// No user text: the fallback title, never the canned reply.
	if got := (offline.Model{}).Title(ctx, nil); strings.Contains(got, "offline") || !strings.HasPrefix(got, "Session ") {
		t.Errorf("title of no messages %q, want the fallback", got)
	}
}
