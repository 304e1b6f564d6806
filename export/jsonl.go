package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// LogVersion is the version of the JSONL export format JSONL writes and
// ReadJSONL reads. A file of a later version is refused, not guessed at.
const LogVersion = 1

// header is the first line of each session in a JSONL export.
type header struct {
	Version int         `json:"recall_log"`
	Key     recall.Key  `json:"key"`
	Meta    recall.Meta `json:"meta"`
}

// JSONL writes s as recall's own log, the lossless export: for the session
// and then for each subagent record, a header line
//
//	{"recall_log":1,"key":{…},"meta":{…}}
//
// followed by one line per entry of its log, in the file store's line
// shape:
//
//	{"seq":3,"kind":"item","time":"2025-06-01T10:00:00.123456Z","usage":{…},"data":{…}}
//
// "data" holds the payload's bytes verbatim. A payload that cannot sit on
// one line unchanged (an item with line breaks or blanks around it, or
// bytes that are not JSON, as a damaged entry may hold) is written as a
// JSON string in "data_text", or in "data_b64" when it is not UTF-8, so
// ReadJSONL gives back the very bytes. Nothing of the log is left out:
// removed and compacted items, titles, metadata changes, damaged entries.
func JSONL(w io.Writer, s *Session) error {
	return render(context.Background(), w, FormatJSONL, memSource(s))
}

func writeJSONL(ctx context.Context, o output, src *source) error {
	if err := writeLog(ctx, o, src.main); err != nil {
		return err
	}
	return eachSubagent(ctx, src, false, func(r *record, _ *marks) error {
		return writeLog(ctx, o, r)
	})
}

// writeLog writes r's header line and its log.
func writeLog(ctx context.Context, o output, r *record) error {
	h, err := json.Marshal(header{Version: LogVersion, Key: r.meta.Key, Meta: r.meta})
	if err != nil {
		return fmt.Errorf("export: jsonl header of %s: %w", r.meta.Key, err)
	}
	o.Write(h)
	o.WriteByte('\n')
	var buf []byte
	return r.each(ctx, func(e recall.Entry) error {
		buf, err = appendEntry(buf[:0], e)
		if err != nil {
			return fmt.Errorf("export: jsonl %s seq %d: %w", r.meta.Key, e.Seq, err)
		}
		o.Write(buf)
		return o.err()
	})
}

// appendEntry appends e as one line, newline included.
func appendEntry(buf []byte, e recall.Entry) ([]byte, error) {
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendInt(buf, e.Seq, 10)
	buf = append(buf, `,"kind":`...)
	buf = appendString(buf, string(e.Kind))
	ts, err := e.Time.MarshalJSON()
	if err != nil {
		return buf, fmt.Errorf("time: %w", err)
	}
	buf = append(buf, `,"time":`...)
	buf = append(buf, ts...)
	if u := e.Usage; u != nil {
		ub, _ := json.Marshal(u) // three integers always marshal
		buf = append(buf, `,"usage":`...)
		buf = append(buf, ub...)
	}
	if len(e.Data) > 0 {
		switch {
		case embeddable(e.Data):
			buf = append(buf, `,"data":`...)
			buf = append(buf, e.Data...)
		case utf8.Valid(e.Data):
			buf = append(buf, `,"data_text":`...)
			buf = appendString(buf, string(e.Data))
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
// break and no blank around it (a decoder would drop those).
func embeddable(data []byte) bool {
	if bytes.ContainsAny(data, "\r\n") || isBlank(data[0]) || isBlank(data[len(data)-1]) {
		return false
	}
	return jsonvalid.Valid(data)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// appendString appends s as a JSON string.
func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

// wireLine is any line of a JSONL export as encoding/json sees it: a
// header (recall_log set) or an entry.
type wireLine struct {
	Version  int             `json:"recall_log"`
	Key      *recall.Key     `json:"key"`
	Meta     *recall.Meta    `json:"meta"`
	Seq      int64           `json:"seq"`
	Kind     recall.Kind     `json:"kind"`
	Time     time.Time       `json:"time"`
	Usage    *recall.Usage   `json:"usage"`
	Data     json.RawMessage `json:"data"`
	DataText *string         `json:"data_text"`
	DataB64  []byte          `json:"data_b64"`
}

// ReadJSONL reads a JSONL export (what JSONL writes; several exports one
// after another are one stream) and returns its sessions in file order.
// A subagent record whose header follows its main session's log is
// returned in that session's Subagents; one without it is a session of
// its own.
//
// Every line is checked before anything is returned: a header of a later
// format version, a bad key, an entry before any header, a seq that does
// not grow, an entry without a time, or a line that does not decode (a
// torn last line included) is an error wrapping ErrInvalidLog that names
// the line.
func ReadJSONL(r io.Reader) ([]*Session, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		out  []*Session
		cur  *Session
		main *Session
	)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("export: read line %d: %w", n, err)
		}
		eof := err != nil
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if err := readLine(t, n, &out, &cur, &main); err != nil {
				return nil, err
			}
		}
		if eof {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no session header", ErrInvalidLog)
	}
	return out, nil
}

// readLine decodes line n and adds it to the sessions read so far.
func readLine(line []byte, n int, out *[]*Session, cur, main **Session) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrInvalidLog, n, fmt.Sprintf(format, args...))
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		return bad("%v", err)
	}
	if w.Version != 0 {
		if w.Version > LogVersion {
			return bad("format version %d; this program reads up to %d: upgrade recall", w.Version, LogVersion)
		}
		if w.Version < 0 || w.Key == nil {
			return bad("a header needs a key")
		}
		if err := w.Key.Validate(); err != nil {
			return bad("%v", err)
		}
		s := &Session{}
		if w.Meta != nil {
			s.Meta = *w.Meta
		}
		s.Meta.Key = *w.Key
		*cur = s
		if !w.Key.IsMain() && *main != nil && (*main).Meta.Key == w.Key.Parent() {
			(*main).Subagents = append((*main).Subagents, s)
			return nil
		}
		if w.Key.IsMain() {
			*main = s
		} else {
			*main = nil
		}
		*out = append(*out, s)
		return nil
	}
	s := *cur
	if s == nil {
		return bad("an entry before any session header: not a recall log export")
	}
	if w.Seq <= 0 {
		return bad("no seq")
	}
	if n := len(s.Entries); n > 0 && w.Seq <= s.Entries[n-1].Seq {
		return bad("seq %d after seq %d", w.Seq, s.Entries[n-1].Seq)
	}
	if w.Time.IsZero() {
		return bad("seq %d has no time", w.Seq)
	}
	e := recall.Entry{Seq: w.Seq, Kind: w.Kind, Time: w.Time, Usage: w.Usage, Data: w.Data}
	switch {
	case w.DataText != nil:
		e.Data = json.RawMessage(*w.DataText)
	case w.DataB64 != nil:
		e.Data = json.RawMessage(w.DataB64)
	}
	if len(e.Data) == 0 {
		e.Data = nil
	}
	s.Entries = append(s.Entries, e)
	return nil
}
