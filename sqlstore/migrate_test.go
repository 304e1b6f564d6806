package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storekit"
)

// v1Database creates a database at schema version 1, as the previous
// release left it, and returns a querier on it (closed when the test
// ends), the way that release stored times, and a function that opens it
// with this package, migrating it.
func v1Database(t *testing.T, dialect string) (querier, func(time.Time) any, func() *Store) {
	t.Helper()
	return versionDatabase(t, dialect, 1)
}

// versionDatabase is v1Database at schema version v.
func versionDatabase(t *testing.T, dialect string, v int) (querier, func(time.Time) any, func() *Store) {
	t.Helper()
	ctx := context.Background()
	ms, err := loadMigrations(dialect)
	if err != nil {
		t.Fatal(err)
	}
	if dialect == "sqlite" {
		path := filepath.Join(t.TempDir(), "old.db")
		db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		q := sqlQuerier{r: db}
		if err := applyMigrations(ctx, q, ms[:v]); err != nil {
			t.Fatal(err)
		}
		return q, func(t time.Time) any { return t.UnixMicro() }, func() *Store {
			s, err := OpenSQLite(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	dsn, schema := testsvc.PostgresSchema(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if _, err := c.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	q := pgQuerier{c}
	if err := applyMigrations(ctx, q, ms[:v]); err != nil {
		t.Fatal(err)
	}
	return q, func(t time.Time) any { return t }, func() *Store {
		s, err := OpenPostgres(ctx, dsn, Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestMigrateUpdated opens a database written by the previous release,
// whose updated_at moved for every entry, pins and titles included, with
// this package. The migration recomputes updated_at from each log, as
// recall.Meta.Apply now does (the latest activity entry, never before the
// first entry), so Stat, List's order and Cleanup's age are right at once,
// and storekit.Verify finds nothing to report. It sets checked_seq to the
// end of each log whose item rows are all JSON objects, and leaves a log
// holding another program's damaged rows to be checked in full, so those
// are still caught. Nothing else changes.
func TestMigrateUpdated(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			q, ts, open := v1Database(t, dialect)
			base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			at := func(minutes int) time.Time { return base.Add(time.Duration(minutes) * time.Minute) }
			item := string(msg("hello"))
			type entry struct {
				kind, payload string
				min           int
			}
			pin := `{"pinned":true}`
			title := `{"title":"named","source":"user"}`
			sessions := []struct {
				id, subpath string
				log         []entry
				want        int // minutes of the recomputed updated_at
			}{
				// talked at 10, pinned at 40: the old code said 40
				{"pinned", "", []entry{{"item", item, 10}, {"meta", pin, 40}}, 10},
				// talked at 20, nothing since
				{"talked", "", []entry{{"item", item, 20}}, 20},
				// titled at 5, talked at 15, renamed at 50
				{"renamed", "", []entry{{"title", title, 5}, {"item", item, 15}, {"title", title, 50}}, 15},
				// only a title: Updated starts at the first entry
				{"titled", "", []entry{{"title", title, 30}}, 30},
				// cleared at 25, then labelled and unknown kinds
				{"cleared", "", []entry{{"item", item, 1}, {"clear", "", 25}, {"meta", `{"labels":["x"]}`, 45}, {"future", `{}`, 46}}, 25},
				// popped and compacted, then pinned
				{"compacted", "", []entry{{"item", item, 2}, {"item", item, 3}, {"pop", `{"seq":2}`, 4},
					{"compaction", `{"through":3,"replaced":1,"items":[` + item + `]}`, 6}, {"meta", pin, 48}}, 6},
				// a fork, then titled
				{"forked", "", []entry{{"fork", `{"key":{"project":"old","session":"talked"},"seq":1}`, 7}, {"item", item, 7}, {"title", title, 49}}, 7},
				// a subagent record, titled after its last item
				{"pinned", "subagents/a", []entry{{"item", item, 11}, {"title", title, 47}}, 11},
				// rows another program wrote: not JSON, and not an object
				// (a NUL byte after a whole object, which some SQLite
				// functions stop at, is no JSON either)
				{"damaged", "", []entry{{"item", item, 12}, {"item", `{x}`, 13}, {"item", `[1]`, 14}, {"item", "{\"a\":1}\x00}", 14}, {"meta", pin, 44}}, 14},
			}
			for _, s := range sessions {
				var sid int64
				last := s.log[len(s.log)-1]
				items := 0
				for _, e := range s.log {
					if e.kind == "item" {
						items++
					}
				}
				err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, created_at, updated_at, item_count, last_seq, pinned)
					VALUES ('old', $1, $2, $3, $4, $5, $6, $7) RETURNING sid`,
					s.id, s.subpath, ts(at(s.log[0].min)), ts(at(last.min)), items, len(s.log), last.payload == pin).Scan(&sid)
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range s.log {
					var payload any
					if e.payload != "" {
						payload = []byte(e.payload)
					}
					if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, $3, $4, $5)`,
						sid, i+1, e.kind, payload, ts(at(e.min))); err != nil {
						t.Fatal(err)
					}
				}
			}
			// fix the rows the log says otherwise about, as the old code kept them
			if _, err := q.exec(ctx, `UPDATE sessions SET item_count = 1 WHERE id IN ('compacted', 'cleared')`); err != nil {
				t.Fatal(err)
			}
			if _, err := q.exec(ctx, `UPDATE sessions SET item_count = 1 WHERE id = 'damaged'`); err != nil {
				t.Fatal(err)
			}
			if _, err := q.exec(ctx, `UPDATE sessions SET item_count = 0 WHERE id = 'cleared'`); err != nil {
				t.Fatal(err)
			}
			if _, err := q.exec(ctx, `UPDATE sessions SET title = 'named', title_source = 'user' WHERE id IN ('renamed', 'titled', 'forked') OR subpath <> ''`); err != nil {
				t.Fatal(err)
			}
			if _, err := q.exec(ctx, `UPDATE sessions SET labels = '["x"]' WHERE id = 'cleared'`); err != nil {
				t.Fatal(err)
			}
			if _, err := q.exec(ctx, `UPDATE sessions SET forked_from = '{"project":"old","session":"talked"}', fork_seq = 1 WHERE id = 'forked'`); err != nil {
				t.Fatal(err)
			}

			s := open()
			var version int
			if err := s.db.q().queryRow(ctx, `SELECT max(version) FROM recall_schema`).Scan(&version); err != nil || version != SchemaVersion {
				t.Fatalf("schema version %d (%v), want %d", version, err, SchemaVersion)
			}
			want := map[recall.Key]time.Time{}
			for _, c := range sessions {
				k := recall.Key{Project: "old", Session: c.id, Subpath: c.subpath}
				want[k] = at(c.want)
				m, err := s.Stat(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if !m.Updated.Equal(at(c.want)) {
					t.Errorf("%s: Updated %s after the migration, want %s (its last activity)", k, m.Updated.Format(time.TimeOnly), at(c.want).Format(time.TimeOnly))
				}
				if !m.Created.Equal(at(c.log[0].min)) || m.LastSeq != int64(len(c.log)) || m.Metadata != nil {
					t.Errorf("%s: the migration changed more: %+v", k, m)
				}
				// Healthy logs are checked through their end; the damaged
				// one's rows stay to be checked.
				wantChecked := m.LastSeq
				if c.id == "damaged" {
					wantChecked = 0
				}
				if checked := checkedSeq(t, s, k); checked != wantChecked {
					t.Errorf("%s: checked_seq %d after the migration, want %d", k, checked, wantChecked)
				}
			}
			dk := recall.Key{Project: "old", Session: "damaged"}
			if m, _ := s.Stat(ctx, dk); m.Corrupt != 3 || m.ItemCount != 1 {
				t.Errorf("the damaged session: Stat has Corrupt %d, ItemCount %d; want 3, 1", m.Corrupt, m.ItemCount)
			}
			if live, _, err := s.Items(ctx, dk, 0); err != nil || len(live) != 1 {
				t.Errorf("the damaged session: Items = %d items, %v; want 1", len(live), err)
			}
			// List's order is by the new Updated: "pinned" (10) no longer
			// comes first, "compacted" (6) is near the end.
			p, err := s.List(ctx, "old", recall.ListOptions{IncludeArchived: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range p.Sessions {
				got = append(got, m.Key.Session)
			}
			wantOrder := []string{"titled", "cleared", "talked", "renamed", "damaged", "pinned", "forked", "compacted"}
			if !slices.Equal(got, wantOrder) {
				t.Errorf("List order after the migration: %v, want %v", got, wantOrder)
			}
			// Cleanup's age: before minute 8, "forked" and the pinned
			// "compacted" (kept); "pinned" and the others are younger now.
			rep, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: at(8), DryRun: true})
			if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Key.Session != "forked" || rep.Kept != 1 {
				t.Errorf("Cleanup older than minute 8 = %+v, %v; want forked removed, compacted kept", rep, err)
			}
			if err := s.Remove(ctx, dk); err != nil {
				t.Fatal(err)
			}
			verify(t, s)

			// And the metadata column works on the migrated rows.
			k := recall.Key{Project: "old", Session: "talked"}
			if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"a": new("1")}}); err != nil {
				t.Fatal(err)
			}
			if m, _ := s.Stat(ctx, k); m.Metadata["a"] != "1" || !m.Updated.Equal(at(20)) {
				t.Errorf("after SetMetadata: %+v", m)
			}
			verify(t, s)
		})
	}
}

