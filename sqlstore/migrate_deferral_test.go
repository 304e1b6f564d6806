package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestMigrateOneDeferral opens a SQLite database at schema version 10
// whose search rows wait in the layer that version 11 removes: rows left
// out of the trigram index (the old tail, indexed = 0) beside rows in it.
// Migration 11 indexes the tail and drops it. Every row is then found as
// the scan finds it, the trigram index passes FTS5's integrity-check, and
// the rows of an append after the migration are found too.
func TestMigrateOneDeferral(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, ts, open := versionDatabase(t, "sqlite", 10)
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
		entries[i] = msg(fmt.Sprintf("row %d of the old version: xylophonist%d, 北京市, 张三", i+1, i%3)).Entry()
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
	}

	s := open()
	checkFTS(t, s)
	var cols int
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM pragma_table_xinfo('search') WHERE name = 'indexed'`).Scan(&cols); err != nil || cols != 0 {
		t.Errorf("search has %d columns named indexed (%v), want none", cols, err)
	}
	k := recall.Key{Project: "old", Session: "s"}
	if _, err := s.Append(ctx, k, recall.Guard{}, msg("a row of the new version: xylophonist1, 北京市, 张三").Entry()); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"xylophonist1", "北京市", "张三", `"row 1"`, "version"} {
		sameAsScan(t, s, recall.SearchOptions{Query: query}, 0, 3)
	}
	if p := hitRefs(t, s, recall.SearchOptions{Query: "xylophonist1", Limit: 50}); len(p) != 8 {
		t.Errorf("xylophonist1: %d hits %v, want 8 (7 of the old version, 1 new)", len(p), p)
	}
	checkFTS(t, s)
}
