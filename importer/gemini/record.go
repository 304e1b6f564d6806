package gemini

import (
	"bytes"
	"cmp"
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// record is one line of a session file (chatRecordingTypes.ts): the first
// line's metadata (a PartialMetadataRecord, or in older files the whole
// ConversationRecord on one line), a MessageRecord (it has an id; a later
// line with the same id replaces it), a MetadataUpdateRecord ("$set") or a
// RewindRecord ("$rewindTo"). Fields the import does not use are not
// decoded.
type record struct {
	// MessageRecord
	ID        *string    `json:"id"`
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	Content   partList   `json:"content"`
	ToolCalls []toolCall `json:"toolCalls"`
	Thoughts  []thought  `json:"thoughts"`
	Tokens    *tokens    `json:"tokens"`
	Model     string     `json:"model"`
	// the metadata line
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	metadata    `json:",inline"`
	// the updates
	Set      *metadata `json:"$set"`
	RewindTo *string   `json:"$rewindTo"`
}

// metadata is what a metadata line or a "$set" update may say of the
// session. Messages, when present, is the whole message list: it replaces
// the one read so far (a "$set" checkpoint, or a legacy one-line record).
type metadata struct {
	StartTime   string            `json:"startTime"`
	Summary     *string           `json:"summary"`
	Kind        string            `json:"kind"`
	Directories []string          `json:"directories"`
	Messages    *[]jsontext.Value `json:"messages"`
}

// toolCall is a ToolCallRecord: a call Gemini CLI ran and its result.
type toolCall struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Args      jsontext.Value `json:"args"`
	Result    partList       `json:"result"`
	Status    string         `json:"status"`
	Timestamp string         `json:"timestamp"`
}

// thought is a ThoughtSummary the CLI recorded beside a model turn.
type thought struct {
	Subject     string `json:"subject"`
	Description string `json:"description"`
}

// text is the thought as Gemini CLI turns it back into a thought part
// (convertSessionToClientHistory).
func (th thought) text() string {
	if th.Subject == "" {
		return th.Description
	}
	return "**" + th.Subject + "** " + th.Description
}

// tokens is a TokensSummary. Input counts the cached input; output does
// not count the thoughts.
type tokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Thoughts int64 `json:"thoughts"`
	Total    int64 `json:"total"`
}

// usage returns the tokens as recall counts them: the thoughts are output,
// as OpenAI counts reasoning in output_tokens.
func (t *tokens) usage() *recall.Usage {
	if t == nil {
		return nil
	}
	return importer.Usage(recall.Usage{InputTokens: t.Input, OutputTokens: t.Output + t.Thoughts, TotalTokens: t.Total})
}

// part is a @google/genai Part. Exactly one of its data fields is set in
// the parts Gemini CLI records.
type part struct {
	Text             *string
	Thought          bool
	FunctionCall     *functionCallPart
	FunctionResponse *functionResponse
	InlineData       *blob
	FileData         *fileData
	// Other is set when the part holds none of the fields above (an
	// executableCode part, a future kind): the name of its first field.
	Other string
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom: it reads the members
// it maps in the pass that reads the line, and notes the name of the
// first one of another kind.
func (p *part) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return errors.New("gemini: a part is not an object")
	}
	other := ""
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		var v any
		switch name := tok.String(); name {
		case "text":
			v = &p.Text
		case "thought":
			v = &p.Thought
		case "functionCall":
			v = &p.FunctionCall
		case "functionResponse":
			v = &p.FunctionResponse
		case "inlineData":
			v = &p.InlineData
		case "fileData":
			v = &p.FileData
		default:
			if other == "" {
				other = name
			}
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if err := json.UnmarshalDecode(dec, v); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if p.Text == nil && p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil {
		p.Other = cmp.Or(other, "empty")
	}
	return nil
}

type functionCallPart struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args jsontext.Value `json:"args"`
}

type functionResponse struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Response jsontext.Value `json:"response"`
}

// responseText returns the text of a functionResponse's response: its
// output, or its error (isErr), when that is all it holds; else the
// response as JSON. The response is read once more as tokens: a
// response's output can be large, and tokens do not build a map.
func responseText(resp jsontext.Value) (out string, isErr bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(resp), responses.DecodeOptions)
	if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
		if name, err := dec.ReadToken(); err == nil && name.Kind() == '"' {
			field := name.String()
			if (field == "output" || field == "error") && dec.PeekKind() == '"' {
				if val, err := dec.ReadToken(); err == nil {
					text := val.String()
					if end, err := dec.ReadToken(); err == nil && end.Kind() == '}' {
						return text, field == "error"
					}
				}
			}
		}
	}
	return responses.Compact(resp), hasError(resp)
}

// hasError reports whether a response has a member "error".
func hasError(resp jsontext.Value) bool {
	var r struct {
		Error jsontext.Value `json:"error"`
	}
	return json.Unmarshal(resp, &r, responses.DecodeOptions) == nil && len(r.Error) > 0 && string(r.Error) != "null"
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

// partList is a PartListUnion: a string, one Part, or an array of strings
// and Parts, decoded as the list of parts it stands for. An element that
// is neither a string nor an object is dropped and counted in Bad.
type partList struct {
	Parts []part
	Bad   int
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (l *partList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			if err := l.element(dec); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return err
	case 'n':
		_, err := dec.ReadToken()
		return err
	}
	return l.element(dec)
}

// element decodes one string or Part of the list.
func (l *partList) element(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		var s string
		if err := json.UnmarshalDecode(dec, &s); err != nil {
			return err
		}
		l.Parts = append(l.Parts, part{Text: &s})
		return nil
	case '{':
		// Decoded in the same pass as the line around it: a part of the
		// wrong shape makes the line one that does not decode.
		var p part
		if err := p.UnmarshalJSONFrom(dec); err != nil {
			return err
		}
		l.Parts = append(l.Parts, p)
		return nil
	}
	if err := dec.SkipValue(); err != nil {
		return err
	}
	l.Bad++
	return nil
}
