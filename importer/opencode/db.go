package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/recallkit/recall/importer/internal/responses"
)

// database reads an opencode SQLite database (opencode.db; versions from
// February 2026 on), read-only: its session, message and part tables
// (packages/core/src/session/sql.ts). A message's and a part's data is
// the JSON of its info or part without the ids, which are columns.
type database struct {
	path string
	db   *sql.DB
}

// openDatabase opens path read-only: the import never writes to, or
// checkpoints, opencode's database, which opencode may be using.
func openDatabase(ctx context.Context, path string) (*database, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	uri := filepath.ToSlash(abs)
	if !strings.HasPrefix(uri, "/") {
		uri = "/" + uri // C:/x → /C:/x
	}
	uri = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(uri)
	db, err := sql.Open("sqlite", "file:"+uri+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &database{path: path, db: db}, nil
}

func (d *database) close() error { return d.db.Close() }

// sessions returns every session of the database. Columns are found by
// name, so a schema with more (or, of those not read, fewer) columns
// than the one the import was written against is read the same.
func (d *database) sessions(ctx context.Context) ([]sessionInfo, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT * FROM session")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []sessionInfo
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		s := sessionInfo{}
		for i, c := range cols {
			switch c {
			case "id":
				s.ID = text(vals[i])
			case "parent_id":
				s.ParentID = text(vals[i])
			case "directory":
				s.Directory = text(vals[i])
			case "title":
				s.Title = text(vals[i])
				s.version += s.Title + "|"
			case "time_created":
				s.Time.Created = number(vals[i])
			case "time_updated":
				s.version += fmt.Sprint(vals[i]) + "|"
			case "revert":
				s.version += text(vals[i]) + "|"
				if r := text(vals[i]); r != "" {
					s.Revert = new(revert)
					if json.Unmarshal([]byte(r), s.Revert, responses.DecodeOptions) != nil {
						s.Revert = nil
					}
				}
			}
		}
		if s.ID != "" {
			s.name = d.path + "#" + s.ID
			out = append(out, s)
		}
	}
	return out, rows.Err()
}

// messages returns a session's messages with their parts, read in one
// transaction, in opencode's order (by creation, then id).
func (d *database) messages(ctx context.Context, session string) ([]message, error) {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	parts := map[string][][2][]byte{}
	prows, err := tx.QueryContext(ctx, `SELECT p.message_id, p.id, p.data FROM part p JOIN message m ON m.id = p.message_id
		WHERE m.session_id = ? ORDER BY p.message_id, p.id`, session)
	if err != nil {
		return nil, err
	}
	for prows.Next() {
		var mid, id string
		var data []byte
		if err := prows.Scan(&mid, &id, &data); err != nil {
			prows.Close()
			return nil, err
		}
		parts[mid] = append(parts[mid], [2][]byte{[]byte(id), data})
	}
	if err := prows.Close(); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", session)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []message
	for rows.Next() {
		var id string
		var created any
		var data []byte
		if err := rows.Scan(&id, &created, &data); err != nil {
			return nil, err
		}
		m := decodeMessage(id, data, parts[id])
		if m.info.Time.Created == 0 {
			m.info.Time.Created = number(created)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// versions returns, for each session of the database that has
// messages, a version of them: their number, the sum of their lengths
// and their latest update, and the same of their parts. Any change
// opencode makes to a session's messages (a message or part added,
// completed, edited, removed) moves it; computing it reads no message.
func (d *database) versions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, q := range []string{
		"SELECT session_id, count(*), coalesce(sum(length(data)), 0), coalesce(max(time_updated), 0) FROM message GROUP BY session_id",
		"SELECT session_id, count(*), coalesce(sum(length(data)), 0), coalesce(max(time_updated), 0) FROM part GROUP BY session_id",
	} {
		rows, err := d.db.QueryContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.path, err)
		}
		for rows.Next() {
			var id string
			var n, size, updated any // whatever the columns hold
			if err := rows.Scan(&id, &n, &size, &updated); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] += fmt.Sprintf("%v/%v/%v;", n, size, updated)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// text returns a column's value as text.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// number returns a column's value as a number.
func number(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return 0
}
