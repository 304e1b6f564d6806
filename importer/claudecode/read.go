package claudecode

import (
	stdjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// line is one line of a Claude Code transcript: the fields the import
// reads.
type line struct {
	Type             string   `json:"type"`
	Subtype          string   `json:"subtype"`
	SessionID        string   `json:"sessionId"`
	AgentID          string   `json:"agentId"`
	Cwd              string   `json:"cwd"`
	Timestamp        string   `json:"timestamp"`
	IsSidechain      bool     `json:"isSidechain"`
	Message          *message `json:"message"`
	Summary          string   `json:"summary"`
	CustomTitle      string   `json:"customTitle"`
	AITitle          string   `json:"aiTitle"`
	Title            string   `json:"title"`
	IsCompactSummary bool     `json:"isCompactSummary"`
}

type message struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Model   string  `json:"model"`
	Content content `json:"content"`
	Usage   *usage  `json:"usage"`
}

// decodeOptions make the decoder as lenient as encoding/json: a duplicate
// name takes the last value, and invalid UTF-8 becomes U+FFFD.
var decodeOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// recall returns u as recall counts it: input includes the cached input,
// as OpenAI's input_tokens does.
func (u *usage) recall() *recall.Usage {
	if u == nil {
		return nil
	}
	r := recall.Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	}
	r.TotalTokens = r.InputTokens + r.OutputTokens
	if r.IsZero() {
		return nil
	}
	return &r
}

// bookkeeping are the line types Claude Code keeps for itself: they hold
// nothing the model saw, and are skipped (and counted) by name.
var bookkeeping = map[string]bool{
	"file-history-snapshot": true,
	"queue-operation":       true,
	"progress":              true,
	"attachment":            true,
	"permission-mode":       true,
	"last-prompt":           true,
	"agent-name":            true,
	"mode":                  true,
	"pr-link":               true,
	"bridge-session":        true,
	"tag":                   true,
}

// Title ranks: a custom title beats an AI title, which beats a summary.
const (
	rankSummary = 1 + iota
	rankAI
	rankCustom
)

// ReadFile reads one Claude Code transcript: a session's
// <sessionId>.jsonl, or a subagent's agent-<id>.jsonl (in
// <sessionId>/subagents/, or beside the sessions in older versions).
// project, when not empty, is the project key its records go to instead of
// the key of the transcript's working directory.
func ReadFile(path, project string) (*importer.Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data, project, importer.FileTime(path))
}

// parse reads the lines of a transcript read from path.
func parse(path string, data []byte, project string, mtime time.Time) (*importer.Transcript, error) {
	p := newParser(path, data)
	importer.EachLine(data, p.line)
	if err := p.finish(project); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p.t.Finish(mtime)
	return p.t, nil
}

// parser turns the lines of one transcript into records.
type parser struct {
	t *importer.Transcript
	// agent is the subagent's id when the file is a subagent transcript.
	agent   string
	parent  string // the parent session's id, from the path, if known
	cwd     string // the first working directory named
	session string // the first session id named
	targets map[string]*importer.Target
	order   []string
	// counted holds the message ids whose usage is already counted: the
	// lines of one assistant message each repeat it.
	counted map[string]bool
	rank    int // of the last title recorded
}

func newParser(path string, data []byte) *parser {
	p := &parser{
		t:       &importer.Transcript{Tool: Tool, File: path, Data: data},
		targets: map[string]*importer.Target{},
		counted: map[string]bool{},
	}
	stem := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	dir := filepath.Dir(path)
	switch {
	case filepath.Base(dir) == "subagents":
		p.agent, p.parent = stem, filepath.Base(filepath.Dir(dir))
	case strings.HasPrefix(stem, "agent-"):
		p.agent = stem // the parent comes from the lines' sessionId
	default:
		p.parent = stem
	}
	return p
}

// target returns the target a conversation line goes to: the subagent's
// record in a subagent transcript, a sidechain record for a sidechain line
// of a session's transcript, else the session.
func (p *parser) target(l *line) *importer.Target {
	agent := p.agent
	if agent == "" && l.IsSidechain {
		agent = "sidechain"
		if l.AgentID != "" {
			agent = "agent-" + l.AgentID
		}
	}
	tg := p.targets[agent]
	if tg == nil {
		tg = &importer.Target{Agent: agent}
		p.targets[agent] = tg
		p.order = append(p.order, agent)
	}
	return tg
}

func (p *parser) line(ln importer.Line) {
	p.t.Lines++
	var l line
	if err := json.Unmarshal(ln.Bytes, &l, decodeOptions); err != nil {
		p.t.Torn(ln)
		return
	}
	if p.cwd == "" {
		p.cwd = l.Cwd
	}
	if p.session == "" {
		p.session = l.SessionID
	}
	switch l.Type {
	case "user", "assistant":
		p.conversation(&l, ln.End)
	case "system":
		if l.Subtype != "compact_boundary" {
			p.t.Skip("system:" + l.Subtype)
			return
		}
		tg := p.target(&l)
		tg.Records = append(tg.Records, importer.Record{
			End:        ln.End,
			Entry:      recall.Entry{Kind: recall.KindCompaction, Time: importer.ParseTime(l.Timestamp)},
			Compaction: &recall.Compaction{Items: []recall.Item{}, Strategy: "claude-code"},
		})
	case "summary":
		p.title(&l, l.Summary, rankSummary, ln.End)
	case "ai-title":
		p.title(&l, first(l.AITitle, l.Title), rankAI, ln.End)
	case "custom-title":
		p.title(&l, first(l.CustomTitle, l.Title), rankCustom, ln.End)
	default:
		switch {
		case bookkeeping[l.Type]:
			p.t.Skip(l.Type)
		case l.Type == "":
			p.t.Skip("unknown")
		default:
			p.t.Skip("unknown:" + l.Type)
		}
	}
}

