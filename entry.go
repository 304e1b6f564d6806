package recall

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall/internal/payload"
)

// Kind is the type of an entry in a session's log. Readers skip kinds they
// do not know, so new kinds can be added without breaking old readers.
type Kind string

// The entry kinds. The Data of each is described on the payload type named.
const (
	KindItem       Kind = "item"       // Data is the Item itself
	KindTitle      Kind = "title"      // Data is a TitleChange
	KindMeta       Kind = "meta"       // Data is a MetaChange (archive, pin, labels, metadata)
	KindPop        Kind = "pop"        // Data is an ItemRef: the newest item, removed
	KindRemove     Kind = "remove"     // Data is an ItemRef: any one item, removed
	KindCreate     Kind = "create"     // Data is empty: the session was created, possibly with no items
	KindClear      Kind = "clear"      // Data is empty: every earlier item is gone
	KindCompaction Kind = "compaction" // Data is a Compaction
	KindFork       Kind = "fork"       // Data is a ForkOrigin; first entry of a forked session
	KindRewind     Kind = "rewind"     // Data is {"to": ItemRef, "items": N}: closes a rewind's N removals (see StoreSession.Rewind)
	KindRedo       Kind = "redo"       // Data is {"rewind": SEQ, "items": N}: closes a redo's N items (see StoreSession.Redo)
	KindRedaction  Kind = "redaction"  // Data is a storekit.Redaction: earlier entries were rewritten without secrets
)

// Entry is one record in a session's append-only log.
//
// Seq is assigned by the store: it starts at 1, grows by exactly 1 per
// entry of a session, is never reused and never derived from a clock. The
// item list a caller sees is derived from the log in Seq order (see
// [Replay]).
type Entry struct {
	Seq   int64           `json:"seq"`
	Kind  Kind            `json:"kind"`
	Time  time.Time       `json:"time"`
	Data  json.RawMessage `json:"data,omitempty"`
	Usage *Usage          `json:"usage,omitempty"`
}

// Clone returns a deep copy of e.
func (e Entry) Clone() Entry {
	if e.Data != nil {
		e.Data = append(json.RawMessage(nil), e.Data...)
	}
	if e.Usage != nil {
		u := *e.Usage
		e.Usage = &u
	}
	return e
}

// Usage is the token usage a model reported for the turn that produced an
// item. Stores sum it per session into Meta.Usage.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.TotalTokens += u2.TotalTokens
}

// IsZero reports whether u counts nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// TitleSource says who set a title.
type TitleSource string

// Title sources. An auto title never replaces a user title.
const (
	TitleNone TitleSource = ""
	TitleAuto TitleSource = "auto"
	TitleUser TitleSource = "user"
)

// TitleChange is the payload of a KindTitle entry.
type TitleChange struct {
	Title  string      `json:"title"`
	Source TitleSource `json:"source"`
}

