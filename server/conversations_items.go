package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// Item ids.
//
// Every item the Conversations API shows has an "id", unique in its
// conversation and stable across reads, deletes and restarts:
//
//   - An item that arrived with a string "id" keeps it. The item is stored
//     verbatim, so the id is in the stored bytes. ("id": null counts as
//     no id; any other id that is not a non-empty string is refused.)
//   - An item without one (the common case: recall.Message, an SDK's easy
//     input message) gets a derived id computed from where it sits in the
//     log, its recall.ItemRef: "recall-<seq>" for an item entry, and
//     "recall-<seq>.<index>" for the index-th item of a compaction entry
//     (a summary, or a copy of an item kept through compaction). The
//     seq of an entry is never reused, so derived ids never repeat, and
//     they are inserted only into the JSON sent back: the stored bytes are
//     never rewritten.
//
// The prefix "recall-" is reserved: an item sent with an id that starts
// with it is refused (400), so a client id can never equal a derived one.
// OpenAI's own ids ("msg_…", "fc_…", "rs_…") use underscores and never
// collide with it. An item sent with an id already in the conversation's
// view (or twice in one request) is refused with a 400 as well; an id
// whose item was deleted may be used again.
//
// Known limit: an id-less item kept through a compaction is a new item of
// the compaction entry, so its derived id changes at the compaction.

// derivedPrefix starts every derived item id.
const derivedPrefix = "recall-"

// derivedID returns the id of an item without an id of its own: the
// export package's, so `recall export --format json` names items alike.
func derivedID(ref recall.ItemRef) string { return export.ItemID(ref) }

// parseDerivedID returns the ref a derived id names, and whether id is
// one (exactly as derivedID writes it).
func parseDerivedID(id string) (recall.ItemRef, bool) {
	rest, ok := strings.CutPrefix(id, derivedPrefix)
	if !ok {
		return recall.ItemRef{}, false
	}
	seqText, indexText, hasIndex := strings.Cut(rest, ".")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil || seq <= 0 {
		return recall.ItemRef{}, false
	}
	ref := recall.ItemRef{Seq: seq}
	if hasIndex {
		i, err := strconv.Atoi(indexText)
		if err != nil || i <= 0 {
			return recall.ItemRef{}, false
		}
		ref.Index = i
	}
	if derivedID(ref) != id { // "recall-007", "recall-+7": not ours
		return recall.ItemRef{}, false
	}
	return ref, true
}

// itemHead is what the server reads of an item: its id, and what tells
// an easy input message (a role, no type).
type itemHead struct {
	id      string // the "id" member when it is a string
	hasID   bool   // whether there is an "id" member at all
	nullID  bool   // whether it is "id": null
	hasType bool
	hasRole bool // whether "role" is a non-empty string
}

// headOf reads the head of a stored item. Listing shows every item it
// returns, so this runs once per item per page: scanHead reads the
// top-level members in one pass, decoding no value and copying none but
// a string id (a tool output of many KiB is skipped, not parsed); an
// item it cannot read that way (a key or the id written with escapes)
// goes to gjson, which unescapes. Either way the first member of a name
// counts. Stored items are JSON objects (the store validates them on
// write).
func headOf(it recall.Item) itemHead {
	if h, ok := scanHead(it); ok {
		return h
	}
	return gjsonHead(it)
}

// gjsonHead reads the head of it with gjson, which unescapes keys and
// strings.
func gjsonHead(it []byte) itemHead {
	r := gjson.GetManyBytes(it, "id", "type", "role")
	h := itemHead{hasID: r[0].Exists(), hasType: r[1].Exists()}
	h.nullID = h.hasID && r[0].Type == gjson.Null
	if r[0].Type == gjson.String {
		h.id = r[0].Str
	}
	h.hasRole = r[2].Type == gjson.String && r[2].Str != ""
	return h
}

