package gemini

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// chat turns the records of one session file into the entries of its
// recall record. Gemini CLI's file is a log of its message list: a message
// is appended, then replaced by later lines with its id (its tool calls,
// their results and its tokens arrive that way), the list is cut back by a
// rewind or replaced whole by a "$set" checkpoint. chat keeps that list
// and, after each line, brings recall's view up to it: the items a line
// adds are appended; when the list changed in a way appending cannot say
// (a rewind, a compressed history), a compaction replaces the view with
// the items of the whole list.
type chat struct {
	t  *importer.Transcript
	tg *importer.Target // made by target
	// path is the file's; parent the parent session's id when it is a
	// subagent's recording (chats/<parent id>/<id>.jsonl).
	path, parent string
	loc          *locator
	// what the metadata lines say
	sid, hash string
	subagent  bool // kind "subagent"
	dirs      []string
	title     string // the title last written
	summary   string // a legacy file's title, written with its last records
	msgs      []*message
	pos       map[string]int // message id → index in msgs
	view      []recall.Item  // the items recall's view holds
	seen      callSet
	added     int // records added
	// cwd is the folder the project's files name (found: looked for),
	// before the workspace directories; whole reports a file read whole,
	// whose directories no later line changes.
	cwd          string
	found, whole bool
}

// message is one message of the list and the items it gives.
type message struct {
	id    string
	rec   *record
	items []built
	// calls and outputs are the call ids its items write.
	calls, outputs []string
	usage          bool // its usage is written
}

// newChat returns the mapper of the session recording at path.
func newChat(path string, loc *locator) *chat {
	c := &chat{path: path, parent: parentOf(path), loc: loc, pos: map[string]int{}}
	c.seen.reset()
	return c
}

// target returns the recording's record, made on first use: the session,
// or the subagent record the recording's session id (else its file's
// name) names under its parent.
func (c *chat) target() *importer.Target {
	if c.tg == nil {
		c.tg = c.t.Target(c.agent())
	}
	return c.tg
}

// add adds the next record of the recording.
func (c *chat) add(r importer.Record) {
	c.added++
	c.target().Add(r)
}

// agent returns the subagent id of a subagent's recording, else "".
func (c *chat) agent() string {
	switch {
	case c.parent == "":
		return ""
	case c.sid != "":
		return c.sid
	}
	return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(c.path), ".jsonl"), ".json")
}

// Line implements importer.Mapper: it reads one line of a session file,
// by the kind of record it holds.
func (c *chat) Line(t *importer.Transcript, ln importer.Line) {
	c.t = t
	var r record
	if err := json.Unmarshal(ln.Bytes, &r, responses.DecodeOptions); err != nil {
		c.t.Torn(ln)
		return
	}
	switch {
	case r.RewindTo != nil:
		c.rewind(*r.RewindTo)
	case r.Set != nil:
		c.update(*r.Set)
	case r.ID != nil:
		c.message(&r)
	case r.SessionID != "" && r.ProjectHash != "":
		c.metadataLine(&r)
	default:
		c.t.Skip("unknown")
	}
}

// Identity implements importer.Mapper: the session the metadata names
// (for a subagent's recording, its parent), in the project of the folder
// the recording is in (see locator.project). The workspace directories,
// which a later line may change, decide it only at the end.
func (c *chat) Identity(eof bool) (importer.Identity, error) {
	sid := c.sid
	if c.parent != "" {
		sid = c.parent
		if c.tg != nil {
			c.tg.Agent = c.agent()
		}
	}
	switch {
	case sid == "" && eof:
		return importer.Identity{}, errors.New("the session names no session id")
	case c.sid == "" && !eof:
		return importer.Identity{}, nil // the metadata line names the session and its hash
	}
	if !c.found { // what names the folder but the lines' directories: once
		c.cwd, c.found = c.loc.cwd(projectOf(c.path), c.hash, nil), true
	}
	if c.cwd != "" {
		return importer.Identity{SessionID: sid, Cwd: c.cwd}, nil
	}
	return c.loc.identity(c.path, sid, c.hash, c.dirs, eof || c.whole), nil
}

