// Package storewire is the wire shape of the store routes of recall serve
// (/api/v1/store/…), which package remotestore speaks: the JSON of their
// requests and answers, and the error codes that carry recall's sentinel
// errors across HTTP, so that errors.Is works on the client as on a local
// store. The server and the client share it, so the two cannot drift.
//
// Payloads travel as JSON strings, never as embedded JSON: encoding/json
// compacts and HTML-escapes a raw value it writes, which would change an
// item's bytes, while a string decodes to the very bytes it encoded. A
// payload that is not UTF-8 travels as base64.
package storewire

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
)

// Prefix starts every store route.
const Prefix = "/api/v1/store/"

// Entry is a recall.Entry on the wire.
type Entry struct {
	Seq   int64         `json:"seq,omitempty"`
	Kind  recall.Kind   `json:"kind"`
	Time  time.Time     `json:"time,omitzero"`
	Usage *recall.Usage `json:"usage,omitempty"`
	Text  *string       `json:"text,omitempty"`
	B64   []byte        `json:"b64,omitempty"`
}

// payload puts data in e's Text, or its B64 when it is not UTF-8.
func payload(data []byte) (*string, []byte) {
	switch {
	case data == nil:
		return nil, nil
	case utf8.Valid(data):
		s := string(data)
		return &s, nil
	default:
		return nil, append([]byte(nil), data...)
	}
}

// bytesOf is the payload payload encoded.
func bytesOf(text *string, b64 []byte) []byte {
	switch {
	case text != nil:
		return []byte(*text)
	case b64 != nil:
		return b64
	}
	return nil
}

// FromEntries returns es on the wire.
func FromEntries(es []recall.Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{Seq: e.Seq, Kind: e.Kind, Time: e.Time, Usage: e.Usage}
		out[i].Text, out[i].B64 = payload(e.Data)
	}
	return out
}

// Entries returns the entries ws carry.
func Entries(ws []Entry) []recall.Entry {
	out := make([]recall.Entry, len(ws))
	for i, w := range ws {
		out[i] = recall.Entry{Seq: w.Seq, Kind: w.Kind, Time: w.Time, Usage: w.Usage, Data: bytesOf(w.Text, w.B64)}
	}
	return out
}

// Item is a recall.LiveItem on the wire.
type Item struct {
	Ref  recall.ItemRef `json:"ref"`
	Text *string        `json:"text,omitempty"`
	B64  []byte         `json:"b64,omitempty"`
}

// FromItems returns live on the wire.
func FromItems(live []recall.LiveItem) []Item {
	out := make([]Item, len(live))
	for i, l := range live {
		out[i].Ref = l.Ref
		out[i].Text, out[i].B64 = payload(l.Item)
	}
	return out
}

// Items returns the items ws carry.
func Items(ws []Item) []recall.LiveItem {
	out := make([]recall.LiveItem, len(ws))
	for i, w := range ws {
		out[i] = recall.LiveItem{Ref: w.Ref, Item: bytesOf(w.Text, w.B64)}
	}
	return out
}

// FromItem returns one item's bytes on the wire (nil for none).
func FromItem(it recall.Item) *Item {
	if it == nil {
		return nil
	}
	w := &Item{}
	w.Text, w.B64 = payload(it)
	return w
}

// ItemOf is the item w carries, nil for none.
func ItemOf(w *Item) recall.Item {
	if w == nil {
		return nil
	}
	return bytesOf(w.Text, w.B64)
}

// Append is the body of POST append.
type Append struct {
	Key     recall.Key   `json:"key"`
	Guard   recall.Guard `json:"guard"`
	Entries []Entry      `json:"entries"`
}

// Import is the body of POST import.
type Import struct {
	Key     recall.Key `json:"key"`
	Entries []Entry    `json:"entries"`
}

// KeyBody is the body of POST pop, remove and purge.
type KeyBody struct {
	Key recall.Key `json:"key"`
}

// Fork is the body of POST fork.
type Fork struct {
	Key    recall.Key `json:"key"`
	AtSeq  int64      `json:"at_seq"`
	NewKey recall.Key `json:"new_key"`
}

// LastSeq answers append and import.
type LastSeq struct {
	LastSeq int64 `json:"last_seq"`
}

// Popped answers pop: the item, or null when there was none.
type Popped struct {
	Item *Item `json:"item"`
}

// ItemsPage answers items (More unset) and page.
type ItemsPage struct {
	Items   []Item `json:"items"`
	More    bool   `json:"more,omitempty"`
	LastSeq int64  `json:"last_seq"`
}

// EntriesPage answers entries: up to the limit asked for, and whether the
// log holds more after them.
type EntriesPage struct {
	Entries []Entry `json:"entries"`
	More    bool    `json:"more,omitempty"`
}

// MaxEntries is the most entries one answer of entries holds.
const MaxEntries = 1000

// The error codes of the store routes, in the "code" of the error body,
// each the sentinel error of package recall it carries.
var codes = []struct {
	code string
	err  error
}{
	{"not_found", recall.ErrNotFound},
	{"conflict", recall.ErrConflict},
	{"invalid_key", recall.ErrInvalidKey},
	{"invalid_item", recall.ErrInvalidItem},
	{"invalid_metadata", recall.ErrInvalidMetadata},
	{"too_large", recall.ErrTooLarge},
	{"invalid_query", recall.ErrInvalidQuery},
	{"unsupported", recall.ErrUnsupported},
	{"corrupt", recall.ErrCorrupt},
	{"nothing_to_redo", recall.ErrNothingToRedo},
	{"store_unavailable", recall.ErrUnavailable},
}

// Code returns the code of the sentinel err wraps, "" for none.
func Code(err error) string {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// Sentinel returns the sentinel error of code, nil for an unknown one.
func Sentinel(code string) error {
	for _, c := range codes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// ErrorBody is the error answer of every route (OpenAI's shape).
type ErrorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}