// scanHead reads the head of it, a JSON object, in one pass over its
// top-level members. ok is false when it cannot: a key or the "id"
// string holds an escape, or it is not an object.
func scanHead(it []byte) (h itemHead, ok bool) {
	i := skipSpace(it, 0)
	if i >= len(it) || it[i] != '{' {
		return h, false
	}
	i++
	seenRole := false
	for {
		i = skipSpace(it, i)
		if i >= len(it) {
			return h, false
		}
		if it[i] == '}' {
			return h, true
		}
		if it[i] != '"' {
			return h, false
		}
		kEnd, esc := stringEnd(it, i)
		if kEnd < 0 || esc {
			return h, false
		}
		key := it[i+1 : kEnd-1]
		i = skipSpace(it, kEnd)
		if i >= len(it) || it[i] != ':' {
			return h, false
		}
		i = skipSpace(it, i+1)
		vEnd := valueEnd(it, i)
		if vEnd < 0 {
			return h, false
		}
		v := it[i:vEnd]
		switch string(key) {
		case "id":
			if !h.hasID {
				h.hasID = true
				switch v[0] {
				case '"':
					if bytes.IndexByte(v, '\\') >= 0 {
						return h, false
					}
					h.id = string(v[1 : len(v)-1])
				case 'n':
					h.nullID = true
				}
			}
		case "type":
			h.hasType = true
		case "role":
			if !seenRole {
				seenRole = true
				h.hasRole = v[0] == '"' && len(v) > 2
			}
		}
		i = skipSpace(it, vEnd)
		if i >= len(it) {
			return h, false
		}
		switch it[i] {
		case ',':
			i++
		case '}':
			return h, true
		default:
			return h, false
		}
	}
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at
// b[i] (a quote), and whether it holds an escape; -1 when it is not
// closed.
func stringEnd(b []byte, i int) (end int, esc bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

// valueEnd returns the index just past the JSON value that starts at
// b[i], or -1 when there is none.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// ownID returns the item's own "id" when it is a non-empty string.
func (h itemHead) ownID() string { return h.id }

// itemID returns the id the API shows for l.
func itemID(l recall.LiveItem) string {
	if id := headOf(l.Item).ownID(); id != "" {
		return id
	}
	return derivedID(l.Ref)
}

// appendItemID appends the id the API shows for an item of head h at
// ref, as a JSON string.
func appendItemID(b []byte, h itemHead, ref recall.ItemRef) []byte {
	if id := h.ownID(); id != "" {
		return appendQuoted(b, id)
	}
	// A derived id is plain ASCII: no escapes. It is derivedID's text.
	b = append(b, '"')
	b = append(b, derivedPrefix...)
	b = strconv.AppendInt(b, ref.Seq, 10)
	if ref.Index > 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(ref.Index), 10)
	}
	return append(b, '"')
}

// shown is one item as the API sends it: its id and its JSON.
type shown struct {
	id   string
	json []byte
}

// show returns l as the API sends it: the stored bytes, with "id" inserted
// when the item has none of its own, and "type":"message" when it is an
// easy input message (a role and no type), as OpenAI returns it. An "id"
// that is not a non-empty string (null, a number: only items written by
// other means than this API hold one) is replaced by the derived id.
// Nothing else of the bytes changes.
func show(l recall.LiveItem) shown {
	h := headOf(l.Item)
	if id := h.ownID(); id != "" && (h.hasType || !h.hasRole) {
		return shown{id: id, json: l.Item} // as stored
	}
	id := h.ownID()
	if id == "" {
		id = derivedID(l.Ref)
	}
	return shown{id: id, json: appendShown(make([]byte, 0, len(l.Item)+len(id)+32), l, h)}
}

// appendShown appends l, whose head is h, to b as show returns it.
func appendShown(b []byte, l recall.LiveItem, h itemHead) []byte {
	it := []byte(l.Item)
	addID := h.ownID() == ""
	if addID && h.hasID {
		it = withoutMember(it, "id")
	}
	addType := !h.hasType && h.hasRole
	if !addID && !addType {
		return append(b, it...)
	}
	open := bytes.IndexByte(it, '{')
	rest := it[open+1:]
	b = append(b, it[:open+1]...)
	if addID {
		b = append(b, `"id":`...)
		b = appendItemID(b, h, l.Ref)
	}
	if addType {
		if addID {
			b = append(b, ',')
		}
		b = append(b, `"type":"message"`...)
	}
	if t := bytes.TrimLeft(rest, " \t\r\n"); len(t) > 0 && t[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// withoutMember returns obj, a JSON object, without its first top-level
// member called name, or obj itself when it has none.
func withoutMember(obj []byte, name string) []byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return obj
	}
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset() // after '{' or the previous value: before its comma
		key, err := dec.Token()
		if err != nil {
			return obj
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return obj
		}
		if key != name {
			continue
		}
		end := dec.InputOffset()
		if i > 0 {
			return slices.Concat(obj[:start], obj[end:]) // drops the comma before it
		}
		rest := bytes.TrimLeft(obj[end:], " \t\r\n")
		return slices.Concat(obj[:start], bytes.TrimPrefix(rest, []byte(","))) // and the one after it
	}
	return obj
}