// TestMigrationKindsAreActivity: the kinds migration 0002 counts as
// activity are exactly those recall.Kind.IsActivity says are.
func TestMigrationKindsAreActivity(t *testing.T) {
	kinds := []recall.Kind{recall.KindItem, recall.KindTitle, recall.KindMeta, recall.KindPop, recall.KindRemove,
		recall.KindCreate, recall.KindClear, recall.KindCompaction, recall.KindFork}
	for _, d := range []string{"sqlite", "postgres"} {
		ms, err := loadMigrations(d)
		if err != nil {
			t.Fatal(err)
		}
		body := ms[1].sql
		_, list, ok := strings.Cut(body, "kind IN (")
		list, _, ok2 := strings.Cut(list, ")")
		if !ok || !ok2 {
			t.Fatalf("%s: no kind list in %s", d, ms[1].name)
		}
		for _, k := range kinds {
			if in := strings.Contains(list, "'"+string(k)+"'"); in != k.IsActivity() {
				t.Errorf("%s: %s lists %s: %t, but IsActivity is %t", d, ms[1].name, k, in, k.IsActivity())
			}
		}
	}
}

// TestUpdatedIsActivity: on both write paths, Updated moves for items
// and other activity, and not for titles, pins, labels or metadata, which
// leave List's order alone too.
func TestUpdatedIsActivity(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
		base := storekit.Now().Add(-time.Hour)
		at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
		add := func(k recall.Key, sec int, es ...recall.Entry) {
			t.Helper()
			for i := range es {
				es[i].Time = at(sec)
			}
			if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
				t.Fatal(err)
			}
		}
		updated := func(k recall.Key) time.Time {
			m, err := s.Stat(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			return m.Updated
		}
		order := func() string {
			p, err := s.List(ctx, "p", recall.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range p.Sessions {
				ids = append(ids, m.Key.Session)
			}
			return strings.Join(ids, ",")
		}
		add(a, 1, msg("a1").Entry())                           // fast path, new row
		add(b, 2, msg("b1").Entry())                           // fast path, new row
		add(a, 3, recall.ItemEntries(msg("a2"), msg("a3"))...) // fast path, existing row
		if u := updated(a); !u.Equal(at(3)) {
			t.Fatalf("after items: Updated %v, want %v", u, at(3))
		}
		pinned := true
		v := "1"
		add(a, 10, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser}))
		add(a, 11, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &pinned, Labels: []string{"l"}}))
		add(a, 12, recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: map[string]*string{"k": &v}}))
		if u := updated(a); !u.Equal(at(3)) {
			t.Errorf("after a title, a pin, labels and metadata: Updated %v, want %v", u, at(3))
		}
		if o := order(); o != "a,b" {
			t.Errorf("List order %s, want a,b (a's last activity is later)", o)
		}
		add(b, 13, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser}))
		if o := order(); o != "a,b" {
			t.Errorf("a title moved b up: List order %s", o)
		}
		add(b, 14, msg("b2").Entry(), recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &pinned})) // general path
		if u := updated(b); !u.Equal(at(14)) {
			t.Errorf("after an item on the general path: Updated %v, want %v", u, at(14))
		}
		add(a, 20, recall.Entry{Kind: recall.KindClear})
		if u := updated(a); !u.Equal(at(20)) {
			t.Errorf("after a clear: Updated %v, want %v", u, at(20))
		}
		add(a, 30, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "u", Source: recall.TitleUser}))
		add(a, 25, msg("late clock").Entry()) // an item stamped before the title: Updated is the latest activity
		if u := updated(a); !u.Equal(at(25)) {
			t.Errorf("Updated %v, want %v", u, at(25))
		}
		verify(t, s)
	})
}

