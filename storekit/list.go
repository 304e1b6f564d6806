package storekit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Cursor is the keyset position a List page ends at: the sort key of the
// last session returned. Stores encode it into recall.Page.Next and decode it from
// recall.ListOptions.Cursor; callers treat the string as opaque.
type Cursor struct {
	Updated time.Time `json:"u"`
	Project string    `json:"p"`
	Session string    `json:"s"`
	Subpath string    `json:"b,omitempty"`
}

// CursorAt returns the cursor positioned at m.
func CursorAt(m recall.Meta) Cursor {
	return Cursor{Updated: m.Updated, Project: m.Key.Project, Session: m.Key.Session, Subpath: m.Key.Subpath}
}

// String encodes c for recall.Page.Next.
func (c Cursor) String() string { return EncodeCursor(c) }

// ParseCursor decodes a recall.Page.Next string. The error wraps recall.ErrInvalidKey.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	if err := DecodeCursor(s, &c); err != nil {
		return Cursor{}, fmt.Errorf("%w: bad list cursor %q", recall.ErrInvalidKey, s)
	}
	return c, nil
}

// EncodeCursor encodes v, the position a page ends at, as the opaque
// string of a next-page cursor: its JSON, in unpadded URL-safe base64.
// List's cursors (Cursor) and search's (search.Cursor) are both written
// with it.
func EncodeCursor(v any) string {
	b, _ := json.Marshal(v) // a cursor's fields always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor decodes a string EncodeCursor wrote into v, which points
// to the cursor's type. The error is base64's or encoding/json's; the
// caller says what cursor was bad.
func DecodeCursor(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Before reports whether m sorts before the cursor position, that is, on
// an earlier page. List order is Updated descending, then project, session
// and subpath ascending.
func (c Cursor) Before(m recall.Meta) bool {
	return compareList(m, recall.Meta{Updated: c.Updated, Key: recall.Key{Project: c.Project, Session: c.Session, Subpath: c.Subpath}}) <= 0
}

// compareList orders metas the way List returns them.
func compareList(a, b recall.Meta) int { return CompareListOrder(a.Updated, a.Key, b.Updated, b.Key) }

// CompareListOrder compares two sessions, by their Updated time and key, in
// the order List returns them: newest Updated first, then project,
// session and subpath. Stores that sort records of their own use it, so
// the order is defined once.
func CompareListOrder(aUpdated time.Time, a recall.Key, bUpdated time.Time, b recall.Key) int {
	if c := bUpdated.Compare(aUpdated); c != 0 {
		return c
	}
	if c := strings.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	return strings.Compare(a.Subpath, b.Subpath)
}

// SortList sorts metas in List order.
func SortList(metas []recall.Meta) { slices.SortFunc(metas, compareList) }

// Paginate applies opts to metas that already match the project, parent,
// archived and pinned filters and returns the page: it sorts them in List
// order, skips to the cursor and cuts at the limit. Stores that hold their metadata in
// memory (memstore, the file store's index) share it.
func Paginate(metas []recall.Meta, opts recall.ListOptions) (recall.Page, error) {
	SortList(metas)
	if opts.Cursor != "" {
		c, err := ParseCursor(opts.Cursor)
		if err != nil {
			return recall.Page{}, err
		}
		i, _ := slices.BinarySearchFunc(metas, c, func(m recall.Meta, c Cursor) int {
			if c.Before(m) {
				return -1
			}
			return 1
		})
		metas = metas[i:]
	}
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	var p recall.Page
	if limit > 0 && len(metas) > limit {
		metas = metas[:limit]
		p.Next = CursorAt(metas[limit-1]).String()
	}
	p.Sessions = make([]recall.Meta, len(metas))
	for i, m := range metas {
		p.Sessions[i] = m.Clone()
	}
	return p, nil
}

// Matches reports whether m belongs in a List of project with opts: the
// project matches (or is empty), sessions in the trash only and all of
// them when opts.Trashed is set, else none of them and archived sessions
// only when asked, only pinned sessions when opts.Pinned is set, and main
// sessions, or the records under opts.Parent when it is set.
func Matches(m recall.Meta, project string, opts recall.ListOptions) bool {
	if project != "" && m.Key.Project != project {
		return false
	}
	if m.Trashed.IsZero() == opts.Trashed {
		return false
	}
	if m.Archived && !opts.IncludeArchived && !opts.Trashed || !m.Pinned && opts.Pinned {
		return false
	}
	if opts.Parent != "" {
		return m.Key.Session == opts.Parent && m.Key.Subpath != ""
	}
	return m.Key.Subpath == ""
}

// CheckListOptions validates project and opts for List: a Parent needs a
// project, and both must be valid names. Errors wrap recall.ErrInvalidKey.
func CheckListOptions(project string, opts recall.ListOptions) error {
	if project != "" {
		if err := (recall.Key{Project: project, Session: "x"}).Validate(); err != nil {
			return err
		}
	}
	if opts.Parent != "" {
		if project == "" {
			return fmt.Errorf("%w: listing subagent records needs a project", recall.ErrInvalidKey)
		}
		if err := recall.ValidateID(opts.Parent); err != nil {
			return err
		}
	}
	return nil
}
