package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migrationFS holds the schema of each dialect as numbered steps,
// migrations/<dialect>/NNNN_name.sql. A step is never edited once
// released; a change is a new step.
//
//go:embed migrations
var migrationFS embed.FS

// migration is one step of a dialect's schema.
type migration struct {
	version int
	name    string
	sql     string
	// step, when set, runs after sql, in the same transaction: the part
	// of the migration SQL cannot do (see goSteps).
	step func(ctx context.Context, q querier) error
}

// goSteps are the parts of migrations written in Go, by dialect and
// version.
var goSteps = map[string]map[int]func(ctx context.Context, q querier) error{
	// SQLite's rows of migration 3 join the trigram index in migration
	// 11, with any an older version left out of it.
	"sqlite": {3: func(ctx context.Context, q querier) error {
		return backfillSearch(ctx, q, insertSearchLite)
	}, 4: backfillFirstPrompt},
	"postgres": {3: func(ctx context.Context, q querier) error {
		return backfillSearch(ctx, q, func(ctx context.Context, q querier, sid int64, rows []searchRow) error {
			return insertSearchPGWith(ctx, q, sid, rows, false)
		})
	}, 4: backfillFirstPrompt, 6: backfillBigrams},
}

// backfillFirstPrompt fills the first_prompt column that migration 4
// adds: each session's recall.Meta.FirstPrompt, from its log read in
// chunks up to the first entry that offers one (recall.Entry.Prompt).
func backfillFirstPrompt(ctx context.Context, q querier) error {
	rs, err := q.query(ctx, `SELECT sid FROM sessions ORDER BY sid`)
	if err != nil {
		return err
	}
	var sids []int64
	for rs.Next() {
		var sid int64
		if err := rs.Scan(&sid); err != nil {
			rs.Close()
			return err
		}
		sids = append(sids, sid)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	const chunk = 256
	for _, sid := range sids {
		var after int64
	read:
		for {
			entries, err := readEntries(ctx, q, sid, after, chunk)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if p := e.Prompt(); p != "" {
					if _, err := q.exec(ctx, `UPDATE sessions SET first_prompt = $2 WHERE sid = $1`, sid, p); err != nil {
						return err
					}
					break read
				}
			}
			if len(entries) < chunk {
				break
			}
			after = entries[len(entries)-1].Seq
		}
	}
	return nil
}

// loadMigrations returns dialect's steps in version order.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	files, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []migration
	for _, f := range files {
		num, _, ok := strings.Cut(f.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(f.Name(), ".sql") {
			return nil, fmt.Errorf("migrations: bad file name %s", f.Name())
		}
		b, err := fs.ReadFile(migrationFS, path.Join(dir, f.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		ms = append(ms, migration{version: v, name: f.Name(), sql: string(b), step: goSteps[dialect][v]})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations: %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this package writes: the number of
// its newest migration.
const SchemaVersion = 12

// applyMigrations runs, inside the caller's write transaction, every step
// newer than the database's version, and records each in recall_schema.
// A database whose version is newer than the newest step known here was
// written by a newer program: it is refused with ErrSchemaTooNew, since
// this one could misread it or break its invariants.
func applyMigrations(ctx context.Context, q querier, ms []migration) error {
	if _, err := q.exec(ctx, `CREATE TABLE IF NOT EXISTS recall_schema (version integer PRIMARY KEY)`); err != nil {
		return fmt.Errorf("schema version table: %w", err)
	}
	var cur sql.NullInt64
	if err := q.queryRow(ctx, `SELECT max(version) FROM recall_schema`).Scan(&cur); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	latest := ms[len(ms)-1].version
	if int(cur.Int64) > latest {
		return fmt.Errorf("%w: the database is at schema version %d, this program knows versions up to %d; upgrade recall",
			ErrSchemaTooNew, cur.Int64, latest)
	}
	for _, m := range ms[cur.Int64:] {
		if _, err := q.exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if m.step != nil {
			if err := m.step(ctx, q); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if _, err := q.exec(ctx, `INSERT INTO recall_schema (version) VALUES ($1)`, m.version); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}
