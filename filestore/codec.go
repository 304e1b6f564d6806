package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonl"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// This file is the log's line format; doc.go describes it. The encoder
// (jsonl.AppendEntry, which export's JSONL export shares) writes the
// fields in a fixed order so the decoder's fast path can read them without
// a general JSON decode; any other valid line (edited by hand, written by
// a future version) goes through encoding/json.

var errBadLine = errors.New("undecodable log line")

// appendLine appends e as one log line, newline included, to buf. more
// marks every line of a batch but the last. A time that JSON cannot hold
// (a year out of RFC 3339's range) is ErrInvalidItem, and buf is returned
// as it was.
func appendLine(buf []byte, e recall.Entry, more bool) ([]byte, error) {
	buf, err := jsonl.AppendEntry(buf, e, jsonl.Options{More: more, Validated: true})
	if err != nil {
		return buf, fmt.Errorf("%w: entry time: %v", recall.ErrInvalidItem, err)
	}
	return buf, nil
}

// lineRoom is the room a line takes besides its payload, enough for the
// longest seq, kind, time and usage the encoder writes.
const lineRoom = 256

// batchRoom returns the bytes the lines of entries take, give or take
// escaping: write sizes its buffer with it, so encoding a batch allocates
// once.
func batchRoom(entries []recall.Entry) int {
	n := 1 // a newline ending a line that lost its own
	for _, e := range entries {
		n += len(e.Data) + lineRoom
	}
	return n
}

// decodeLine decodes one log line (without its newline). more reports the
// batch continuation mark. A line that is not a valid entry returns
// errBadLine: no seq above 0, no kind, a bad time, or an item payload that
// is not JSON yet looks like an object (see decodeSlow).
//
// An item entry whose item is valid JSON but not an object (an array, a
// string, nothing) is an entry like any other: it keeps its seq, and the
// readers leave it out of the view and count it in Meta.Corrupt (see
// recall.Entry.Item), as every store does with such a record.
func decodeLine(line []byte) (e recall.Entry, more bool, err error) {
	line = bytes.TrimRight(line, " \t\r")
	e, more, ok := decodeFast(line)
	if !ok {
		e, more, err = decodeSlow(line)
		if err != nil {
			return recall.Entry{}, false, err
		}
	}
	if e.Seq <= 0 || e.Kind == "" {
		return recall.Entry{}, false, errBadLine
	}
	return e, more, nil
}

// decodeFast reads a line in exactly the shape appendLine writes. ok is
// false when the line has another shape (decodeSlow then decides); when ok
// is true, e.Data aliases line.
func decodeFast(l []byte) (e recall.Entry, more, ok bool) {
	p := lineParser{b: l}
	if !p.lit(`{"seq":`) {
		return e, false, false
	}
	if e.Seq, ok = p.int(); !ok || !p.lit(`,"kind":"`) {
		return e, false, false
	}
	kind, ok := p.plainString()
	if !ok || !p.lit(`,"time":`) {
		return e, false, false
	}
	e.Kind = recall.Kind(kind)
	ts, ok := p.quoted()
	if !ok || e.Time.UnmarshalJSON(ts) != nil {
		return e, false, false
	}
	if p.lit(`,"more":true`) {
		more = true
	}
	if p.lit(`,"usage":{"input_tokens":`) {
		var u recall.Usage
		var ok1, ok2, ok3 bool
		u.InputTokens, ok1 = p.int()
		ok2 = p.lit(`,"output_tokens":`)
		if ok1 && ok2 {
			u.OutputTokens, ok1 = p.int()
			ok2 = p.lit(`,"total_tokens":`)
		}
		if ok1 && ok2 {
			u.TotalTokens, ok3 = p.int()
		}
		if !ok1 || !ok2 || !ok3 || !p.lit(`}`) {
			return e, false, false
		}
		e.Usage = &u
	}
	if len(p.b) == 1 && p.b[0] == '}' {
		return e, more, true
	}
	if !p.lit(`,"data":`) || len(p.b) < 2 || p.b[len(p.b)-1] != '}' {
		return e, false, false
	}
	data := p.b[:len(p.b)-1]
	if !jsonvalid.Valid(data) {
		return e, false, false
	}
	e.Data = data
	return e, more, true
}

// lineParser consumes a line from the front.
type lineParser struct{ b []byte }

func (p *lineParser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// int reads a non-negative decimal integer without leading zeros.
func (p *lineParser) int() (int64, bool) {
	i := 0
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 || (i > 1 && p.b[0] == '0') {
		return 0, false
	}
	n, _ := strconv.ParseInt(string(p.b[:i]), 10, 64)
	p.b = p.b[i:]
	return n, true
}

// plainString reads the rest of a string whose opening quote is consumed,
// if it has no escapes.
func (p *lineParser) plainString() (string, bool) {
	for i, c := range p.b {
		switch {
		case c == '"':
			s := string(p.b[:i])
			p.b = p.b[i+1:]
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// quoted reads a string without escapes, quotes included.
func (p *lineParser) quoted() ([]byte, bool) {
	if len(p.b) == 0 || p.b[0] != '"' {
		return nil, false
	}
	i := bytes.IndexByte(p.b[1:], '"')
	if i < 0 || bytes.IndexByte(p.b[1:i+1], '\\') >= 0 {
		return nil, false
	}
	q := p.b[:i+2]
	p.b = p.b[i+2:]
	return q, true
}

// wireLine is a log line as encoding/json sees it.
type wireLine struct {
	jsonl.Line
	More bool `json:"more"`
}

func decodeSlow(line []byte) (recall.Entry, bool, error) {
	t := bytes.TrimLeft(line, " \t\r")
	if len(t) == 0 || t[0] != '{' {
		return recall.Entry{}, false, errBadLine
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		return recall.Entry{}, false, errBadLine
	}
	e := w.Entry()
	// A payload in "data" is valid JSON (or the line would not decode);
	// one in "data_text" or "data_b64" may be any bytes. An item readers
	// would take for an object by its ends (recall.Entry.Item) must be one,
	// so such an item that is not JSON makes the line undecodable. Any
	// other item that is not JSON is left to Entry.Item, which refuses it.
	if _, looks := e.Item(); looks && !jsonvalid.Valid(e.Data) {
		return recall.Entry{}, false, errBadLine
	}
	return e, w.More, nil
}
