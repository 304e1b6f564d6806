package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// Files Gemini CLI rewrites whole (a legacy session's .json, logs.json, a
// checkpoint) are read as the JSONL stream of their records: one line per
// message, log entry or history turn, compacted. The import's offset and
// digest are taken over that stream, so a file that gained records at its
// end is appended to, and one whose imported records changed is reported
// (importer.ErrChanged), never merged.

// errNotJSON reports a file that is neither a JSON array nor an object.
var errNotJSON = errors.New("gemini: not a JSON array or object")

// walk reads the JSON document data, an array or an object: each element
// of the array (in an object, of its member named list) goes to elem,
// compacted, and the object's other members to member. A document that
// ends early (a writer at work, or a damaged file) stops the walk and
// keeps what was read whole; fault names it ("torn" when it is cut short,
// "malformed" when it is not JSON), else it is "".
func walk(data []byte, list string, member func(name string, v jsontext.Value), elem func(line []byte)) (fault string, err error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), responses.DecodeOptions)
	tok, err := dec.ReadToken()
	if err != nil {
		return faultOf(err), nil
	}
	switch tok.Kind() {
	case '[':
		return elements(dec, elem), nil
	case '{':
		if list == "" {
			return "", errNotJSON
		}
	default:
		return "", errNotJSON
	}
	for {
		if dec.PeekKind() == '}' {
			return "", nil
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return faultOf(err), nil
		}
		name := tok.String() // before the next call voids the token
		if name == list && dec.PeekKind() == '[' {
			if _, err := dec.ReadToken(); err != nil {
				return faultOf(err), nil
			}
			if fault := elements(dec, elem); fault != "" {
				return fault, nil
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return faultOf(err), nil
		}
		if member != nil {
			member(name, v)
		}
	}
}

// elements passes each element of the array dec is in to elem, through
// the array's end.
func elements(dec *jsontext.Decoder, elem func(line []byte)) (fault string) {
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return faultOf(err)
		}
		line := v.Clone()
		if line.Compact(responses.DecodeOptions) != nil {
			return "malformed"
		}
		elem(line)
	}
	if _, err := dec.ReadToken(); err != nil {
		return faultOf(err)
	}
	return ""
}

// faultOf names the fault a decoding error shows.
func faultOf(err error) string {
	switch {
	case err == nil || errors.Is(err, io.EOF):
		return ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "torn"
	}
	return "malformed"
}

// legacy reads a session file of the versions before JSONL (a
// ConversationRecord, rewritten whole): it takes the metadata and returns
// the stream of its messages.
func (c *chat) legacy(data []byte) ([]byte, error) {
	var lines []byte
	members := map[string]jsontext.Value{}
	fault, err := walk(data, "messages", func(name string, v jsontext.Value) {
		members[name] = v.Clone()
	}, func(line []byte) {
		lines = append(append(lines, line...), '\n')
	})
	if err != nil {
		return nil, err
	}
	if fault != "" {
		c.t.Skip(fault)
	}
	// The members other than the messages, decoded one by one: a member
	// of the wrong type loses itself alone.
	for name, v := range members {
		var m record
		one, _ := json.Marshal(map[string]jsontext.Value{name: v}, responses.DecodeOptions)
		if json.Unmarshal(one, &m, responses.DecodeOptions) != nil {
			continue
		}
		switch name {
		case "sessionId":
			c.sid = m.SessionID
		case "projectHash":
			c.hash = m.ProjectHash
		case "startTime":
			c.target().Created = importer.ParseTime(m.StartTime)
		case "kind":
			c.subagent = m.Kind == "subagent"
		case "directories":
			c.dirs = m.Directories
		case "summary":
			if m.Summary != nil {
				c.summary = *m.Summary
			}
		}
	}
	return lines, nil
}

// legacyChat maps a session file of the versions before JSONL (a
// ConversationRecord, rewritten whole) as the stream of its messages.
type legacyChat struct {
	*chat
	lines, n int // the stream's lines, and those mapped
}

