package claudecode

import (
	stdjson "encoding/json"
	"errors"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
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
	return importer.Usage(recall.Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	})
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

// mapper maps the lines of one Claude Code transcript: a session's
// <sessionId>.jsonl, or a subagent's agent-<id>.jsonl (in
// <sessionId>/subagents/, or beside the sessions in older versions).
type mapper struct {
	// agent is the subagent's id when the file is a subagent transcript.
	agent   string
	parent  string // the parent session's id, from the path, if known
	cwd     string // the first working directory named
	session string // the first session id named
	// counted holds the message ids whose usage is counted: the lines of
	// one assistant message each repeat it.
	counted recentSet
	rank    int // of the last title recorded
}

// NewMapper returns the importer.Mapper of the Claude Code transcript at
// path (importer.Run, recall import --watch).
func NewMapper(path string) importer.Mapper {
	p := &mapper{counted: newRecentSet(recentMessages)}
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

// Identity implements importer.Mapper: the session is the parent's (from
// the path, else the first sessionId named), in the first folder named.
func (p *mapper) Identity(eof bool) (importer.Identity, error) {
	sid := p.parent
	if sid == "" {
		sid = p.session
	}
	if eof && sid == "" {
		return importer.Identity{}, errors.New("the subagent transcript names no parent session")
	}
	return importer.Identity{SessionID: sid, Cwd: p.cwd}, nil
}

// target returns the target a conversation line goes to: the subagent's
// record in a subagent transcript, a sidechain record for a sidechain line
// of a session's transcript, else the session.
func (p *mapper) target(t *importer.Transcript, l *line) *importer.Target {
	agent := p.agent
	if agent == "" && l.IsSidechain {
		agent = "sidechain"
		if l.AgentID != "" {
			agent = "agent-" + l.AgentID
		}
	}
	return t.Target(agent)
}

// Line implements importer.Mapper.
func (p *mapper) Line(t *importer.Transcript, ln importer.Line) {
	var l line
	if err := json.Unmarshal(ln.Bytes, &l, responses.DecodeOptions); err != nil {
		t.Torn(ln)
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
		p.conversation(t, &l)
	case "system":
		if l.Subtype != "compact_boundary" {
			t.Skip("system:" + l.Subtype)
			return
		}
		p.target(t, &l).Add(importer.Record{
			Entry:      recall.Entry{Kind: recall.KindCompaction, Time: importer.ParseTime(l.Timestamp)},
			Compaction: &recall.Compaction{Items: []recall.Item{}, Strategy: "claude-code"},
		})
	case "summary":
		p.title(t, &l, l.Summary, rankSummary)
	case "ai-title":
		p.title(t, &l, first(l.AITitle, l.Title), rankAI)
	case "custom-title":
		p.title(t, &l, first(l.CustomTitle, l.Title), rankCustom)
	default:
		switch {
		case bookkeeping[l.Type]:
			t.Skip(l.Type)
		case l.Type == "":
			t.Skip("unknown")
		default:
			t.Skip("unknown:" + l.Type)
		}
	}
}

// title records a title of the given rank unless a better-ranked one came
// before: custom-title, then ai-title, then summary; the latest of a rank
// wins. Custom titles are the user's, the others auto titles.
func (p *mapper) title(t *importer.Transcript, l *line, title string, rank int) {
	title = strings.Join(strings.Fields(strings.ReplaceAll(title, "\x00", "")), " ")
	if title == "" || rank < p.rank || p.agent != "" {
		t.Skip(l.Type)
		return
	}
	p.rank = rank
	src := recall.TitleAuto
	if rank == rankCustom {
		src = recall.TitleUser
	}
	e := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: src})
	e.Time = importer.ParseTime(l.Timestamp)
	t.Target("").Add(importer.Record{Entry: e}) // titles name the session
}

// conversation turns a user or assistant line into items: text and images
// into one message, each tool_use into a function_call, each tool_result
// into a function_call_output, each thinking block into a reasoning item.
func (p *mapper) conversation(t *importer.Transcript, l *line) {
	m := l.Message
	if m == nil || m.Content.empty() {
		t.Skip("malformed")
		return
	}
	role := l.Type
	tg := p.target(t, l)
	if role == "assistant" && m.Model != "" && m.Model != "<synthetic>" {
		tg.Model = m.Model
	}
	blocks := m.Content.Blocks
	switch {
	case m.Content.Str != nil:
		blocks = []block{{Type: "text", Text: *m.Content.Str}}
	case blocks == nil:
		t.Skip("malformed")
		return
	}
	at := importer.ParseTime(l.Timestamp)
	turn := ""
	if role == "assistant" {
		turn = m.ID
	}
	items := lineItems(t, role, blocks)
	// The lines of one assistant message (one content block each) are one
	// turn: its usage, which every line repeats, is counted once.
	var u *recall.Usage
	if len(items) > 0 && m.Usage != nil && (m.ID == "" || !p.counted.has(m.ID)) {
		u = m.Usage.recall()
		if m.ID != "" {
			p.counted.add(m.ID)
		}
	}
	for _, it := range items {
		tg.Add(importer.Record{Turn: turn, Entry: recall.Entry{Kind: recall.KindItem, Time: at, Data: stdjson.RawMessage(it), Usage: u}})
		u = nil
	}
}

// lineItems returns the items of a conversation line's blocks, counting
// the blocks it cannot keep as skipped.
func lineItems(t *importer.Transcript, role string, blocks []block) []recall.Item {
	var items []recall.Item
	var parts []responses.Part
	flush := func() {
		if len(parts) > 0 {
			items = append(items, responses.Encode(responses.Message{Type: "message", Role: role, Content: parts}))
			parts = nil
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, responses.Text(role, b.Text))
		case "image":
			if ip, ok := imagePart(b.Source); ok {
				parts = append(parts, ip)
			} else {
				t.Skip("block:image")
			}
		case "thinking", "redacted_thinking":
			flush()
			r := responses.Reasoning{Type: "reasoning", Summary: []responses.Summary{}, EncryptedContent: b.Data}
			if b.Thinking != "" {
				r.Summary = append(r.Summary, responses.Summary{Type: "summary_text", Text: b.Thinking})
			}
			items = append(items, responses.Encode(r))
		case "tool_use":
			flush()
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			items = append(items, responses.Encode(responses.Call{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: args}))
		case "tool_result":
			flush()
			out, lost := toolOutput(b.Content)
			for _, k := range lost {
				t.Skip(k)
			}
			items = append(items, responses.Encode(responses.Output{Type: "function_call_output", CallID: b.ToolUseID, Output: out, IsError: b.IsError}))
		default:
			t.Skip("block:" + b.Type)
		}
	}
	flush()
	return items
}

func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// recentMessages is how many message ids a mapper remembers for counting
// usage once per message: the lines of one message come together (a
// message's blocks, then the results of its tool calls), so a window keeps
// the memory of a long transcript bounded without counting one twice.
const recentMessages = 4096

// recentSet holds the last ids added to it, up to its size.
type recentSet struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func newRecentSet(size int) recentSet {
	return recentSet{ids: make(map[string]struct{}, size), ring: make([]string, size)}
}

func (r *recentSet) has(id string) bool {
	_, ok := r.ids[id]
	return ok
}

// add adds id, forgetting the oldest id once the set is full.
func (r *recentSet) add(id string) {
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.ids[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}
