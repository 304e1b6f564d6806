package gemini

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
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
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), decodeOptions)
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
		if line.Compact(decodeOptions) != nil {
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
		one, _ := json.Marshal(map[string]jsontext.Value{name: v}, decodeOptions)
		if json.Unmarshal(one, &m, decodeOptions) != nil {
			continue
		}
		switch name {
		case "sessionId":
			c.sid = m.SessionID
		case "projectHash":
			c.hash = m.ProjectHash
		case "startTime":
			c.tg.Created = importer.ParseTime(m.StartTime)
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

// lastTitle writes the title a legacy file names, with the records of its
// last message: the file's metadata is not part of its stream, so a
// title it gains later is written with the next messages.
func (c *chat) lastTitle() {
	if n := len(c.tg.Records); n > 0 && c.summary != "" {
		c.end = c.tg.Records[n-1].End
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
		if json.Unmarshal(line, &e, decodeOptions) != nil || e.SessionID == "" {
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

// logLine reads one entry of a session's logs: a prompt gives a user
// message.
func logLine(t *importer.Transcript, tg *importer.Target) func(importer.Line) {
	return func(ln importer.Line) {
		t.Lines++
		var e logEntry
		if err := json.Unmarshal(ln.Bytes, &e, decodeOptions); err != nil || e.SessionID == "" {
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
		e2 := recall.Entry{Kind: recall.KindItem, Time: importer.ParseTime(e.Timestamp), Data: []byte(recall.Message("user", e.Message))}
		tg.Records = append(tg.Records, importer.Record{End: ln.End, Entry: e2})
	}
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

// checkpointLine reads one turn of a checkpoint's history into items.
func checkpointLine(t *importer.Transcript, tg *importer.Target, seen *callSet) func(importer.Line) {
	return func(ln importer.Line) {
		t.Lines++
		var c content
		if err := json.Unmarshal(ln.Bytes, &c, decodeOptions); err != nil {
			t.Skip("malformed")
			return
		}
		role := map[string]string{"user": "user", "model": "assistant"}[c.Role]
		if role == "" {
			t.Skip("unknown:" + c.Role)
			return
		}
		b := builder{role: role, seen: seen, skip: t.Skip, id: "turn-" + strconv.FormatInt(ln.Start, 10)}
		for i, p := range c.Parts.Parts {
			b.part(p, i)
		}
		b.flush()
		if c.Parts.Bad > 0 {
			t.Skip("malformed")
		}
		for _, it := range b.out {
			tg.Records = append(tg.Records, importer.Record{End: ln.End, Entry: recall.Entry{Kind: recall.KindItem, Data: []byte(it.item)}})
		}
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
