package redisstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// A log element is "<seq>\n<header JSON>\n<data>". The data comes last
// and raw, so an item's bytes come back exactly as they went in (wrapping
// them in JSON would re-encode them); the append script writes the seq.

// header is the part of an entry stored between its seq and its data. The
// pop script (lua/common.lua, entry and newest) decodes it too, and finds
// a compaction's item count in N without decoding the payload.
type header struct {
	Kind  recall.Kind   `json:"k"`
	Time  int64         `json:"t"` // Unix µs
	N     *int          `json:"n,omitempty"`
	Usage *recall.Usage `json:"u,omitempty"`
}

// encodeBody returns an entry's element without its seq. n is the item
// count of a compaction, or nil. The element is built in one buffer that
// becomes the string (an item is copied once), and the common header, a
// kind and a time alone, is written directly, with the very bytes
// json.Marshal writes (TestEncodeBodyHeader): a fork or a batch of
// thousands of items spends no time marshalling headers.
func encodeBody(e recall.Entry, us int64, n *int) string {
	var b strings.Builder
	if n == nil && e.Usage == nil && plainKind(e.Kind) {
		var t [20]byte
		ts := strconv.AppendInt(t[:0], us, 10)
		b.Grow(len(`{"k":"","t":}`) + len(e.Kind) + len(ts) + 1 + len(e.Data))
		b.WriteString(`{"k":"`)
		b.WriteString(string(e.Kind))
		b.WriteString(`","t":`)
		b.Write(ts)
		b.WriteByte('}')
	} else {
		h, _ := json.Marshal(header{Kind: e.Kind, Time: us, N: n, Usage: e.Usage}) // plain struct: cannot fail
		b.Grow(len(h) + 1 + len(e.Data))
		b.Write(h)
	}
	b.WriteByte('\n')
	b.Write(e.Data)
	return b.String()
}

// plainKind reports whether k is written in JSON as it is, between
// quotes: lower-case ASCII letters, as every recall.Kind is.
func plainKind(k recall.Kind) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 'a' || k[i] > 'z' {
			return false
		}
	}
	return true
}

// plainHeader reads the header encodeBody writes directly, a kind and a
// time alone ({"k":"item","t":1700000000000000}), without a JSON decoder:
// reading a log of 10,000 items, json.Unmarshal of their headers cost a
// fork or a Load about a twentieth of its time. It reports false for any
// other text, which json.Unmarshal then reads (or refuses); for the text
// it accepts, the header is json.Unmarshal's (TestPlainHeader).
func plainHeader(s string) (header, bool) {
	const pre, mid = `{"k":"`, `","t":`
	if !strings.HasPrefix(s, pre) || !strings.HasSuffix(s, "}") {
		return header{}, false
	}
	kind, t, ok := strings.Cut(s[len(pre):len(s)-1], mid)
	if !ok || !plainKind(recall.Kind(kind)) {
		return header{}, false
	}
	// A JSON integer: -?(0|[1-9][0-9]*), within int64.
	digits := strings.TrimPrefix(t, "-")
	if digits == "" || digits[0] == '0' && len(digits) > 1 {
		return header{}, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return header{}, false
		}
	}
	us, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return header{}, false
	}
	return header{Kind: recall.Kind(kind), Time: us}, true
}

// decodeElement decodes a log element that must hold seq want. An element
// that is not a readable entry (written by another program, or damaged)
// is an error wrapping recall.ErrCorrupt; readers skip it and Load counts
// it in Meta.Corrupt. lua/common.lua (entry, and isitem for an item)
// applies the same rules.
func decodeElement(el string, want int64) (recall.Entry, error) {
	i := strings.IndexByte(el, '\n')
	if i < 0 {
		return recall.Entry{}, fmt.Errorf("%w: log element %d has no header", recall.ErrCorrupt, want)
	}
	seq, err := strconv.ParseInt(el[:i], 10, 64)
	if err != nil || seq != want {
		return recall.Entry{}, fmt.Errorf("%w: log element %d holds seq %q", recall.ErrCorrupt, want, el[:i])
	}
	rest := el[i+1:]
	j := strings.IndexByte(rest, '\n')
	if j < 0 {
		return recall.Entry{}, fmt.Errorf("%w: log element %d has no data separator", recall.ErrCorrupt, want)
	}
	h, ok := plainHeader(rest[:j])
	if !ok {
		if err := json.Unmarshal([]byte(rest[:j]), &h); err != nil || h.Kind == "" {
			return recall.Entry{}, fmt.Errorf("%w: log element %d: unreadable header %.40q", recall.ErrCorrupt, want, rest[:j])
		}
	}
	e := recall.Entry{Seq: seq, Kind: h.Kind, Time: fromMicros(h.Time), Usage: h.Usage}
	if data := rest[j+1:]; data != "" {
		e.Data = json.RawMessage(data)
	}
	// An item that readers would take for an object by its first and last
	// bytes (recall.Entry.Item) must be one: "{x}" is no readable entry. An
	// item that is JSON but no object stays an entry, which Entry.Item
	// refuses. lua/common.lua (isitem) judges items alike.
	if _, looks := e.Item(); looks && !jsonvalid.Valid(e.Data) {
		return recall.Entry{}, fmt.Errorf("%w: log element %d: an item that is not JSON", recall.ErrCorrupt, want)
	}
	return e, nil
}