// title records a title of the given rank unless a better-ranked one came
// before: custom-title, then ai-title, then summary; the latest of a rank
// wins. Custom titles are the user's, the others auto titles.
func (p *parser) title(l *line, title string, rank int, end int64) {
	title = strings.Join(strings.Fields(strings.ReplaceAll(title, "\x00", "")), " ")
	if title == "" || rank < p.rank || p.agent != "" {
		p.t.Skip(l.Type)
		return
	}
	p.rank = rank
	src := recall.TitleAuto
	if rank == rankCustom {
		src = recall.TitleUser
	}
	e := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: src})
	e.Time = importer.ParseTime(l.Timestamp)
	tg := p.target(&line{}) // titles name the session
	tg.Records = append(tg.Records, importer.Record{End: end, Entry: e})
}

// conversation turns a user or assistant line into items: text and images
// into one message, each tool_use into a function_call, each tool_result
// into a function_call_output, each thinking block into a reasoning item.
func (p *parser) conversation(l *line, end int64) {
	m := l.Message
	if m == nil || m.Content.empty() {
		p.t.Skip("malformed")
		return
	}
	role := l.Type
	tg := p.target(l)
	if role == "assistant" && m.Model != "" && m.Model != "<synthetic>" {
		tg.Model = m.Model
	}
	at := importer.ParseTime(l.Timestamp)
	turn := ""
	if role == "assistant" {
		turn = m.ID
	}
	before := len(tg.Records)
	add := func(it recall.Item) {
		tg.Records = append(tg.Records, importer.Record{End: end, Turn: turn, Entry: recall.Entry{Kind: recall.KindItem, Time: at, Data: stdjson.RawMessage(it)}})
	}
	var parts []part
	flush := func() {
		if len(parts) > 0 {
			add(item(messageItem{Type: "message", Role: role, Content: parts}))
			parts = nil
		}
	}
	blocks := m.Content.Blocks
	switch {
	case m.Content.Str != nil:
		blocks = []block{{Type: "text", Text: *m.Content.Str}}
	case blocks == nil:
		p.t.Skip("malformed")
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, textPart(role, b.Text))
		case "image":
			if ip, ok := imagePart(b.Source); ok {
				parts = append(parts, ip)
			} else {
				p.t.Skip("block:image")
			}
		case "thinking", "redacted_thinking":
			flush()
			r := reasoningItem{Type: "reasoning", Summary: []summaryText{}, EncryptedContent: b.Data}
			if b.Thinking != "" {
				r.Summary = append(r.Summary, summaryText{Type: "summary_text", Text: b.Thinking})
			}
			add(item(r))
		case "tool_use":
			flush()
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			add(item(functionCall{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: args}))
		case "tool_result":
			flush()
			out, lost := toolOutput(b.Content)
			for _, k := range lost {
				p.t.Skip(k)
			}
			add(item(functionCallOutput{Type: "function_call_output", CallID: b.ToolUseID, Output: out, IsError: b.IsError}))
		default:
			p.t.Skip("block:" + b.Type)
		}
	}
	flush()
	// The lines of one assistant message (one content block each) are one
	// turn: its usage, which every line repeats, is counted once.
	if len(tg.Records) > before && m.Usage != nil && (m.ID == "" || !p.counted[m.ID]) {
		tg.Records[before].Entry.Usage = m.Usage.recall()
		if m.ID != "" {
			p.counted[m.ID] = true
		}
	}
}

// finish gives every target its key, once the lines have named the
// working directory and the session.
func (p *parser) finish(project string) error {
	sid := p.parent
	if sid == "" {
		sid = p.session
	}
	if sid == "" {
		return fmt.Errorf("the subagent transcript names no parent session")
	}
	p.t.SessionID = sid
	cwd := "" // recorded when the session goes to its folder's project
	if project == "" && p.hasConversation() {
		key, err := importer.ProjectKey(p.cwd)
		if err != nil {
			return err
		}
		project, cwd = key, p.cwd
	}
	for _, name := range p.order {
		tg := p.targets[name]
		tg.Key = recall.Key{Project: project, Session: importer.SessionID(Tool, sid)}
		if name != "" {
			tg.Key.Subpath = "subagents/" + segment(name)
		} else {
			tg.Cwd = cwd
		}
		p.t.Targets = append(p.t.Targets, tg)
	}
	return nil
}

// hasConversation reports whether any line gave an item or compaction.
func (p *parser) hasConversation() bool {
	for _, tg := range p.targets {
		for _, r := range tg.Records {
			if r.Entry.Kind != recall.KindTitle {
				return true
			}
		}
	}
	return false
}

// segment turns a subagent id into a valid subpath segment.
func segment(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > recall.MaxIDLen {
		b = b[:recall.MaxIDLen]
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "agent"
}

func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
