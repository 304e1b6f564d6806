// Package sessionjson holds what recall's two JSON shapes of a session
// that write every field have in common: the CLI's --json SESSION
// (docs/CLI.md) and /api/v1's Session (server/openapi.json). Unlike
// recall.Meta's own JSON, which leaves out what is empty, both write
// false, zero and empty fields, with [] and {} for no labels and no
// metadata. They differ around that run (how they name the session,
// first_prompt, whether title_source may be left out, forked_from,
// corrupt), so each embeds Fields where the run stands in its shape.
package sessionjson

import (
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// Fields is the run of a session's fields that both shapes write alike,
// in this order, from created to source. Embedded in a struct, its
// fields stand in that struct's JSON where it is embedded.
type Fields struct {
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	ItemCount int       `json:"item_count"`
	LastSeq   int64     `json:"last_seq"`
	Archived  bool      `json:"archived"`
	Pinned    bool      `json:"pinned"`
	// Trashed is when the session was moved to the trash; null when it
	// is not in the trash.
	Trashed  *time.Time        `json:"trashed"`
	Labels   []string          `json:"labels"`
	Metadata map[string]string `json:"metadata"`
	// Source is the tool the session came from (importer.Source):
	// "recall" for a session recall wrote itself.
	Source string `json:"source"`
}

// Of returns m's Fields, with an empty list and map in place of nil
// labels and metadata so that they are written as [] and {}, not null.
func Of(m recall.Meta) Fields {
	f := Fields{
		Created:   m.Created,
		Updated:   m.Updated,
		ItemCount: m.ItemCount,
		LastSeq:   m.LastSeq,
		Archived:  m.Archived,
		Pinned:    m.Pinned,
		Labels:    m.Labels,
		Metadata:  m.Metadata,
		Source:    importer.Source(m),
	}
	if !m.Trashed.IsZero() {
		f.Trashed = &m.Trashed
	}
	if f.Labels == nil {
		f.Labels = []string{}
	}
	if f.Metadata == nil {
		f.Metadata = map[string]string{}
	}
	return f
}
