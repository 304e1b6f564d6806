package redisstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
)

// A log element is "<seq>\n<header JSON>\n<data>". The data comes last
// and raw, so an item's bytes come back exactly as they went in (wrapping
// them in JSON would re-encode them); the append script writes the seq.

// header is the part of an entry stored between its seq and its data. The
// pop script (lua/common.lua, newest) reads it without a JSON decoder: the
// kind must come first, and a compaction's item count is N.
type header struct {
	Kind  recall.Kind   `json:"k"`
	Time  int64         `json:"t"` // Unix µs
	N     *int          `json:"n,omitempty"`
	Usage *recall.Usage `json:"u,omitempty"`
}

// encodeBody returns an entry's element without its seq. n is the item
// count of a compaction, or nil.
func encodeBody(e recall.Entry, us int64, n *int) string {
	h, _ := json.Marshal(header{Kind: e.Kind, Time: us, N: n, Usage: e.Usage}) // plain struct: cannot fail
	var b bytes.Buffer
	b.Grow(len(h) + 1 + len(e.Data))
	b.Write(h)
	b.WriteByte('\n')
	b.Write(e.Data)
	return b.String()
}

// decodeElement decodes a log element that must hold seq want.
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
	var h header
	if err := json.Unmarshal([]byte(rest[:j]), &h); err != nil {
		return recall.Entry{}, fmt.Errorf("%w: log element %d header: %v", recall.ErrCorrupt, want, err)
	}
	e := recall.Entry{Seq: seq, Kind: h.Kind, Time: fromMicros(h.Time), Usage: h.Usage}
	if data := rest[j+1:]; data != "" {
		e.Data = json.RawMessage(data)
	}
	return e, nil
}

// effect is what an entry does to the session's metadata, decoded here so
// that the append script applies recall.Meta.Apply without parsing JSON
// (see lua/append.lua for the ops). Payloads that do not decode only
// advance LastSeq and Updated, as in Meta.Apply.
// A compaction's item count is returned as n too, for its header.
func effect(e recall.Entry) (op, a1, a2 string, n *int) {
	switch e.Kind {
	case recall.KindItem:
		return "item", "", "", nil
	case recall.KindPop:
		var ref recall.ItemRef
		if json.Unmarshal(e.Data, &ref) == nil {
			return "pop", "", "", nil
		}
	case recall.KindClear:
		return "clear", "", "", nil
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			count := len(c.Items)
			return "count", strconv.Itoa(count), "", &count
		}
	case recall.KindTitle:
		var t recall.TitleChange
		if json.Unmarshal(e.Data, &t) == nil {
			return "title", t.Title, string(t.Source), nil
		}
	case recall.KindMeta:
		var c recall.MetaChange
		if json.Unmarshal(e.Data, &c) == nil {
			flags := flag(c.Archived) + flag(c.Pinned)
			labels := ""
			if c.Labels != nil || c.SetLabels {
				b, _ := json.Marshal(c.Labels) // nil stays null, [] stays []
				labels = "=" + string(b)
			}
			return "meta", flags, labels, nil
		}
	case recall.KindFork:
		var f recall.ForkOrigin
		if json.Unmarshal(e.Data, &f) == nil {
			b, _ := json.Marshal(f)
			return "fork", string(b), "", nil
		}
	}
	return "none", "", "", nil
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

// decodeMeta builds a session's metadata from its hash fields.
func decodeMeta(key recall.Key, h map[string]string) (recall.Meta, error) {
	m := recall.Meta{Key: key, Title: h["title"], TitleSource: recall.TitleSource(h["tsrc"])}
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
	if v, ok := h["labels"]; ok && json.Unmarshal([]byte(v), &m.Labels) != nil {
		errs = append(errs, "labels")
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