// metadataLine takes the session's id, project, start and kind from the
// first metadata line; a later one (or a legacy one-line record) updates
// what it names.
func (c *chat) metadataLine(r *record) {
	if c.sid == "" {
		c.sid, c.hash = r.SessionID, r.ProjectHash
		c.target().Created = importer.ParseTime(r.StartTime)
		c.subagent = r.Kind == "subagent"
	}
	c.update(r.metadata)
}

// update applies what a "$set" (or a metadata line) changes: the title,
// the workspace directories, and the whole message list.
func (c *chat) update(m metadata) {
	if m.Summary != nil {
		c.setTitle(*m.Summary)
	}
	if len(m.Directories) > 0 {
		c.dirs = m.Directories
	}
	if m.Messages != nil {
		c.replace(*m.Messages)
	}
}

// setTitle writes the session's summary as its title when it changed.
func (c *chat) setTitle(title string) {
	title = strings.Join(strings.Fields(strings.ReplaceAll(title, "\x00", "")), " ")
	if c.subagent {
		c.t.Skip("summary") // a subagent's summary of its work: its record has no title
	}
	if title == "" || title == c.title || c.subagent {
		return
	}
	c.title = title
	e := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: recall.TitleAuto})
	c.add(importer.Record{Entry: e})
}

// replace makes list the message list (a checkpoint): a message of an id
// seen before keeps its place, as Gemini CLI's own reader keeps it.
func (c *chat) replace(list []jsontext.Value) {
	c.msgs, c.pos = nil, map[string]int{}
	for _, v := range list {
		var r record
		if json.Unmarshal(v, &r, responses.DecodeOptions) != nil || r.ID == nil {
			c.t.Skip("malformed")
			continue
		}
		c.put(&r)
	}
	c.rebuild(strategyChange)
}

// put sets the message of r's id in the list, appending it when new, and
// returns its index.
func (c *chat) put(r *record) int {
	i, ok := c.pos[*r.ID]
	if !ok {
		i = len(c.msgs)
		c.pos[*r.ID] = i
		c.msgs = append(c.msgs, &message{id: *r.ID})
	}
	c.msgs[i].rec = r
	return i
}

// rewind cuts the list before message id, or clears it when no message
// has that id (as Gemini CLI does).
func (c *chat) rewind(id string) {
	i, ok := c.pos[id]
	if !ok {
		i = 0
	}
	for _, m := range c.msgs[i:] {
		delete(c.pos, m.id)
	}
	c.msgs = c.msgs[:i]
	c.rebuild(strategyRewind)
}

// message reads a message record: a new message, or a new version of one
// in the list.
func (c *chat) message(r *record) {
	switch r.Type {
	case "user", "gemini":
	case "info", "error", "warning":
		c.t.Skip("message:" + r.Type) // shown to the user, never to the model
	case "":
		c.t.Skip("unknown")
	default:
		c.t.Skip("unknown:" + r.Type)
	}
	if r.Type == "gemini" && r.Model != "" {
		c.target().Model = r.Model
	}
	i := c.put(r)
	m := c.msgs[i]
	if i < len(c.msgs)-1 {
		c.rebuild(strategyChange) // an earlier message changed
		return
	}
	// The last message: appended, or grown (its calls, their results).
	c.seen.add(m.calls, m.outputs, -1)
	old := m.items
	c.build(m, c.t.Skip)
	if !hasPrefix(m.items, old) {
		c.rebuild(strategyChange)
		return
	}
	c.emit(m, m.items[len(old):])
}

// build computes the items of m, the last message built, from the calls
// and outputs of the messages before it, and adds its own to them. skip,
// when set, counts the parts that give nothing.
func (c *chat) build(m *message, skip func(string)) {
	m.items, m.calls, m.outputs = nil, nil, nil
	r := m.rec
	at := importer.ParseTime(r.Timestamp)
	switch r.Type {
	case "user":
		if ignored(r.Content.Parts) {
			if skip != nil {
				skip("user:ignored")
			}
			return
		}
		b := builder{role: "user", at: at, seen: &c.seen, skip: skip, id: m.id}
		for i, p := range r.Content.Parts {
			b.part(p, i)
		}
		b.flush()
		m.items, m.calls, m.outputs = b.out, b.calls, b.outputs
	case "gemini":
		b := builder{role: "assistant", at: at, seen: &c.seen, skip: skip, id: m.id}
		modelTurn(&b, r)
		m.items, m.calls, m.outputs = b.out, b.calls, b.outputs
	}
	if skip != nil && r.Content.Bad > 0 {
		skip("malformed")
	}
}

