package opencode

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// sessionInfo is what the import reads of an opencode session (the
// session table's row, or storage/session/<project>/<id>.json).
type sessionInfo struct {
	ID        string  `json:"id"`
	ParentID  string  `json:"parentID"`
	Directory string  `json:"directory"`
	Title     string  `json:"title"`
	Revert    *revert `json:"revert"`
	Time      struct {
		Created float64 `json:"created"`
	} `json:"time"`
	// name is where the session was read from: the database and the
	// session ("<db>#<id>"), or its file.
	name string
	// version is, for a session of a database, what its row holds that
	// an import reads (title, pending undo, last update): with the
	// version of its messages, Follower finds what changed.
	version string
}

// revert is a session's pending undo: the messages from MessageID on (or,
// with PartID, from that part of it on) are hidden, and are deleted when
// the next prompt is sent.
type revert struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
}

// info is a message's info (MessageV2.Info; the message table's data, or
// storage/message/<session>/<id>.json). Numbers are read as float64: the
// schema allows any finite number.
type info struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Time struct {
		Created   float64  `json:"created"`
		Completed *float64 `json:"completed"`
	} `json:"time"`
	Error   *errorInfo `json:"error"`
	ModelID string     `json:"modelID"`
	Tokens  *struct {
		Input     float64 `json:"input"`
		Output    float64 `json:"output"`
		Reasoning float64 `json:"reasoning"`
		Cache     struct {
			Read  float64 `json:"read"`
			Write float64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

type errorInfo struct {
	Name string `json:"name"`
}

// usage returns an assistant message's tokens as recall counts them:
// input with the cached input, output with the reasoning, as OpenAI
// counts them.
func (m *info) usage() *recall.Usage {
	if m.Tokens == nil {
		return nil
	}
	t := m.Tokens
	u := recall.Usage{
		InputTokens:  int64(t.Input + t.Cache.Read + t.Cache.Write),
		OutputTokens: int64(t.Output + t.Reasoning),
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 {
		return nil
	}
	return importer.Usage(u)
}

// part is a message part (MessageV2.Part; the part table's data, or
// storage/part/<message>/<id>.json): the fields of the kinds the import
// maps.
type part struct {
	ID        string     `json:"id"`
	Type      string     `json:"type"`
	Text      string     `json:"text"`
	Ignored   bool       `json:"ignored"`
	Mime      string     `json:"mime"`
	Filename  string     `json:"filename"`
	URL       string     `json:"url"`
	CallID    string     `json:"callID"`
	Tool      string     `json:"tool"`
	State     *toolState `json:"state"`
	TailStart string     `json:"tail_start_id"`
}

// toolState is a tool part's state: pending, running, completed or error.
type toolState struct {
	Status      string         `json:"status"`
	Input       jsontext.Value `json:"input"`
	Output      string         `json:"output"`
	Error       string         `json:"error"`
	Attachments []part         `json:"attachments"`
	Metadata    struct {
		Interrupted bool    `json:"interrupted"`
		Output      *string `json:"output"`
	} `json:"metadata"`
}

// message is one message with its parts, as read.
type message struct {
	id    string
	info  info
	parts []part
	// bad counts the parts (or the info) that did not decode.
	bad  int
	good bool // the info decoded
}

// decodeMessage decodes a message's info and parts; id and the parts'
// ids come from where they were stored, as opencode takes them.
func decodeMessage(id string, data []byte, parts [][2][]byte) message {
	m := message{id: id}
	m.good = json.Unmarshal(data, &m.info, responses.DecodeOptions) == nil
	if !m.good {
		m.info = info{} // what damaged data half decoded is not kept
		m.bad++
	}
	for _, p := range parts {
		var pt part
		if json.Unmarshal(p[1], &pt, responses.DecodeOptions) != nil {
			m.bad++
			continue
		}
		pt.ID = string(p[0])
		m.parts = append(m.parts, pt)
	}
	return m
}
