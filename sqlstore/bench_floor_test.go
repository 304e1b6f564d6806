package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// Issue 18's figures at the floor, each against its baseline in the same
// run (docs/BENCHMARKS.md, "Performance at the floor: SQL stores"):
//
//	go test -run '^$' -bench 'Durable|ListPlain|PopAppend' -benchtime 2s -count 3 ./sqlstore/
//
// Where a loop runs several operations it also reports the ratio of their
// medians (-p50): on a machine shared with other work, a sum takes in
// every stall another process causes, and the median does not.

// sdkSchema is the OpenAI Agents SDK's SQLiteSession schema
// (agents/memory/sqlite_session.py): a sessions table and a messages
// table indexed on (session_id, created_at).
const sdkSchema = `
CREATE TABLE IF NOT EXISTS agent_sessions (
	session_id TEXT PRIMARY KEY,
	created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
	updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS agent_messages (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT NOT NULL,
	message_data TEXT NOT NULL,
	created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
	FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_agent_messages_session_id ON agent_messages (session_id, created_at);`

// sdkTurn returns the SDK's add_items on its schema, in a database with
// Python's sqlite3 defaults (rollback journal, synchronous=FULL: durable):
// one transaction that makes sure of the session row, inserts each item
// and touches updated_at.
func sdkTurn(b testing.TB) func(items []string) error {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "sdk.db")+"?_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, sdkSchema); err != nil {
		b.Fatal(err)
	}
	return func(items []string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)`, "turns"); err != nil {
			return err
		}
		for _, it := range items {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)`, "turns", it); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE agent_sessions SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?`, "turns"); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// BenchmarkDurableTurn appends a turn of three items to one session, in
// turn on recall's SQLite store with the default synchronous=FULL, on the
// same store with synchronous=NORMAL, and on the SDK's schema (FULL), and
// reports each one's ns/op and the ratios to the SDK's.
func BenchmarkDurableTurn(b *testing.B) {
	ctx := context.Background()
	open := func(sync SQLiteSync) *recall.StoreSession {
		s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "recall.db"), Options{SQLiteSync: sync})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return recall.NewSession(s, recall.Key{Project: "bench", Session: "turns"})
	}
	full, normal, sdk := open(SyncFull), open(SyncNormal), sdkTurn(b)
	turn := []recall.Item{benchItem, benchItem, benchItem}
	texts := []string{string(benchItem), string(benchItem), string(benchItem)}
	var tf, tn, ts time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := full.AddItems(ctx, turn...); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := normal.AddItems(ctx, turn...); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := sdk(texts); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		tf, tn, ts = tf+t1.Sub(t0), tn+t2.Sub(t1), ts+t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tf.Nanoseconds())/n, "full-ns/op")
	b.ReportMetric(float64(tn.Nanoseconds())/n, "normal-ns/op")
	b.ReportMetric(float64(ts.Nanoseconds())/n, "sdk-ns/op")
	b.ReportMetric(tf.Seconds()/ts.Seconds(), "full/sdk")
	b.ReportMetric(tn.Seconds()/ts.Seconds(), "normal/sdk")
}

// plainListSQL is issue 18's baseline of a list: the newest 50 main
// sessions off the (updated_at DESC) index, the columns a list shows,
// scanned into plain variables.
const plainListSQL = `SELECT project, id, title, updated_at, item_count FROM sessions
	WHERE subpath = '' ORDER BY updated_at DESC LIMIT 50`

// BenchmarkListPlain lists the first page (50) of 1,000 and 10,000
// sessions, List against plainListSQL in the same run: list-ns/op,
// plain-ns/op and list/plain (issue 18: at most 2). wide-ns/op is a third
// query of the same run: List's own columns (metaCols) scanned into plain
// variables, which tells the driver's cost of the columns from List's.
func BenchmarkListPlain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, d := range []struct {
			name string
			open func(testing.TB) *Store
		}{{"sqlite", newSQLite}, {"postgres", newPostgres}} {
			b.Run(fmt.Sprintf("%s/%d", d.name, n), func(b *testing.B) {
				s := d.open(b)
				ctx := context.Background()
				phase(b, n, benchWriters, func(g int) error {
					k := recall.Key{Project: fmt.Sprint("p", g%4), Session: recall.NewSessionID()}
					_, err := s.Append(ctx, k, recall.Guard{}, benchItem.Entry())
					return err
				})
				analyze(b, s)
				raw := rawQuery(b, s, plainListSQL, func(r rows) error {
					var (
						project, id, title string
						updated            any
						items              int64
					)
					return r.Scan(&project, &id, &title, &updated, &items)
				})
				// The columns List reads (metaCols), scanned into plain
				// variables: what the driver's per-column cost comes to.
				wide := rawQuery(b, s, `SELECT `+metaCols+` FROM sessions WHERE subpath = '' AND NOT archived
					ORDER BY updated_at DESC, project, id, subpath LIMIT 51`, func(r rows) error {
					vs := make([]any, 20)
					for i := range vs {
						vs[i] = new(any)
					}
					return r.Scan(vs...)
				})
				ops := [3]func() error{
					func() error {
						p, err := s.List(ctx, "", recall.ListOptions{Limit: 50})
						if err != nil || len(p.Sessions) != 50 {
							return fmt.Errorf("list: %d sessions, %v", len(p.Sessions), err)
						}
						return nil
					},
					func() error {
						if n, err := raw(); err != nil || n != 50 {
							return fmt.Errorf("plain query: %d rows, %v", n, err)
						}
						return nil
					},
					func() error {
						if n, err := wide(); err != nil || n != 51 {
							return fmt.Errorf("wide query: %d rows, %v", n, err)
						}
						return nil
					},
				}
				reportTrio(b, ops, "list", "plain", "wide")
			})
		}
	}
}

// reportTrio runs ops[0] (the store), ops[1] (its baseline) and ops[2]
// (a third query) in one loop, starting each iteration with the next one
// in turn, so that no op always runs first (after the loop's own work) or
// right after another. It reports each one's mean ns/op, name0/name1 as a
// ratio of the sums, and the ratios of the medians (-p50): the median of
// per-call times is what one call costs when no other process takes the
// CPU from it, which on a shared machine a sum is not.
func reportTrio(b *testing.B, ops [3]func() error, names ...string) {
	var (
		sum [3]time.Duration
		all [3][]time.Duration
		i   int
	)
	for b.Loop() {
		for j := range 3 {
			k := (i + j) % 3
			t0 := time.Now()
			if err := ops[k](); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			sum[k] += d
			all[k] = append(all[k], d)
		}
		i++
	}
	var med [3]float64
	for k := range 3 {
		slices.Sort(all[k])
		med[k] = float64(all[k][len(all[k])/2].Nanoseconds())
		b.ReportMetric(float64(sum[k].Nanoseconds())/float64(b.N), names[k]+"-ns/op")
	}
	b.ReportMetric(sum[0].Seconds()/sum[1].Seconds(), names[0]+"/"+names[1])
	b.ReportMetric(med[0]/med[1], names[0]+"/"+names[1]+"-p50")
	b.ReportMetric(med[2]/med[1], names[2]+"/"+names[1]+"-p50")
}

// newSQLiteFull is newSQLite with the default synchronous=FULL.
func newSQLiteFull(t testing.TB) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkPopAppend appends an item to a session and pops it, in turn,
// on the same store: pop-ns/op against append-ns/op, and pop/append
// (issue 18: at most 1.5 on PostgreSQL), as a ratio of the sums and of
// the medians (-p50, see reportTrio).
func BenchmarkPopAppend(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *Store
	}{{"sqlite", newSQLiteFull}, {"postgres", newPostgres}} {
		b.Run(d.name, func(b *testing.B) {
			s := d.open(b)
			ctx := context.Background()
			k := recall.Key{Project: "bench", Session: "pops"}
			// a session of 1,000 items, the pops and appends at its end
			for range 10 {
				es := make([]recall.Entry, 100)
				for i := range es {
					es[i] = benchItem.Entry()
				}
				if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
					b.Fatal(err)
				}
			}
			var (
				ta, tp time.Duration
				as, ps []time.Duration
			)
			for b.Loop() {
				t0 := time.Now()
				if _, err := s.Append(ctx, k, recall.Guard{}, benchItem.Entry()); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if it, err := s.Pop(ctx, k); err != nil || it == nil {
					b.Fatalf("pop = %s, %v", it, err)
				}
				t2 := time.Now()
				ta, tp = ta+t1.Sub(t0), tp+t2.Sub(t1)
				as, ps = append(as, t1.Sub(t0)), append(ps, t2.Sub(t1))
			}
			slices.Sort(as)
			slices.Sort(ps)
			b.ReportMetric(float64(ta.Nanoseconds())/float64(b.N), "append-ns/op")
			b.ReportMetric(float64(tp.Nanoseconds())/float64(b.N), "pop-ns/op")
			b.ReportMetric(tp.Seconds()/ta.Seconds(), "pop/append")
			b.ReportMetric(float64(ps[len(ps)/2])/float64(as[len(as)/2]), "pop/append-p50")
		})
	}
}