// effect is what an entry does to the session's metadata, decoded here so
// that the append script applies recall.Meta.Apply without parsing JSON
// (see lua/append.lua for the ops and their arguments). Payloads that do
// not decode only advance LastSeq, as in Meta.Apply. Whether the entry
// moves Updated is not an effect of its payload: the script is told
// e.Kind.IsActivity() beside it. A compaction's item count is returned as
// n too, for its header.
func effect(e recall.Entry) (op string, a [3]string, n *int) {
	switch e.Kind {
	case recall.KindItem:
		return "item", a, nil
	case recall.KindPop, recall.KindRemove:
		var ref recall.ItemRef
		if json.Unmarshal(e.Data, &ref) == nil {
			return "pop", a, nil
		}
	case recall.KindClear:
		return "clear", a, nil
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			count := len(c.Items)
			a[0] = strconv.Itoa(count)
			if !c.Created.IsZero() {
				if us, err := micros(c.Created); err == nil {
					a[1] = strconv.FormatInt(us, 10)
				}
			}
			return "count", a, &count
		}
	case recall.KindTitle:
		var t recall.TitleChange
		if json.Unmarshal(e.Data, &t) == nil {
			return "title", [3]string{t.Title, string(t.Source)}, nil
		}
	case recall.KindMeta:
		var c recall.MetaChange
		if json.Unmarshal(e.Data, &c) == nil {
			a[0] = flag(c.Archived) + flag(c.Pinned) + flag(c.Trashed)
			if c.Labels != nil || c.SetLabels {
				b, _ := json.Marshal(c.Labels) // nil stays null, [] stays []
				a[1] = "=" + string(b)
			}
			a[2] = metadataChange(c)
			return "meta", a, nil
		}
	case recall.KindFork:
		var f recall.ForkOrigin
		if json.Unmarshal(e.Data, &f) == nil {
			b, _ := json.Marshal(f)
			return "fork", [3]string{string(b)}, nil
		}
	}
	return "none", a, nil
}

// metadataChange encodes the metadata part of a meta entry for the append
// script, or "" when it changes no metadata: 'c' (clear the map first) or
// '-', then per pair its key as "<length>:<bytes>" followed by
// "=<length>:<bytes>" (set) or "~" (delete). Lengths are in bytes, so the
// script slices the values out without looking into them.
func metadataChange(c recall.MetaChange) string {
	if !c.ClearMetadata && len(c.Metadata) == 0 {
		return ""
	}
	var b strings.Builder
	if c.ClearMetadata {
		b.WriteByte('c')
	} else {
		b.WriteByte('-')
	}
	for k, v := range c.Metadata {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		if v == nil {
			b.WriteByte('~')
			continue
		}
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(len(*v)))
		b.WriteByte(':')
		b.WriteString(*v)
	}
	return b.String()
}

func flag(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "1"
	}
	return "0"
}

// metadataField starts the name of each hash field that holds a pair of
// the session's metadata map (Meta.Metadata): "m:<key>" holds its value.
const metadataField = "m:"

// decodeMeta builds a session's metadata from its hash fields. Corrupt is
// left 0: the hash does not count damaged log elements (Load does).
func decodeMeta(key recall.Key, h map[string]string) (recall.Meta, error) {
	m := recall.Meta{Key: key, Title: h["title"], TitleSource: recall.TitleSource(h["tsrc"]), FirstPrompt: h["fp"]}
	m.Archived = h["arch"] == "1"
	m.Pinned = h["pin"] == "1"
	var errs []string
	num := func(field string) int64 {
		v, ok := h[field]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, field)
		}
		return n
	}
	m.Created = fromMicros(num("created"))
	m.Updated = fromMicros(num("updated"))
	m.ItemCount = int(num("items"))
	m.LastSeq = num("last")
	m.Usage = recall.Usage{InputTokens: num("uin"), OutputTokens: num("uout"), TotalTokens: num("utot")}
	if _, ok := h["trash"]; ok {
		m.Trashed = fromMicros(num("trash"))
	}
	if v, ok := h["labels"]; ok && json.Unmarshal([]byte(v), &m.Labels) != nil {
		errs = append(errs, "labels")
	}
	for f, v := range h {
		if k, ok := strings.CutPrefix(f, metadataField); ok {
			if m.Metadata == nil {
				m.Metadata = map[string]string{}
			}
			m.Metadata[k] = v
		}
	}
	if v, ok := h["fork"]; ok {
		m.ForkedFrom = new(recall.ForkOrigin)
		if json.Unmarshal([]byte(v), m.ForkedFrom) != nil {
			errs = append(errs, "fork")
		}
	}
	if len(errs) > 0 {
		return recall.Meta{}, fmt.Errorf("%w: metadata of %s: bad %v", recall.ErrCorrupt, key, errs)
	}
	return m, nil
}

// pairs turns a flat HGETALL reply from a script into a map.
func pairs(v any) (map[string]string, error) {
	flat, ok := v.([]any)
	if !ok || len(flat)%2 != 0 {
		return nil, fmt.Errorf("%w: unexpected hash reply %T", recall.ErrCorrupt, v)
	}
	h := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, ok1 := flat[i].(string)
		v, ok2 := flat[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: unexpected hash field %T", recall.ErrCorrupt, flat[i])
		}
		h[k] = v
	}
	return h, nil
}
