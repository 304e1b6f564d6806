package secrets

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/recallkit/recall"
)

// Item returns item with its secrets replaced, and what was replaced. The
// result is valid JSON of the same shape (see the package documentation);
// an item with nothing to redact, or that is not valid JSON (the store
// refuses it), is returned as it is.
func (r *Redactor) Item(item recall.Item) (recall.Item, Report) {
	out, rep := r.JSON(item)
	return recall.Item(out), rep
}

// JSON is Item for any JSON document: it redacts its string values and
// keeps the rest. raw is returned as it is when it is not valid JSON or
// has nothing to redact; otherwise a new slice is returned and raw is left
// alone.
func (r *Redactor) JSON(raw []byte) ([]byte, Report) {
	rep := Report{}
	if !json.Valid(raw) {
		return raw, rep
	}
	return r.walk(raw, nil, rep), rep
}

// walk redacts the string values of raw, valid JSON, with the secrets of
// outer found in an enclosing text and those each value holds. It returns
// raw itself when nothing changed.
func (r *Redactor) walk(raw []byte, outer found, rep Report) []byte {
	var (
		out   []byte // nil until a value changes
		done  int    // raw[:done] is in out
		key   []byte // the key of the value being read
		isKey bool
	)
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end := stringEnd(raw, i)
		isKey = nextByte(raw, end+1) == ':'
		if isKey {
			key = raw[i+1 : end]
			i = end
			continue
		}
		if string(key) == "encrypted_content" {
			i = end
			continue
		}
		s, ok := decodeString(raw[i : end+1])
		if ok {
			if s2 := r.text(s, outer, rep); s2 != s {
				if out == nil {
					out = make([]byte, 0, len(raw)+64)
				}
				out = append(out, raw[done:i]...)
				out = appendString(out, s2)
				done = end + 1
			}
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[done:]...)
}

// text redacts one string value. A value that holds JSON is walked, so
// that it stays valid JSON; its whole text is scanned first, so that a
// rule that needs a key before the secret sees it.
func (r *Redactor) text(s string, outer found, rep Report) string {
	if strings.HasPrefix(s, "data:") {
		return s // an inline image or file: base64 of binary, not text
	}
	f := r.scan(s, maps.Clone(outer))
	if t := strings.TrimLeft(s, " \t\r\n"); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(s)) {
		return string(r.walk([]byte(s), f, rep))
	}
	return replace(s, f, rep)
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at raw[i], which is valid JSON.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(raw) - 1
}

// nextByte returns the first byte at or after i that is not JSON white
// space, or 0.
func nextByte(raw []byte, i int) byte {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return raw[i]
		}
	}
	return 0
}

// decodeString decodes a JSON string, quotes included.
func decodeString(q []byte) (string, bool) {
	inner := q[1 : len(q)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", false
	}
	return s, true
}

// appendString appends s encoded as a JSON string, without the HTML
// escapes json.Marshal adds, so that only the redacted value changes.
func appendString(out []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