// TestMetadataColumn: metadata is stored in its column (a JSON object),
// returned by Stat, Load and List, kept across a reopen, merged and
// cleared by meta entries through recall.Meta.Apply, and NULL when empty.
func TestMetadataColumn(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "md"}
		md := map[string]string{"user": "ann", "topic": "tax \u00e9t\u00e9 \"quoted\""}
		if _, err := recall.NewSession(s, k).Create(ctx, recall.CreateOptions{Title: "x", Metadata: md}); err != nil {
			t.Fatal(err)
		}
		check := func(want map[string]string) {
			t.Helper()
			m, err := s.Stat(ctx, k)
			lm, _, err2 := s.Load(ctx, k)
			p, err3 := s.List(ctx, "p", recall.ListOptions{})
			if err != nil || err2 != nil || err3 != nil || len(p.Sessions) != 1 {
				t.Fatalf("%v %v %v %d", err, err2, err3, len(p.Sessions))
			}
			for name, got := range map[string]map[string]string{"Stat": m.Metadata, "Load": lm.Metadata, "List": p.Sessions[0].Metadata} {
				if len(want) == 0 && got != nil || len(want) > 0 && !mapsEqual(got, want) {
					t.Errorf("%s: Metadata %v, want %v", name, got, want)
				}
			}
			var raw []byte
			if err := s.db.q().queryRow(ctx, `SELECT metadata FROM sessions WHERE id = $1`, k.Session).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				if raw != nil {
					t.Errorf("empty metadata stored as %q, want NULL", raw)
				}
				return
			}
			var col map[string]string
			if err := json.Unmarshal(raw, &col); err != nil || !mapsEqual(col, want) {
				t.Errorf("metadata column %q (%v), want %v", raw, err, want)
			}
		}
		check(md)
		gone := (*string)(nil)
		two := "2"
		if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"user": gone, "n": &two}}); err != nil {
			t.Fatal(err)
		}
		check(map[string]string{"topic": md["topic"], "n": "2"})
		if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true}); err != nil {
			t.Fatal(err)
		}
		check(nil)
		if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"z": new("last")}}); err != nil {
			t.Fatal(err)
		}
		check(map[string]string{"z": "last"})
		verify(t, s)
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