// MetaChange is the payload of a KindMeta entry. Nil fields are unchanged.
type MetaChange struct {
	Archived *bool `json:"archived,omitempty"`
	Pinned   *bool `json:"pinned,omitempty"`
	// Trashed moves the session to the trash (true) or restores it
	// from there (false); see StoreSession.Trash. Meta.Trashed is then
	// the entry's time, or zero.
	Trashed *bool    `json:"trashed,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	// SetLabels makes an empty Labels clear the labels.
	SetLabels bool `json:"set_labels,omitempty"`
	// ClearMetadata removes every metadata pair before Metadata is merged,
	// so ClearMetadata with Metadata replaces the map.
	ClearMetadata bool `json:"clear_metadata,omitempty"`
	// Metadata is merged into the session's metadata: a key with a value
	// sets it, a key with a nil value (JSON null) deletes it.
	Metadata map[string]*string `json:"metadata,omitempty"`
}

// IsActivity reports whether an entry of kind k is conversation activity,
// which moves Meta.Updated: items, pops, removals, clears, compactions,
// forks and creation. Title and meta changes (title, archive, pin, labels,
// metadata) and unknown kinds are not.
func (k Kind) IsActivity() bool {
	switch k {
	case KindItem, KindPop, KindRemove, KindClear, KindCompaction, KindFork, KindCreate:
		return true
	}
	return false
}

// ItemRef points at one item of the log: the item entry with Seq, or, when
// Seq names a compaction entry, its Index-th summary item.
type ItemRef struct {
	Seq   int64 `json:"seq"`
	Index int   `json:"index,omitempty"`
}

// Compaction is the payload of a KindCompaction entry. It is a snapshot:
// from this entry on, the session's item list is Items (usually one summary
// item followed by verbatim copies of the newest items kept), and items
// appended later follow it. The entries it replaces stay in the log, so
// exports still see them; only the view changes, and a reader scanning
// back from the end stops here.
//
// Through is the LastSeq the compactor read; the store writes the entry
// only if the session's LastSeq still equals it (compare-and-swap), so an
// item appended while the model was summarising is never lost. Replaced is
// the number of items the view held before.
type Compaction struct {
	Through  int64  `json:"through"`
	Replaced int    `json:"replaced"`
	Items    []Item `json:"items"`
	// Strategy names the compactor, for the record ("summary", "openai").
	Strategy string `json:"strategy,omitempty"`
	// Created, set by a purge on the entry a purged log starts with, is
	// the session's creation time, which the dropped entries held.
	Created time.Time `json:"created,omitzero"`
}

// ForkOrigin is the payload of a KindFork entry and Meta.ForkedFrom: the
// session and seq a fork was taken from.
type ForkOrigin struct {
	Key Key   `json:"key"`
	Seq int64 `json:"seq"`
}

// Entry returns the entry of kind item that appends it.
func (it Item) Entry() Entry { return Entry{Kind: KindItem, Data: json.RawMessage(it)} }

// ItemEntries returns one item entry per item.
func ItemEntries(items ...Item) []Entry {
	es := make([]Entry, len(items))
	for i, it := range items {
		es[i] = it.Entry()
	}
	return es
}

// NewEntry returns an entry of the given kind with v encoded as its Data.
func NewEntry(kind Kind, v any) Entry {
	var data json.RawMessage
	if v != nil {
		data, _ = json.Marshal(v) // payload types always marshal
	}
	return Entry{Kind: kind, Data: data}
}

// Validate checks an entry before a store writes it: an item entry holds
// a valid item no larger than max, and a known kind's payload decodes
// (titles and labels hold no NUL, metadata keeps its limits). The error
// wraps ErrInvalidItem, ErrInvalidMetadata or ErrTooLarge. Stores check a
// whole batch before writing any of it (storekit.ValidateEntries).
func (e Entry) Validate(max int) error {
	var err error
	switch e.Kind {
	case KindItem:
		err = Item(e.Data).Validate(max)
	case KindTitle:
		var c TitleChange
		if err = decodePayload(e, &c); err == nil {
			err = checkText(e, "title", c.Title)
		}
	case KindMeta:
		var c MetaChange
		if err = decodePayload(e, &c); err == nil {
			for _, l := range c.Labels {
				if err = checkText(e, "label", l); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = validateMetadataChange(c)
		}
		if err == nil && len(c.Metadata) > 0 && !utf8.Valid(e.Data) {
			// decoding turned the bad bytes into U+FFFD: refuse the
			// raw payload rather than keep altered text
			err = fmt.Errorf("%w: meta payload is not valid UTF-8", ErrInvalidMetadata)
		}
	case KindPop, KindRemove:
		err = decodePayload(e, &ItemRef{})
	case KindCompaction:
		var c Compaction
		if err = decodePayload(e, &c); err == nil {
			err = ValidateItems(c.Items, max)
		}
	case KindFork:
		err = decodePayload(e, &ForkOrigin{})
	case KindRedaction:
		err = decodePayload(e, &payload.Redaction{})
	case KindClear, KindCreate:
	case "":
		err = fmt.Errorf("%w: entry without a kind", ErrInvalidItem)
	}
	return err
}

// checkText refuses a title or label that a store could not keep as it
// is: one holding a NUL byte (PostgreSQL text cannot) or, in the raw
// payload, bytes that are not UTF-8 (decoding would turn them into U+FFFD).
// Every store then agrees, and none alters the text silently.
func checkText(e Entry, what, text string) error {
	if strings.IndexByte(text, 0) >= 0 {
		return fmt.Errorf("%w: %s %q holds a NUL byte", ErrInvalidItem, what, text)
	}
	if !utf8.Valid(e.Data) {
		return fmt.Errorf("%w: %s payload is not valid UTF-8", ErrInvalidItem, e.Kind)
	}
	return nil
}

func decodePayload(e Entry, v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%w: %s payload: %v", ErrInvalidItem, e.Kind, err)
	}
	return nil
}
