package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/search"
)

// Searching a user's sessions (recall.Search, on the store's own index
// when it has one).
//
// GET /api/v1/search answers hits: one per matching item (or title), newest
// first, each naming its session, the item (seq and index), its role, and
// a snippet with the byte ranges that matched; next_cursor pages on.
//
// GET /api/v1/sessions?q=… answers sessions instead: those with a hit, in
// the order of their newest hit, each once per page; next_cursor is the
// search's cursor, so a session whose hits span pages can appear again on
// a later page.

// hit is one search hit as /api/v1 shows it.
type hit struct {
	Object    string        `json:"object"` // "search.hit"
	SessionID string        `json:"session_id"`
	Project   string        `json:"project"`
	Title     string        `json:"title"`
	Seq       int64         `json:"seq"`   // 0 for a title hit
	Index     int           `json:"index"` // the item's place in a compaction entry
	Role      string        `json:"role"`
	Time      time.Time     `json:"time"`
	Snippet   string        `json:"snippet"`
	Matches   []recall.Span `json:"matches"`
	Rank      float64       `json:"rank"`
}

// searchOptions reads the search parameters of r for the user's projects
// (searchScope): q (required), project, role, since and until (RFC 3339),
// archived, whole_log, limit and cursor. It returns the filter of the
// sessions whose hits are the user's, nil when all are.
func (s *Server) searchOptions(r *http.Request, u User, limit int) (recall.SearchOptions, pagefilter.Keep, error) {
	q := r.URL.Query()
	opts := recall.SearchOptions{Query: q.Get("q"), Role: q.Get("role"), Cursor: q.Get("cursor"), Limit: limit}
	var keep pagefilter.Keep
	var err error
	if opts.Project, keep, err = s.searchScope(r.Context(), u, q.Get("project")); err != nil {
		return opts, nil, err
	}
	opts, err = searchParams(r, opts)
	return opts, keep, err
}

// searchParams reads the search parameters of r but q and project.
func searchParams(r *http.Request, opts recall.SearchOptions) (recall.SearchOptions, error) {
	if err := searchFilters(r, &opts); err != nil {
		return opts, err
	}
	switch opts.Role {
	case "", recall.RoleUser, recall.RoleAssistant, recall.RoleSystem, recall.RoleTool, recall.RoleTitle:
	default:
		return opts, invalidParam("role", "Invalid 'role': %q; expected user, assistant, system, tool or title.", shorten(opts.Role))
	}
	if opts.Cursor != "" {
		if _, err := search.ParseCursor(opts.Cursor); err != nil {
			return opts, badCursor()
		}
	}
	if err := search.Check(opts); err != nil {
		return opts, searchErr(err)
	}
	return opts, nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	u, limit, err := listCaller(r)
	if err != nil {
		return err
	}
	opts, keep, err := s.searchOptions(r, u, limit)
	if err != nil {
		return err
	}
	page, err := pagefilter.Search(r.Context(), s.store, opts, keep)
	if err != nil {
		return searchErr(err)
	}
	data := make([]hit, 0, len(page.Hits))
	for _, h := range page.Hits {
		m := h.Matches
		if m == nil {
			m = []recall.Span{}
		}
		data = append(data, hit{Object: "search.hit", SessionID: h.Key.Session, Project: h.Key.Project, Title: h.Title, Seq: h.Ref.Seq, Index: h.Ref.Index,
			Role: h.Role, Time: h.Time, Snippet: h.Snippet, Matches: m, Rank: h.Rank})
	}
	writeJSON(w, http.StatusOK, listOf(data, page.Next))
	return nil
}

// searchSessions answers GET /api/v1/sessions?q=: the sessions of the
// user's newest hits, each once, up to limit.
func (s *Server) searchSessions(w http.ResponseWriter, r *http.Request, u User, limit int) error {
	opts, keep, err := s.searchOptions(r, u, recall.MaxSearchLimit)
	if err != nil {
		return err
	}
	ctx := r.Context()
	out := sessionList{Object: "list", Data: []session{}}
	seen := map[recall.Key]bool{}
	for len(out.Data) < limit {
		page, err := recall.Search(ctx, s.store, opts)
		if err != nil {
			return searchErr(err)
		}
		for i, h := range page.Hits {
			if seen[h.Key] {
				continue
			}
			m, err := s.store.Stat(ctx, h.Key)
			if errors.Is(err, recall.ErrNotFound) {
				continue // removed since the search
			} else if err != nil {
				return err
			}
			seen[h.Key] = true
			if keep != nil && !keep(m) {
				continue // another's
			}
			out.Data = append(out.Data, sessionOf(m))
			if len(out.Data) == limit {
				if i < len(page.Hits)-1 || page.Next != "" {
					out.NextCursor = search.CursorAt(h).String()
				}
				break
			}
		}
		if len(out.Data) == limit || page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	out.HasMore = out.NextCursor != ""
	writeJSON(w, http.StatusOK, out)
	return nil
}

// searchFilters reads the filters of a search into opts: archived,
// whole_log, and since and until (timeRange).
func searchFilters(r *http.Request, opts *recall.SearchOptions) error {
	var err error
	if opts.IncludeArchived, err = boolParam(r, "archived"); err != nil {
		return err
	}
	if opts.WholeLog, err = boolParam(r, "whole_log"); err != nil {
		return err
	}
	opts.Since, opts.Until, err = timeRange(r.URL.Query())
	return err
}

// searchErr makes a bad query the caller's 400; anything else stays as is.
func searchErr(err error) error {
	if errors.Is(err, recall.ErrInvalidQuery) {
		return invalidParam("q", "%s", withDetail("Invalid search", err, recall.ErrInvalidQuery))
	}
	return err
}