// appendQuoted appends s as a JSON string, as encoding/json writes it.
// The ids the server shows are plain ASCII and are quoted without it:
// listing quotes one or more a page.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// maxItemsPerCall is how many items one create or add call may carry,
// as OpenAI allows.
const maxItemsPerCall = 20

// maxItemIDLen bounds the id a client gives an item.
const maxItemIDLen = 256

// checkNewItems validates the items of a create or add call before
// anything is written: each must be a JSON object within the default item
// limit, and an "id" it carries must be a non-empty string, not a derived
// id, and unique in the call. It returns the items and their own ids (""
// for none).
func checkNewItems(raw []json.RawMessage) ([]recall.Item, []string, error) {
	if len(raw) > maxItemsPerCall {
		return nil, nil, invalidParam("items", "Invalid 'items': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxItemsPerCall, len(raw))
	}
	items := make([]recall.Item, len(raw))
	ids := make([]string, len(raw))
	seen := map[string]int{}
	for i, r := range raw {
		param := fmt.Sprintf("items[%d]", i)
		it := recall.Item(r)
		if err := it.Validate(0); err != nil {
			return nil, nil, itemError(param, err)
		}
		if k, dup := duplicateKey(it); dup {
			return nil, nil, duplicateKeyError(param, k)
		}
		h := headOf(it)
		if h.hasID && !h.nullID { // "id": null is no id
			id := h.ownID()
			if err := checkOwnID(param+".id", id); err != nil {
				return nil, nil, err
			}
			if j, dup := seen[id]; dup {
				return nil, nil, invalidParam(param+".id", "Duplicate item id %q: items[%d] has it too.", id, j)
			}
			seen[id] = i
			ids[i] = id
		}
		items[i] = it
	}
	return items, ids, nil
}

// checkOwnID refuses the id an item is sent with, the parameter param,
// when it is empty, too long or a derived one.
func checkOwnID(param, id string) error {
	switch {
	case id == "":
		return invalidParam(param, "Invalid '%s': expected a non-empty string.", param)
	case len(id) > maxItemIDLen:
		return invalidParam(param, "Invalid '%s': longer than %d bytes.", param, maxItemIDLen)
	case strings.HasPrefix(id, derivedPrefix):
		return invalidParam(param, "Invalid '%s': ids starting with %q are reserved for the ids the server gives items without one.", param, derivedPrefix)
	}
	return nil
}

// duplicateKey returns a member name that obj, a JSON object, has twice
// at its top level, compared as readers see names (escapes decoded). The
// server reads the first of two "id" members, encoding/json and
// JSON.parse the last: an item with two is refused, so that every
// reader sees the one id that was checked.
func duplicateKey(obj []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, _ := t.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
	}
	return "", false
}

// duplicateKeyError is the 400 of an item with a member named twice.
func duplicateKeyError(param, key string) *APIError {
	return invalidParam(param, "Invalid '%s': the member %q appears twice; an item names each member once.", param, shorten(key))
}

// itemError is the 400 (or 413) of an item the store would refuse.
func itemError(param string, err error) *APIError {
	if errors.Is(err, recall.ErrTooLarge) {
		ae := invalidParam(param, "%s", withDetail("Invalid '"+param+"': the item is too large", err, recall.ErrTooLarge))
		ae.Status = http.StatusRequestEntityTooLarge
		return ae
	}
	return invalidParam(param, "%s", withDetail("Invalid '"+param+"'", err, recall.ErrInvalidItem))
}
