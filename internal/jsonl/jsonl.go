// Package jsonl is the line shape of a log entry that the file store's
// logs and export's JSONL export share: one JSON object a line, its fields
// in a fixed order,
//
//	{"seq":3,"kind":"item","time":"2025-06-01T10:00:00.123456Z","usage":{…},"data":{…}}
//
// "data" holds the payload's bytes verbatim. A payload that cannot sit on
// one line unchanged (line breaks or blanks around it, or bytes that are
// not JSON) is written as a JSON string in "data_text", or in "data_b64"
// when it is not UTF-8, so a reader gets back the very bytes.
// AppendEntry writes a line; Line decodes one with encoding/json.
package jsonl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// Options are what the writers of lines do differently.
type Options struct {
	// More adds "more":true after the time: the file store marks every
	// line of a batch but the last with it.
	More bool
	// Validated says the payloads of the kinds storekit.ValidateEntries
	// decodes (items, titles, metadata, pops, removals, compactions,
	// forks) are known to be JSON, so only line breaks and blanks decide
	// whether they go in "data"; the payloads of other kinds are checked.
	Validated bool
	// EscapeHTML writes <, > and & in strings as encoding/json does
	// (\u003c, \u003e, \u0026). Without it a string that needs no other
	// escape keeps them as they are; one that does is written by
	// encoding/json, which escapes them too.
	EscapeHTML bool
}

// AppendEntry appends e as one line, newline included, to buf. A time
// that JSON cannot hold (a year out of RFC 3339's range) is an error from
// time.Time.AppendText, and buf is returned as it was.
func AppendEntry(buf []byte, e recall.Entry, o Options) ([]byte, error) {
	start := len(buf)
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendInt(buf, e.Seq, 10)
	buf = append(buf, `,"kind":`...)
	buf = appendString(buf, string(e.Kind), o.EscapeHTML)
	buf = append(buf, `,"time":"`...)
	// what time.Time.MarshalJSON writes, appended in place (AppendText
	// returns nil on error)
	tb, err := e.Time.AppendText(buf)
	if err != nil {
		return buf[:start], err
	}
	buf = append(tb, '"')
	if o.More {
		buf = append(buf, `,"more":true`...)
	}
	if u := e.Usage; u != nil {
		// what encoding/json writes for recall.Usage
		buf = append(buf, `,"usage":{"input_tokens":`...)
		buf = strconv.AppendInt(buf, u.InputTokens, 10)
		buf = append(buf, `,"output_tokens":`...)
		buf = strconv.AppendInt(buf, u.OutputTokens, 10)
		buf = append(buf, `,"total_tokens":`...)
		buf = strconv.AppendInt(buf, u.TotalTokens, 10)
		buf = append(buf, '}')
	}
	if len(e.Data) > 0 {
		switch {
		case embeddable(e.Kind, e.Data, o.Validated):
			buf = append(buf, `,"data":`...)
			buf = append(buf, e.Data...)
		case utf8.Valid(e.Data):
			buf = append(buf, `,"data_text":`...)
			buf = appendString(buf, string(e.Data), o.EscapeHTML)
		default:
			buf = append(buf, `,"data_b64":"`...)
			buf = base64.StdEncoding.AppendEncode(buf, e.Data)
			buf = append(buf, '"')
		}
	}
	return append(buf, "}\n"...), nil
}

// embeddable reports whether data can be written as the raw value of
// "data" and read back byte for byte: one valid JSON value with no line
// break and nothing a decoder would trim around it. validated is
// Options.Validated.
func embeddable(kind recall.Kind, data []byte, validated bool) bool {
	// two IndexByte scans, not ContainsAny: they are vectorised, and this
	// runs over every byte of every item appended
	if bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0 || isBlank(data[0]) || isBlank(data[len(data)-1]) {
		return false
	}
	if validated {
		switch kind {
		case recall.KindItem, recall.KindTitle, recall.KindMeta, recall.KindPop, recall.KindRemove, recall.KindCompaction, recall.KindFork:
			return true // storekit.ValidateEntries has decoded these
		}
	}
	return jsonvalid.Valid(data)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// appendString appends s as a JSON string. Plain strings (the common
// kinds) skip encoding/json. escapeHTML is Options.EscapeHTML.
func appendString(buf []byte, s string, escapeHTML bool) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || escapeHTML && (c == '<' || c == '>' || c == '&') {
			b, _ := json.Marshal(s) // a string always marshals
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// Line is the fields of an entry line as encoding/json sees them: what
// AppendEntry writes but "more", for the lines the writers' fast paths do
// not read. A reader embeds it in the type it decodes a line into, beside
// the fields of its own.
type Line struct {
	Seq      int64           `json:"seq"`
	Kind     recall.Kind     `json:"kind"`
	Time     time.Time       `json:"time"`
	Usage    *recall.Usage   `json:"usage"`
	Data     json.RawMessage `json:"data"`
	DataText *string         `json:"data_text"`
	DataB64  []byte          `json:"data_b64"`
}

// Entry returns the entry l holds, its payload from "data", "data_text"
// or "data_b64" (nil when empty). It checks nothing: a missing seq or
// time is the reader's to refuse.
func (l Line) Entry() recall.Entry {
	e := recall.Entry{Seq: l.Seq, Kind: l.Kind, Time: l.Time, Usage: l.Usage, Data: l.Data}
	switch {
	case l.DataText != nil:
		e.Data = json.RawMessage(*l.DataText)
	case l.DataB64 != nil:
		e.Data = json.RawMessage(l.DataB64)
	}
	if len(e.Data) == 0 {
		e.Data = nil
	}
	return e
}
