package recall

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Meta is what List returns for a session: its metadata, never its items.
type Meta struct {
	Key         Key         `json:"key"`
	Title       string      `json:"title,omitempty"`
	TitleSource TitleSource `json:"title_source,omitempty"`
	// FirstPrompt is the text of the session's first user message, one
	// line of at most MaxFirstPrompt bytes (see Entry.Prompt), so a listing
	// can tell sessions apart without reading their items. It is set once,
	// by the first entry that carries a prompt, and stays through
	// removals, clears and compactions; "" until then.
	FirstPrompt string    `json:"first_prompt,omitempty"`
	Created     time.Time `json:"created"`
	// Updated is the time of the last conversation activity (see
	// Kind.IsActivity): items, pops, removals, clears, compactions, forks,
	// creation. Title, archive, pin, label and metadata changes do not
	// move it, so they change neither the List order nor Cleanup's age.
	Updated time.Time `json:"updated"`
	// ItemCount is the number of items GetItems(0) returns.
	ItemCount int `json:"item_count"`
	// LastSeq is the seq of the newest entry; 0 for a session with none.
	LastSeq  int64 `json:"last_seq"`
	Archived bool  `json:"archived,omitempty"`
	Pinned   bool  `json:"pinned,omitempty"`
	// Trashed is when the session was moved to the trash (see
	// StoreSession.Trash); zero when it is not in the trash. List,
	// Search and the views leave a session in the trash out.
	Trashed time.Time `json:"trashed,omitzero"`
	Labels  []string  `json:"labels,omitempty"`
	// Metadata is the session's string-to-string map (see
	// ValidateMetadata for its limits); nil when empty.
	Metadata   map[string]string `json:"metadata,omitempty"`
	ForkedFrom *ForkOrigin       `json:"forked_from,omitempty"`
	Usage      Usage             `json:"usage"`
	// Corrupt counts stored records a store could not use and skipped:
	// log lines that do not decode (file store), and item entries whose
	// item is not a JSON object (every store; see Entry.Item). They are kept
	// for a person to look at; Verify reports them. Only an explicit
	// Purge drops a damaged item, with the rest of the history before the
	// compaction it keeps (the file store keeps undecodable lines even
	// then).
	Corrupt int `json:"corrupt,omitempty"`
}

// Clone returns a deep copy of m.
func (m Meta) Clone() Meta {
	m.Labels = slices.Clone(m.Labels)
	m.Metadata = maps.Clone(m.Metadata)
	if m.ForkedFrom != nil {
		f := *m.ForkedFrom
		m.ForkedFrom = &f
	}
	return m
}

// Apply updates m for one more entry of its log. Every store uses it, so
// metadata means the same everywhere. Created is the first entry's time;
// Updated moves only for conversation activity (Kind.IsActivity), and
// starts at the first entry's time whatever its kind. Entries of unknown
// kinds and undecodable payloads only advance LastSeq; an item entry whose
// item is not a JSON object (see Entry.Item) counts in Corrupt, not ItemCount.
func (m *Meta) Apply(e Entry) {
	first := m.LastSeq == 0 && m.Created.IsZero()
	if e.Seq > m.LastSeq {
		m.LastSeq = e.Seq
	}
	if m.Created.IsZero() {
		m.Created = e.Time
	}
	if m.Updated.IsZero() || e.Kind.IsActivity() && e.Time.After(m.Updated) {
		m.Updated = e.Time
	}
	if e.Usage != nil {
		m.Usage.Add(*e.Usage)
	}
	if m.FirstPrompt == "" {
		m.FirstPrompt = e.Prompt()
	}
	switch e.Kind {
	case KindItem:
		if _, ok := e.Item(); ok {
			m.ItemCount++
		} else {
			m.Corrupt++
		}
	case KindPop, KindRemove:
		// Like Replay, a removal whose payload does not decode removes
		// nothing.
		var ref ItemRef
		if json.Unmarshal(e.Data, &ref) == nil && m.ItemCount > 0 {
			m.ItemCount--
		}
	case KindClear:
		m.ItemCount = 0
	case KindCompaction:
		var c Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			m.ItemCount = len(c.Items)
			if first && !c.Created.IsZero() {
				m.Created = c.Created // the start of a purged log
			}
		}
	case KindTitle:
		var t TitleChange
		if json.Unmarshal(e.Data, &t) == nil && m.TitleSource.Yields(t.Source) {
			m.Title, m.TitleSource = t.Title, t.Source
			if t.Title == "" {
				m.TitleSource = TitleNone
			}
		}
	case KindMeta:
		var c MetaChange
		if json.Unmarshal(e.Data, &c) == nil {
			if c.Archived != nil {
				m.Archived = *c.Archived
			}
			if c.Pinned != nil {
				m.Pinned = *c.Pinned
			}
			if c.Trashed != nil {
				m.Trashed = time.Time{}
				if *c.Trashed {
					m.Trashed = e.Time
				}
			}
			if c.Labels != nil || c.SetLabels {
				m.Labels = slices.Clone(c.Labels)
			}
			if c.ClearMetadata || len(c.Metadata) > 0 {
				m.Metadata = mergeMetadata(m.Metadata, c)
			}
		}
	case KindFork:
		var f ForkOrigin
		if json.Unmarshal(e.Data, &f) == nil {
			m.ForkedFrom = &f
		}
	}
}

// Prompt returns the prompt an entry offers for Meta.FirstPrompt: for
// an item entry holding a user message, its text; for a compaction (a
// purged or imported log starts with one), the text of the first user
// message it keeps; else "". The text is made one line (control
// characters and runs of spaces become one space, invalid UTF-8 is
// dropped) and cut to MaxFirstPrompt bytes on a rune boundary. Apply
// uses it; a store that keeps FirstPrompt outside Go computes it here.
func (e Entry) Prompt() string {
	switch e.Kind {
	case KindItem:
		if it, ok := e.Item(); ok && it.Role() == "user" {
			return oneLine(it.Text(), MaxFirstPrompt)
		}
	case KindCompaction:
		var c Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			for _, it := range c.Items {
				if it.Role() == "user" {
					if p := oneLine(it.Text(), MaxFirstPrompt); p != "" {
						return p
					}
				}
			}
		}
	}
	return ""
}

// oneLine turns s into one line of at most max bytes: control characters
// and whitespace runs become a single space, the ends are trimmed, invalid
// UTF-8 is dropped, and the cut falls on a rune boundary.
func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "") {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if b.Len()+n > max {
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Item returns the item an item entry holds and whether it is usable:
// a JSON object, as every store refuses anything else on write. A stored
// item that is not one (damaged, or written by another program) is left
// out of the view by Replay and Tail and counted in Meta.Corrupt by
// Apply, so every store treats it alike. The check looks at the first and
// last bytes; a store whose records may hold arbitrary bytes validates
// them fully when it reads them.
func (e Entry) Item() (Item, bool) {
	if e.Kind != KindItem {
		return nil, false
	}
	b := bytes.TrimSpace(e.Data)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	return Item(e.Data), true
}

// Yields reports whether a title from source cur gives way to a title
// from source next: an auto title never replaces a user title.
func (cur TitleSource) Yields(next TitleSource) bool {
	return !(cur == TitleUser && next == TitleAuto)
}
