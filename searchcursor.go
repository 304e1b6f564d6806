package recall

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// CompareHits orders hits the way every search returns them: newest Time
// first, then Key (project, session, subpath), then Ref (seq, index), all
// descending. It returns a negative number when a comes before b. A title
// hit has the zero Ref, so it follows the items of its session that share
// its time. Stores that sort hits of their own use it, so the order is
// defined once.
func CompareHits(a, b Hit) int {
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

// SearchCursor is the position a search page ends at: the sort key of its
// last hit. Stores encode it into SearchPage.Next and decode it from
// SearchOptions.Cursor; callers treat the string as opaque. The next page
// holds the hits that sort after it (see CompareHits), so a page does not
// shift when sessions grow: new items are newer and sort before it.
type SearchCursor struct {
	Time time.Time `json:"t"`
	Key  Key       `json:"k"`
	Ref  ItemRef   `json:"r"`
}

// HitCursor returns the cursor positioned at h.
func HitCursor(h Hit) SearchCursor { return SearchCursor{Time: h.Time, Key: h.Key, Ref: h.Ref} }

// String encodes c for SearchPage.Next.
func (c SearchCursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseSearchCursor decodes a SearchPage.Next string. The error wraps
// ErrInvalidQuery.
func ParseSearchCursor(s string) (SearchCursor, error) {
	var c SearchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return SearchCursor{}, fmt.Errorf("%w: bad search cursor %q", ErrInvalidQuery, s)
	}
	return c, nil
}

// After reports whether h sorts after the cursor position, that is,
// belongs to a later page.
func (c SearchCursor) After(h Hit) bool {
	return CompareHits(Hit{Time: c.Time, Key: c.Key, Ref: c.Ref}, h) < 0
}

// PageSize returns the page size opts ask for: Limit, or
// DefaultSearchLimit when it is 0.
func (opts SearchOptions) PageSize() int {
	if opts.Limit == 0 {
		return DefaultSearchLimit
	}
	return opts.Limit
}
