package recall

import (
	"context"
	"fmt"
	"time"
)

// Search roles: the role a hit's item is filed under (see search.Text).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
	// RoleTitle marks a hit on the session's title rather than an item.
	RoleTitle = "title"
)

// SearchOptions selects what Search looks for and which page it returns.
type SearchOptions struct {
	// Query is the text to find (see search.Parse): words in any order, or
	// "quoted phrases"; case-insensitive; substrings match, so CJK text
	// without spaces is found.
	Query string
	// Project limits the search to one project. Default: every project.
	Project string
	// IncludeArchived searches archived sessions too. Default: they are
	// left out, as List leaves them out.
	IncludeArchived bool
	// Role keeps only hits of that role (RoleUser, RoleAssistant,
	// RoleSystem, RoleTool, RoleTitle). Default: every role.
	Role string
	// Since and Until keep only items written at or after Since and
	// before Until (the time of the entry that holds the item). Zero
	// means unbounded. A title hit carries the session's Updated time.
	Since, Until time.Time
	// WholeLog searches every item the log ever held: removed, popped,
	// cleared and compacted-away items too. Default: only the live view
	// (what Items returns) and the title.
	WholeLog bool
	// Limit is the page size. Default (0): DefaultSearchLimit; at most
	// MaxSearchLimit.
	Limit int
	// Cursor continues from a previous SearchPage.Next.
	Cursor string
}

// Span is a byte range [Start, End) of a snippet that matched the query.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Hit is one item (or title) that matched a search.
type Hit struct {
	Key Key `json:"key"`
	// Title is the session's current title, on item hits too.
	Title string `json:"title,omitempty"`
	// Ref names the item: the item entry's seq, or a compaction entry's
	// seq and the index of its item. A title hit has the zero Ref.
	Ref  ItemRef   `json:"ref"`
	Role string    `json:"role"`
	Time time.Time `json:"time"`
	// Snippet is a short excerpt of the item's text around the first
	// match, on one line; Matches are the byte ranges in it that matched.
	Snippet string `json:"snippet"`
	Matches []Span `json:"matches,omitempty"`
	// Rank is how well the item matched, higher first; it compares hits
	// of one search only, and each store computes it its own way.
	Rank float64 `json:"rank"`
}

// SearchPage is one page of hits, newest first (by Time, then Key, then
// Ref, all descending, so pages are stable while sessions grow).
type SearchPage struct {
	Hits []Hit `json:"hits"`
	// Next is the cursor of the following page, or "" on the last one.
	Next string `json:"next,omitempty"`
}

// Searcher is a store that searches: every store of this module is one.
// Search finds it through wrappers (see As). A Searcher validates opts as
// search.Check does and returns exactly the hits search.Scan would (the
// query rules of search.Parse and the text of search.Text), in the same
// order; only Rank and the snippet's cut may differ. storetest checks it.
// A store without an index implements it with search.Scan; package search
// also holds the pieces an index is built from.
type Searcher interface {
	Search(ctx context.Context, opts SearchOptions) (SearchPage, error)
}

// Search finds the items and titles that match opts.Query, one page at a
// time, newest first (see SearchOptions for what is searched), with the
// store's Searcher. A bad query or option is an error wrapping
// ErrInvalidQuery; a store that is not a Searcher, one wrapping
// ErrUnsupported.
func Search(ctx context.Context, s Store, opts SearchOptions) (SearchPage, error) {
	se, ok := As[Searcher](s)
	if !ok {
		return SearchPage{}, fmt.Errorf("%w: %T does not search (search.Scan searches any store)", ErrUnsupported, s)
	}
	return se.Search(ctx, opts)
}

// PageSize returns the page size opts ask for: Limit, or
// DefaultSearchLimit when it is 0.
func (opts SearchOptions) PageSize() int {
	if opts.Limit == 0 {
		return DefaultSearchLimit
	}
	return opts.Limit
}
