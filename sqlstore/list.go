package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// List implements recall.Store with keyset pagination: the cursor is the
// sort key (updated_at, project, id, subpath) of the last row returned, and
// the next page starts strictly after it. Main sessions are read through
// the partial indexes sessions_updated (every project) and
// sessions_project_updated (one project), which hold exactly the rows
// with an empty subpath, in List order, so a page costs O(limit) however deep it
// is; a listing of pinned sessions reads sessions_pinned or
// sessions_project_pinned, which hold only the pinned ones, and a listing
// of the trash sessions_trashed. The order and
// cursors are storekit.Paginate's.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if err := s.checkOpen(ctx); err != nil {
		return recall.Page{}, err
	}
	if err := storekit.CheckListOptions(project, opts); err != nil {
		return recall.Page{}, fmt.Errorf("sqlstore: list: %w", err)
	}
	stmt, a, limit, err := s.listQuery(project, opts)
	if err != nil {
		return recall.Page{}, fmt.Errorf("sqlstore: list: %w", err)
	}
	var p recall.Page
	err = s.read(func() error {
		var err error
		p, err = s.listPage(ctx, stmt, a, limit)
		return err
	})
	if err != nil {
		return recall.Page{}, fmt.Errorf("sqlstore: list %q: %w", project, opError(ctx, err))
	}
	if limit > 0 && len(p.Sessions) > limit {
		p.Sessions = p.Sessions[:limit]
		p.Next = storekit.CursorAt(p.Sessions[limit-1]).String()
	}
	return p, nil
}

// listQuery returns the statement of a List page, its arguments and the
// page size (<= 0: unlimited).
func (s *Store) listQuery(project string, opts recall.ListOptions) (string, args, int, error) {
	var a args
	var where []string
	if opts.Parent != "" {
		where = append(where, "project = "+a.add(project), "id = "+a.add(opts.Parent), "subpath <> ''")
	} else {
		// Written as the literal the partial indexes are declared with,
		// so both planners match them.
		where = append(where, "subpath = ''")
		if project != "" {
			where = append(where, "project = "+a.add(project))
		}
	}
	if opts.Pinned {
		// With subpath = '', the predicate of sessions_pinned and
		// sessions_project_pinned (migration 10), word for word; among
		// one session's records, a filter.
		where = append(where, "pinned")
	}
	switch {
	case opts.Trashed:
		// With subpath = '', the predicate of sessions_trashed
		// (migration 12), word for word.
		where = append(where, "trashed_at IS NOT NULL")
	case !opts.IncludeArchived:
		where = append(where, "trashed_at IS NULL", "NOT archived")
	default:
		where = append(where, "trashed_at IS NULL")
	}
	if opts.Cursor != "" {
		c, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return "", nil, 0, err
		}
		// updated_at <= u bounds the index range; the rest skips the
		// rows of time u up to and including the cursor.
		u := a.add(s.db.timeArg(c.Updated))
		where = append(where, fmt.Sprintf("updated_at <= %s AND (updated_at < %s OR (project, id, subpath) > (%s, %s, %s))",
			u, u, a.add(c.Project), a.add(c.Session), a.add(c.Subpath)))
	}
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	cols := metaCols
	if s.packedList() {
		cols = metaPackedLite
	}
	stmt := `SELECT ` + cols + ` FROM sessions WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY updated_at DESC, project, id, subpath`
	if limit > 0 {
		stmt += " LIMIT " + a.add(limit+1) // one more tells whether a next page exists
	}
	return stmt, a, limit, nil
}

// Projects implements storekit.ProjectLister.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	var out []recall.ProjectInfo
	err := s.read(func() error {
		var err error
		out, err = s.projects(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: projects: %w", opError(ctx, err))
	}
	return out, nil
}

func (s *Store) projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	rs, err := s.db.q().query(ctx, `SELECT project, count(*), max(updated_at) FROM sessions
		WHERE subpath = '' GROUP BY project ORDER BY project`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []recall.ProjectInfo{}
	for rs.Next() {
		var p recall.ProjectInfo
		if err := rs.Scan(&p.Project, &p.Sessions, dbTime{&p.Updated}); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rs.Err()
}

// packedList reports whether List reads a row as one metaPackedLite
// value (SQLite) rather than as metaCols (PostgreSQL).
func (s *Store) packedList() bool {
	_, ok := s.db.(*liteBackend)
	return ok
}

// listPage runs a List statement of limit+1 rows (limit <= 0: unlimited)
// and reads its rows.
func (s *Store) listPage(ctx context.Context, stmt string, a args, limit int) (recall.Page, error) {
	rs, err := s.db.q().query(ctx, stmt, a...)
	if err != nil {
		return recall.Page{}, err
	}
	defer rs.Close()
	p := recall.Page{Sessions: make([]recall.Meta, 0, max(0, min(limit, 1000))+1)}
	var (
		packed metaPacker
		cols   metaScanner
	)
	for rs.Next() {
		var (
			m   recall.Meta
			err error
		)
		if s.packedList() {
			m, err = packed.scan(rs)
		} else {
			m, err = cols.scan(rs)
		}
		if err != nil {
			return recall.Page{}, err
		}
		p.Sessions = append(p.Sessions, m)
	}
	return p, rs.Err()
}

// args collects the arguments of a statement built piece by piece.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}