// Open implements importer.Opener: the stream of the file's messages,
// after taking its metadata.
func (c *legacyChat) Open(t *importer.Transcript) (io.ReadCloser, error) {
	c.t = t
	data, err := readWhole(t)
	if err != nil {
		return nil, err
	}
	lines, err := c.legacy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.File, err)
	}
	c.lines, c.whole = bytes.Count(lines, []byte("\n")), true
	return io.NopCloser(bytes.NewReader(lines)), nil
}

// Line implements importer.Mapper: the chat's, and after the last line
// the title the file names, written with its last messages: the file's
// metadata is not part of its stream, so a title it gains later is
// written with the next messages.
func (c *legacyChat) Line(t *importer.Transcript, ln importer.Line) {
	c.chat.Line(t, ln)
	if c.n++; c.n == c.lines && c.summary != "" && c.added > 0 {
		c.setTitle(c.summary)
	}
}

// logEntry is an entry of logs.json: a prompt typed in a session.
type logEntry struct {
	SessionID string `json:"sessionId"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Message   string `json:"message"`
}

// logSessions splits logs.json into the stream of each session's
// entries, in the order of their first entries; orphans is the stream of
// the entries that name no session (damaged ones), and fault the fault of
// the file's end, if any.
func logSessions(data []byte) (ids []string, streams map[string][]byte, orphans []byte, fault string, err error) {
	streams = map[string][]byte{}
	fault, err = walk(data, "", nil, func(line []byte) {
		var e logEntry
		if json.Unmarshal(line, &e, responses.DecodeOptions) != nil || e.SessionID == "" {
			orphans = append(append(orphans, line...), '\n')
			return
		}
		if _, ok := streams[e.SessionID]; !ok {
			ids = append(ids, e.SessionID)
		}
		streams[e.SessionID] = append(append(streams[e.SessionID], line...), '\n')
	})
	return ids, streams, orphans, fault, err
}

// logsMapper maps one session of a logs.json: its entries, a prompt
// giving a user message. A session whose recording was imported before
// (and has since been deleted by the CLI's cleanup) is left as it is:
// the recording holds more than the logs.
type logsMapper struct {
	r        *reader
	src      logSource
	recorded bool
}

// Open implements importer.Opener: the stream of the session's entries.
func (m *logsMapper) Open(t *importer.Transcript) (io.ReadCloser, error) {
	t.File, t.ModTime = m.src.path, importer.FileTime(m.src.path)
	if m.src.fault != "" {
		t.Skip(m.src.fault)
	}
	id, _ := m.Identity(true)
	project := m.r.project
	if project == "" {
		project = id.Project
	}
	if project == "" {
		project, _ = importer.ProjectKey(id.Cwd)
	}
	key := recall.Key{Project: project, Session: importer.SessionID(Tool, m.src.session)}
	if st, err := m.r.st.Stat(m.r.ctx, key); err == nil && filepath.Base(st.Metadata[importer.MetaFile]) != "logs.json" {
		m.recorded = true
		t.Skip("logs:recorded")
	}
	return io.NopCloser(bytes.NewReader(m.src.stream)), nil
}

// Identity implements importer.Mapper: the session the logs name, in the
// project of their folder.
func (m *logsMapper) Identity(bool) (importer.Identity, error) {
	return m.r.loc.identity(m.src.path, m.src.session, "", nil, true), nil
}

// Line implements importer.Mapper: one entry of the session's logs.
func (m *logsMapper) Line(t *importer.Transcript, ln importer.Line) {
	var e logEntry
	if err := json.Unmarshal(ln.Bytes, &e, responses.DecodeOptions); err != nil || e.SessionID == "" {
		t.Skip("malformed")
		return
	}
	if e.Type != "user" {
		t.Skip("logs:" + e.Type)
		return
	}
	if ignored([]part{{Text: &e.Message}}) {
		t.Skip("user:ignored")
		return
	}
	if m.recorded {
		return
	}
	e2 := recall.Entry{Kind: recall.KindItem, Time: importer.ParseTime(e.Timestamp), Data: []byte(recall.Message("user", e.Message))}
	t.Target("").Add(importer.Record{Entry: e2})
}

// logsFile maps a logs.json named alone: it gives no records (Import
// reads the sessions in it), but is checked.
type logsFile struct{}

// Open implements importer.Opener: an empty stream, once the file is
// found whole.
func (logsFile) Open(t *importer.Transcript) (io.ReadCloser, error) {
	data, err := os.ReadFile(t.File)
	if err != nil {
		return nil, err
	}
	if _, _, _, _, err := logSessions(data); err != nil {
		return nil, fmt.Errorf("%s: %w", t.File, err)
	}
	return io.NopCloser(bytes.NewReader(nil)), nil
}

func (logsFile) Line(*importer.Transcript, importer.Line) {}

func (logsFile) Identity(bool) (importer.Identity, error) {
	return importer.Identity{SessionID: "logs"}, nil
}

// checkpointStream returns the stream of a checkpoint's history turns: a
// checkpoint is {"history": [Content...]}, or in older versions the array
// of Content itself.
func checkpointStream(t *importer.Transcript, data []byte) ([]byte, error) {
	var lines []byte
	fault, err := walk(data, "history", func(string, jsontext.Value) {}, func(line []byte) {
		lines = append(append(lines, line...), '\n')
	})
	if fault != "" {
		t.Skip(fault)
	}
	return lines, err
}

// content is one turn of a checkpoint's history (a @google/genai Content).
type content struct {
	Role  string   `json:"role"`
	Parts partList `json:"parts"`
}

// checkpointMapper maps a checkpoint of /chat save: a session of its
// history, titled with its tag.
type checkpointMapper struct {
	path  string
	loc   *locator
	seen  callSet // the API's calls and responses carry no ids
	title bool    // written
}

// Open implements importer.Opener: the stream of the history's turns.
func (m *checkpointMapper) Open(t *importer.Transcript) (io.ReadCloser, error) {
	m.seen.reset()
	data, err := readWhole(t)
	if err != nil {
		return nil, err
	}
	lines, err := checkpointStream(t, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.File, err)
	}
	return io.NopCloser(bytes.NewReader(lines)), nil
}

// Identity implements importer.Mapper: a session of its own, named after
// the project folder and the tag, in the folder's project.
func (m *checkpointMapper) Identity(bool) (importer.Identity, error) {
	sid := filepath.Base(projectOf(m.path)) + "/checkpoint-" + checkpointTag(m.path)
	return m.loc.identity(m.path, sid, "", nil, true), nil
}

// Line implements importer.Mapper: one turn of the history, into items;
// the first items come after the tag's title.
func (m *checkpointMapper) Line(t *importer.Transcript, ln importer.Line) {
	var c content
	if err := json.Unmarshal(ln.Bytes, &c, responses.DecodeOptions); err != nil {
		t.Skip("malformed")
		return
	}
	role := map[string]string{"user": "user", "model": "assistant"}[c.Role]
	if role == "" {
		t.Skip("unknown:" + c.Role)
		return
	}
	b := builder{role: role, seen: &m.seen, skip: t.Skip, id: "turn-" + strconv.FormatInt(ln.Start, 10)}
	for i, p := range c.Parts.Parts {
		b.part(p, i)
	}
	b.flush()
	if c.Parts.Bad > 0 {
		t.Skip("malformed")
	}
	for _, it := range b.out {
		tg := t.Target("")
		if !m.title {
			m.title, tg.Created = true, t.ModTime // no turn has a time
			tg.Add(importer.Record{Entry: recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: checkpointTag(t.File), Source: recall.TitleUser})})
		}
		tg.Add(importer.Record{Entry: recall.Entry{Kind: recall.KindItem, Data: []byte(it.item)}})
	}
}

// checkpointTag returns the tag of checkpoint-<tag>.json, as /chat save
// was given it (the file name holds it URI-encoded).
func checkpointTag(path string) string {
	tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "checkpoint-"), ".json")
	if s, err := url.PathUnescape(tag); err == nil {
		return s
	}
	return tag
}
