package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestMigrateOnePendingList opens a database at schema version 10 whose
// search rows wait in the layers that version 11 removes: on SQLite, rows
// left out of the trigram index (the old tail, indexed = 0) beside rows in
// it; on PostgreSQL, rows in the GIN indexes' pending lists beside rows in
// the tail. Migration 11 indexes SQLite's tail and drops it, and turns the
// pending lists off on PostgreSQL, merging what they held. Every row is
// then found as the scan finds it, SQLite's trigram index passes FTS5's
// integrity-check, PostgreSQL's GIN indexes hold nothing pending, and the
// rows of an append after the migration are found too.
func TestMigrateOnePendingList(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			q, ts, open := versionDatabase(t, dialect, 10)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			const n = 20
			var sid int64
			err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, created_at, updated_at, item_count, last_seq, checked_seq)
				VALUES ('old', 's', '', $1, $1, $2, $2, $2) RETURNING sid`, ts(at), n).Scan(&sid)
			if err != nil {
				t.Fatal(err)
			}
			entries := make([]recall.Entry, n)
			for i := range entries {
				entries[i] = recall.ItemEntry(msg(fmt.Sprintf("row %d of the old version: xylophonist%d, 北京市, 张三", i+1, i%3)))
				entries[i].Seq, entries[i].Time = int64(i+1), at.Add(time.Duration(i)*time.Minute)
				if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, 'item', $3, $4)`,
					sid, i+1, entries[i].Data, ts(entries[i].Time)); err != nil {
					t.Fatal(err)
				}
			}
			// The first half indexed, the second waiting, as version 10
			// wrote them.
			for i, r := range searchChangesOf(entries).rows {
				indexed := i < n/2
				if dialect == "sqlite" {
					var id int64
					if err := q.queryRow(ctx, `INSERT INTO search (sid, seq, idx, role, time, live, body, indexed)
						VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
						sid, r.ref.Seq, r.ref.Index, r.role, ts(r.time), r.live, r.body, indexed).Scan(&id); err != nil {
						t.Fatal(err)
					}
					if indexed {
						if _, err := q.exec(ctx, `INSERT INTO search_fts (rowid, fts) VALUES ($1, $2)`, id, r.body+" "); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				// Rows set indexed go into the GIN indexes' pending
				// lists (fastupdate, on until version 11).
				if _, err := q.exec(ctx, `INSERT INTO search (sid, seq, idx, role, time, live, body, grams, indexed)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8::int4[], $9)`,
					sid, r.ref.Seq, r.ref.Index, r.role, ts(r.time), r.live, r.body, bigramsLiteral(r.body), indexed); err != nil {
					t.Fatal(err)
				}
			}

			s := open()
			if dialect == "sqlite" {
				checkFTS(t, s)
				var cols int
				if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM pragma_table_xinfo('search') WHERE name = 'indexed'`).Scan(&cols); err != nil || cols != 0 {
					t.Errorf("search has %d columns named indexed (%v), want none", cols, err)
				}
			} else {
				if pending := pgCount(t, s, `SELECT gin_clean_pending_list('search_body'::regclass) + gin_clean_pending_list('search_grams'::regclass)`); pending != 0 {
					t.Errorf("%d pages pending in the GIN indexes after the migration, want 0", pending)
				}
				rs, err := s.db.q().query(ctx, `SELECT relname, array_to_string(reloptions, ',') FROM pg_class
					WHERE relname IN ('search_body', 'search_grams') AND relnamespace = current_schema()::regnamespace ORDER BY relname`)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for rs.Next() {
					var name, opts string
					if err := rs.Scan(&name, &opts); err != nil {
						t.Fatal(err)
					}
					got = append(got, name+": "+opts)
				}
				rs.Close()
				if want := []string{"search_body: fastupdate=off", "search_grams: fastupdate=off"}; !slices.Equal(got, want) {
					t.Errorf("the GIN indexes' options are %q, want %q", got, want)
				}
			}
			k := recall.Key{Project: "old", Session: "s"}
			if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntry(msg("a row of the new version: xylophonist1, 北京市, 张三"))); err != nil {
				t.Fatal(err)
			}
			for _, query := range []string{"xylophonist1", "北京市", "张三", `"row 1"`, "version"} {
				sameAsScan(t, s, recall.SearchOptions{Query: query}, 0, 3)
			}
			if p := hitRefs(t, s, recall.SearchOptions{Query: "xylophonist1", Limit: 50}); len(p) != 8 {
				t.Errorf("xylophonist1: %d hits %v, want 8 (7 of the old version, 1 new)", len(p), p)
			}
			checkFTS(t, s)
		})
	}
}