// modelTurn builds a gemini message the way Gemini CLI rebuilds its turn
// (convertSessionToClientHistory): a message whose content holds its calls
// or thoughts is that content; an older one is its recorded thoughts, its
// text and its tool calls. The results of its tool calls follow.
func modelTurn(b *builder, r *record) {
	for i := range r.ToolCalls {
		if r.ToolCalls[i].ID == "" {
			r.ToolCalls[i].ID = *r.ID + "-call-" + strconv.Itoa(i)
		}
	}
	modern := false
	for _, p := range r.Content.Parts {
		modern = modern || p.FunctionCall != nil || p.Thought
	}
	if !modern {
		for _, th := range r.Thoughts {
			b.reasoning(th.text())
		}
	}
	for i, p := range r.Content.Parts {
		b.part(p, i)
	}
	b.flush()
	if !modern {
		for _, tc := range r.ToolCalls {
			b.call(tc.ID, tc.Name, tc.Args)
		}
	}
	for _, tc := range r.ToolCalls {
		b.result(tc)
	}
}

// ignored reports a user message Gemini CLI leaves out of the history it
// resumes (isIgnoredUserContent): an empty one, a slash command or help
// request, or context it adds again on its own.
func ignored(parts []part) bool {
	if len(parts) == 0 {
		return true
	}
	if parts[0].Text == nil || parts[0].Thought {
		return false
	}
	var text strings.Builder
	for _, p := range parts {
		if p.Text == nil {
			return false
		}
		text.WriteString(*p.Text)
	}
	s := strings.TrimSpace(text.String())
	for _, prefix := range []string{"/", "?", "<session_context>", "<hook_context>"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return s == ""
}

// The strategies of the compactions an import writes: a rewind, and any
// other change appending cannot say.
const (
	strategyChange = "gemini-cli"
	strategyRewind = "gemini-cli rewind"
)

// rebuild computes the items of the whole list again and brings the view
// up to them: by appending when the view is their start, else by a
// compaction (of the strategy named) that replaces the view with them.
func (c *chat) rebuild(strategy string) {
	c.seen.reset()
	var all []built
	for _, m := range c.msgs {
		c.build(m, nil)
		all = append(all, m.items...)
	}
	if hasPrefix(all, builtOf(c.view)) {
		c.emit(nil, all[len(c.view):])
		return
	}
	items := make([]recall.Item, len(all))
	for i, b := range all {
		items[i] = b.item
	}
	c.add(importer.Record{
		Entry:      recall.Entry{Kind: recall.KindCompaction},
		Compaction: &recall.Compaction{Items: items, Strategy: strategy},
	})
	c.view = items
}

// emit writes items, new at the current line; the first carries the usage
// of m (the message they belong to) when it is not written yet.
func (c *chat) emit(m *message, items []built) {
	for i, b := range items {
		e := recall.Entry{Kind: recall.KindItem, Time: b.at, Data: []byte(b.item)}
		if i == 0 && m != nil && !m.usage && m.rec.Type == "gemini" {
			if u := m.rec.Tokens.usage(); u != nil {
				e.Usage, m.usage = u, true
			}
		}
		c.add(importer.Record{Entry: e})
		c.view = append(c.view, b.item)
	}
}

// hasPrefix reports whether the items of all start with those of prefix.
func hasPrefix(all, prefix []built) bool {
	if len(prefix) > len(all) {
		return false
	}
	for i, p := range prefix {
		if !bytes.Equal(all[i].item, p.item) {
			return false
		}
	}
	return true
}

// builtOf wraps items for hasPrefix.
func builtOf(items []recall.Item) []built {
	out := make([]built, len(items))
	for i, it := range items {
		out[i] = built{item: it}
	}
	return out
}
