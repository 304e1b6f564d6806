package recall

import (
	"encoding/json"
	"slices"
	"time"
)

// Meta is what List returns for a session: its metadata, never its items.
type Meta struct {
	Key         Key         `json:"key"`
	Title       string      `json:"title,omitempty"`
	TitleSource TitleSource `json:"title_source,omitempty"`
	Created     time.Time   `json:"created"`
	Updated     time.Time   `json:"updated"`
	// ItemCount is the number of items GetItems(0) returns.
	ItemCount int `json:"item_count"`
	// LastSeq is the seq of the newest entry; 0 for a session with none.
	LastSeq    int64       `json:"last_seq"`
	Archived   bool        `json:"archived,omitempty"`
	Pinned     bool        `json:"pinned,omitempty"`
	Labels     []string    `json:"labels,omitempty"`
	ForkedFrom *ForkOrigin `json:"forked_from,omitempty"`
	Usage      Usage       `json:"usage"`
	// Corrupt counts log lines a store could not decode and skipped
	// (file store only). They are kept on disk, never rewritten away.
	Corrupt int `json:"corrupt,omitempty"`
}

// Clone returns a deep copy of m.
func (m Meta) Clone() Meta {
	m.Labels = slices.Clone(m.Labels)
	if m.ForkedFrom != nil {
		f := *m.ForkedFrom
		m.ForkedFrom = &f
	}
	return m
}

// Apply updates m for one more entry of its log. Every store uses it, so
// metadata means the same everywhere. Entries of unknown kinds and
// undecodable payloads only advance LastSeq and Updated.
func (m *Meta) Apply(e Entry) {
	if e.Seq > m.LastSeq {
		m.LastSeq = e.Seq
	}
	if m.Created.IsZero() {
		m.Created = e.Time
	}
	if e.Time.After(m.Updated) {
		m.Updated = e.Time
	}
	if e.Usage != nil {
		m.Usage.Add(*e.Usage)
	}
	switch e.Kind {
	case KindItem:
		m.ItemCount++
	case KindPop:
		// Like Replay, a pop whose payload does not decode removes nothing.
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
		}
	case KindTitle:
		var t TitleChange
		if json.Unmarshal(e.Data, &t) == nil && AllowTitle(m.TitleSource, t.Source) {
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
			if c.Labels != nil || c.SetLabels {
				m.Labels = slices.Clone(c.Labels)
			}
		}
	case KindFork:
		var f ForkOrigin
		if json.Unmarshal(e.Data, &f) == nil {
			m.ForkedFrom = &f
		}
	}
}

// AllowTitle reports whether a title from source next may replace a title
// from source cur: an auto title never replaces a user title.
func AllowTitle(cur, next TitleSource) bool {
	return !(cur == TitleUser && next == TitleAuto)
}
