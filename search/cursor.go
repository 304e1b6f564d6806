package search

import (
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Compare orders hits the way every search returns them: newest Time
// first, then Key (project, session, subpath), then Ref (seq, index),
// all descending. It returns a negative number when a comes before b. A title
// hit has the zero Ref, so it follows the items of its session that share
// its time. Stores that sort hits of their own use it, so the order is
// defined once.
func Compare(a, b recall.Hit) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	if c := strings.Compare(b.Key.Project, a.Key.Project); c != 0 {
		return c
	}
	if c := strings.Compare(b.Key.Session, a.Key.Session); c != 0 {
		return c
	}
	if c := strings.Compare(b.Key.Subpath, a.Key.Subpath); c != 0 {
		return c
	}
	if b.Ref.Seq != a.Ref.Seq {
		if b.Ref.Seq < a.Ref.Seq {
			return -1
		}
		return 1
	}
	return b.Ref.Index - a.Ref.Index
}

// Cursor is the position a search page ends at: the sort key of its
// last hit. Stores encode it into recall.SearchPage.Next and decode it
// from recall.SearchOptions.Cursor; callers treat the string as opaque.
// The next page holds the hits that sort after it (see Compare), so a
// page does not shift when sessions grow: new items are newer and sort
// before it.
type Cursor struct {
	Time time.Time      `json:"t"`
	Key  recall.Key     `json:"k"`
	Ref  recall.ItemRef `json:"r"`
}

// CursorAt returns the cursor positioned at h.
func CursorAt(h recall.Hit) Cursor { return Cursor{Time: h.Time, Key: h.Key, Ref: h.Ref} }

// String encodes c for recall.SearchPage.Next.
func (c Cursor) String() string { return storekit.EncodeCursor(c) }

// ParseCursor decodes a recall.SearchPage.Next string. The error wraps
// recall.ErrInvalidQuery.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	if err := storekit.DecodeCursor(s, &c); err != nil {
		return Cursor{}, fmt.Errorf("%w: bad search cursor %q", recall.ErrInvalidQuery, s)
	}
	return c, nil
}

// After reports whether h sorts after the cursor position, that is,
// belongs to a later page.
func (c Cursor) After(h recall.Hit) bool {
	return Compare(recall.Hit{Time: c.Time, Key: c.Key, Ref: c.Ref}, h) < 0
}
