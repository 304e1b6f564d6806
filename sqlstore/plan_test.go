package sqlstore

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// planCase is a statement whose plan must use an index: for a List
// page, to read it in order (no sort step); for a read of a log, to seek a
// window of seqs (bounded), where sorting the window is fine.
type planCase struct {
	name    string
	stmt    string
	args    []any
	index   string
	bounded bool // a log read: the plan must bound seq, and may sort
	sorts   bool // may sort what it reads (a few rows, all of them wanted)
}

// planCases returns the List, Items and ReadItems statements of s, with
// the index each must use (PostgreSQL's name for the entries key first,
// SQLite's second).
func planCases(t *testing.T, s *Store, entriesIndex string) []planCase {
	t.Helper()
	cursor := storekit.Cursor{Updated: time.Unix(1_700_000_000, 0), Project: "p3", Session: "s00100"}.String()
	var cases []planCase
	for _, c := range []struct {
		name, project string
		opts          recall.ListOptions
		index         string
	}{
		{"list all, first page", "", recall.ListOptions{}, "sessions_updated"},
		{"list all, later page", "", recall.ListOptions{Cursor: cursor}, "sessions_updated"},
		{"list all, archived too", "", recall.ListOptions{IncludeArchived: true, Limit: 10}, "sessions_updated"},
		{"list project, first page", "p3", recall.ListOptions{}, "sessions_project_updated"},
		{"list project, later page", "p3", recall.ListOptions{Cursor: cursor}, "sessions_project_updated"},
		// Pinned sessions through an index of the pinned ones only
		// (sessions_pinned or sessions_project_pinned), never a walk
		// over the unpinned: the planner may read all of them and sort
		// them, as few as they are.
		{"list all, pinned", "", recall.ListOptions{Pinned: true}, "_pinned"},
		{"list all, pinned, archived too", "", recall.ListOptions{Pinned: true, IncludeArchived: true, Cursor: cursor}, "_pinned"},
		{"list project, pinned", "p3", recall.ListOptions{Pinned: true}, "_pinned"},
		{"list project, pinned, later page", "p3", recall.ListOptions{Pinned: true, Cursor: cursor}, "_pinned"},
	} {
		stmt, a, _, err := s.listQuery(c.project, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, planCase{name: c.name, stmt: stmt, args: a, index: c.index, sorts: c.opts.Pinned})
	}
	return append(cases,
		planCase{"items, newest", newestSQL, []any{"p2", "s00100", "", 28}, entriesIndex, true, false},
		planCase{"items, window", windowSQL, []any{int64(100), int64(4000), int64(4256)}, entriesIndex, true, false},
		planCase{"stat, unchecked rows", uncheckedSQL, []any{int64(100), int64(990)}, entriesIndex, true, false},
		planCase{"read items, forward window", forwardSQL, []any{int64(100), int64(4000), int64(4116)}, entriesIndex, true, false},
		// The controls of a log, newest first, through their own index
		// in its order (no sort): never a read of the log's items.
		planCase{"read items, controls", controlsSQL, []any{int64(100), int64(4001), 16}, "entries_controls", false, false},
	)
}

// planRows is how many sessions (of 10 entries each) the plan tests hold,
// so the planners have a reason to prefer an index. Session 100
// (p2/s00100, whose log the Items statements read) has longLog entries: a
// long conversation, where reading all of it would be the mistake.
// SQLite's planner needs less to show its choices, and filling its
// database is slow under -race.
const (
	planRows, longLog             = 2000, 5000
	sqlitePlanRows, sqliteLongLog = 500, 1000
)

func TestPlansSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	lite := s.db.(*liteBackend)
	_, err := lite.w.ExecContext(ctx, `
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
		INSERT INTO sessions (project, id, subpath, created_at, updated_at, archived, pinned)
		SELECT 'p' || (i % 7), printf('s%05d', i), CASE WHEN i % 5 = 0 THEN 'sub' ELSE '' END,
			1700000000000000 + i, 1700000000000000 + (i * 7919) % 100000, i % 11 = 0, i % 13 = 0 FROM n;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
		INSERT INTO entries (session, seq, kind, payload, time) SELECT sid, i, 'item', x'7b7d', 0 FROM sessions, n WHERE sid <> 100;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
		INSERT INTO entries (session, seq, kind, payload, time) SELECT 100, i, 'item', x'7b7d', 0 FROM n;
		ANALYZE;`, sqlitePlanRows, sqliteLongLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range planCases(t, s, "sqlite_autoindex_entries_1") {
		rs, err := lite.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.stmt, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rs.Next() {
			var id, parent, unused int
			var detail string
			if err := rs.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rs.Close()
		checkPlan(t, c, strings.Join(plan, "\n"), "TEMP B-TREE")
	}
}

func TestPlansPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dsn, schema := newPostgresSchema(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `
		INSERT INTO sessions (project, id, subpath, created_at, updated_at, archived, pinned)
		SELECT 'p' || (i % 7), 's' || lpad(i::text, 5, '0'), CASE WHEN i % 5 = 0 THEN 'sub' ELSE '' END,
			to_timestamp(1700000000 + i), to_timestamp(1700000000 + (i * 7919) % 100000), i % 11 = 0, i % 13 = 0
		FROM generate_series(1, `+itoa(planRows)+`) i;
		INSERT INTO entries (session, seq, kind, payload, time)
		SELECT sid, i, 'item', '\x7b7d', now() FROM sessions, generate_series(1, 10) i WHERE sid <> 100;
		INSERT INTO entries (session, seq, kind, payload, time)
		SELECT 100, i, 'item', '\x7b7d', now() FROM generate_series(1, `+itoa(longLog)+`) i;
		ANALYZE sessions; ANALYZE entries;`)
	if err != nil {
		t.Fatal(err)
	}
	// pgx prepares statements, and PostgreSQL may switch a prepared
	// statement to a generic plan, one made without the arguments' values:
	// both plans must read the index in order.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := c.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for i, pc := range planCases(t, s, "entries_pkey") {
			name := fmt.Sprintf("plan_%s_%d", mode, i)
			if _, err := c.Exec(ctx, "PREPARE "+name+" AS "+pc.stmt); err != nil {
				t.Fatalf("%s: %v", pc.name, err)
			}
			lits := make([]string, len(pc.args))
			for j, a := range pc.args {
				lits[j] = sqlLiteral(a)
			}
			rs, err := c.Query(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(lits, ", ")+")")
			if err != nil {
				t.Fatalf("%s: %v", pc.name, err)
			}
			lines, err := pgx.CollectRows(rs, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			pc.name += " (" + mode + ")"
			checkPlan(t, pc, strings.Join(lines, "\n"), "Sort")
		}
	}
}

// sqlLiteral writes a test argument as an SQL literal.
func sqlLiteral(v any) string {
	switch v := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format(time.RFC3339Nano) + "'"
	default:
		return fmt.Sprint(v)
	}
}

var seqBound = regexp.MustCompile(`seq ?>`)

func checkPlan(t *testing.T, c planCase, plan, sortStep string) {
	t.Helper()
	switch {
	case !strings.Contains(plan, c.index):
		t.Errorf("%s: the plan does not use %s:\n%s", c.name, c.index, plan)
	case c.bounded && !seqBound.MatchString(plan):
		t.Errorf("%s: the plan does not seek a window of seqs in %s:\n%s", c.name, c.index, plan)
	case !c.bounded && !c.sorts && strings.Contains(plan, sortStep):
		t.Errorf("%s: want an ordered read of %s, no %q step; plan:\n%s", c.name, c.index, sortStep, plan)
	default:
		t.Logf("%s:\n%s", c.name, plan)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
