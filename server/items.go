package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/recallkit/recall/export"
	"github.com/tidwall/gjson"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
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
	role    string
}

// headOf reads the head of a stored item. Listing shows every item it
// returns, so this runs once per item per page: gjson finds the three
// top-level members without decoding the rest (a tool output of many
// KiB is skipped, not parsed), several times faster than unmarshalling.
// Stored items are JSON objects (the store validates them on write).
func headOf(it recall.Item) itemHead {
	r := gjson.GetManyBytes(it, "id", "type", "role")
	h := itemHead{hasID: r[0].Exists(), hasType: r[1].Exists()}
	h.nullID = h.hasID && r[0].Type == gjson.Null
	if r[0].Type == gjson.String {
		h.id = r[0].Str
	}
	if r[2].Type == gjson.String {
		h.role = r[2].Str
	}
	return h
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
	id := h.ownID()
	it := []byte(l.Item)
	addID := id == ""
	if addID {
		id = derivedID(l.Ref)
		if h.hasID {
			it = withoutMember(it, "id")
		}
	}
	addType := !h.hasType && h.role != ""
	if !addID && !addType {
		return shown{id: id, json: it}
	}
	open := bytes.IndexByte(it, '{')
	rest := it[open+1:]
	b := make([]byte, 0, len(it)+len(id)+32)
	b = append(b, it[:open+1]...)
	if addID {
		b = append(b, `"id":`...)
		b = append(b, quote(id)...)
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
	b = append(b, rest...)
	return shown{id: id, json: b}
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

// quote returns s as a JSON string, as encoding/json writes it. The ids
// the server shows are plain ASCII and are quoted without it: listing
// quotes one or more a page.
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return string(b)
		}
	}
	return `"` + s + `"`
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
		if err := recall.ValidateItem(it, 0); err != nil {
			return nil, nil, itemError(param, err)
		}
		h := headOf(it)
		if h.hasID && !h.nullID { // "id": null is no id
			id := h.ownID()
			switch {
			case id == "":
				return nil, nil, invalidParam(param+".id", "Invalid '%s.id': expected a non-empty string.", param)
			case len(id) > maxItemIDLen:
				return nil, nil, invalidParam(param+".id", "Invalid '%s.id': longer than %d bytes.", param, maxItemIDLen)
			case strings.HasPrefix(id, derivedPrefix):
				return nil, nil, invalidParam(param+".id", "Invalid '%s.id': ids starting with %q are reserved for the ids the server gives items without one.", param, derivedPrefix)
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

// itemError is the 400 (or 413) of an item the store would refuse.
func itemError(param string, err error) *APIError {
	ae := invalidParam(param, "Invalid '%s': %v", param, err)
	if errors.Is(err, recall.ErrTooLarge) {
		ae.Status = http.StatusRequestEntityTooLarge
	}
	return ae
}
