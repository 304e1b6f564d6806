package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storetest"
)

// Benchmarks, each on SQLite and PostgreSQL, each against a raw baseline
// in the same run: the least a hand-written client of the same driver does
// for the same job. Run them with
//
//	go test -run '^$' -bench . -benchtime 2s -count 5 ./sqlstore/
//
// Every benchmark reports store-ns/op, raw-ns/op and x-raw, the store's
// speed as a fraction of raw (raw time / store time; 1 is as fast). The
// store and the baseline alternate, so both see the same machine: a shared
// machine's load comes and goes. docs/BENCHMARKS.md has the figures.

// benchItem is a typical conversation item, about 200 bytes.
var benchItem = recall.Message("assistant", "The file store keeps one JSONL log per session; the SQL stores keep a sessions table and an entries table.")

func benchDialects(b *testing.B, f func(b *testing.B, s *Store)) {
	b.Run("sqlite", func(b *testing.B) { f(b, newSQLite(b)) })
	b.Run("postgres", func(b *testing.B) { f(b, newPostgres(b)) })
}

// rawQuery runs a hand-written query on the store's own tables, through
// the store's reader (SQLite, prepared) or pool (PostgreSQL), and returns
// how many rows it read.
func rawQuery(b *testing.B, s *Store, query string, scan func(rows) error) func(args ...any) (int, error) {
	ctx := context.Background()
	var q querier
	switch db := s.db.(type) {
	case *liteBackend:
		st, err := db.r.PrepareContext(ctx, query)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return func(args ...any) (int, error) {
			rs, err := st.QueryContext(ctx, args...)
			if err != nil {
				return 0, err
			}
			return scanAll(sqlRows{rs}, scan)
		}
	case *pgBackend:
		q = pgQuerier{db.pool}
	}
	return func(args ...any) (int, error) {
		rs, err := q.query(ctx, query, args...)
		if err != nil {
			return 0, err
		}
		return scanAll(rs, scan)
	}
}

// analyze updates PostgreSQL's statistics after a benchmark's setup, as
// autovacuum would in a database that grew gradually: without them the
// planner guesses, and for a table filled a moment ago, guesses badly.
func analyze(b *testing.B, s *Store) {
	if _, ok := s.db.(*pgBackend); ok {
		if _, err := s.db.q().exec(context.Background(), `ANALYZE sessions; ANALYZE entries`); err != nil {
			b.Fatal(err)
		}
	}
}

func scanAll(rs rows, scan func(rows) error) (int, error) {
	defer rs.Close()
	n := 0
	for rs.Next() {
		if err := scan(rs); err != nil {
			return n, err
		}
		n++
	}
	return n, rs.Err()
}

// interleave runs store and raw alternately, b.N times each, and reports
// their costs and x-raw.
func interleave(b *testing.B, store, raw func() error) {
	var st, rt time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := store(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		rt += time.Since(t1)
		st += t1.Sub(t0)
	}
	b.ReportMetric(float64(st.Nanoseconds())/float64(b.N), "store-ns/op")
	b.ReportMetric(float64(rt.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(rt.Seconds()/st.Seconds(), "x-raw")
}

// BenchmarkGetItems20 reads the newest 20 items of a session of 2000:
// Session.GetItems against a SELECT of the newest 20 payloads by the
// session's sid and seqs, both known in advance. (The obvious hand-written
// "WHERE session = $1 ORDER BY seq DESC LIMIT 20" is not the baseline:
// PostgreSQL, estimating an average session, plans it as a scan of the
// whole session's log and a sort, and is slower than the store.)
func BenchmarkGetItems20(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		k := recall.Key{Project: "bench", Session: "items"}
		for range 100 {
			es := make([]recall.Entry, 20)
			for i := range es {
				es[i] = benchItem.Entry()
			}
			if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
				b.Fatal(err)
			}
		}
		analyze(b, s)
		sid, err := sessionID(ctx, s.db.q(), k)
		if err != nil {
			b.Fatal(err)
		}
		raw := rawQuery(b, s, `SELECT payload FROM entries WHERE session = $1 AND seq > $2 ORDER BY seq DESC`,
			func(r rows) error {
				var payload []byte
				return r.Scan(&payload)
			})
		sess := recall.NewSession(s, k)
		interleave(b, func() error {
			items, err := sess.GetItems(ctx, 20)
			if err == nil && len(items) != 20 {
				err = fmt.Errorf("%d items", len(items))
			}
			return err
		}, func() error {
			n, err := raw(sid, 2000-20)
			if err == nil && n != 20 {
				err = fmt.Errorf("%d rows", n)
			}
			return err
		})
	})
}

// BenchmarkListFirstPage reads the first page (50) of 2000 sessions in 4
// projects, every project listed: List against a SELECT of the same
// columns in the same order, scanned into plain variables.
func BenchmarkListFirstPage(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		phase(b, 2000, benchWriters, func(g int) error {
			k := recall.Key{Project: fmt.Sprint("p", g%4), Session: recall.NewSessionID()}
			_, err := s.Append(ctx, k, recall.Guard{}, benchItem.Entry())
			return err
		})
		analyze(b, s)
		raw := rawQuery(b, s, `SELECT `+metaCols+` FROM sessions WHERE subpath = '' AND NOT archived
			ORDER BY updated_at DESC, project, id, subpath LIMIT 51`,
			func(r rows) error {
				var (
					sid, items, last, in, out, total int64
					project, id, sub, title, source  string
					created, updated                 any
					archived, pinned                 bool
					labels, metadata, forked         []byte
					forkSeq                          sql.NullInt64
				)
				return r.Scan(&sid, &project, &id, &sub, &title, &source, &created, &updated, &items, &last,
					&archived, &pinned, &labels, &metadata, &forked, &forkSeq, &in, &out, &total)
			})
		interleave(b, func() error {
			p, err := s.List(ctx, "", recall.ListOptions{})
			if err == nil && len(p.Sessions) != recall.DefaultListLimit {
				err = fmt.Errorf("%d sessions", len(p.Sessions))
			}
			return err
		}, func() error {
			n, err := raw()
			if err == nil && n != recall.DefaultListLimit+1 {
				err = fmt.Errorf("%d rows", n)
			}
			return err
		})
	})
}

// benchWriters is the concurrency of BenchmarkAppendParallel: that many
// goroutines, each appending to its own session.
const benchWriters = 16

// phaseOps is how many ops a phase of appendRatio runs.
const phaseOps = 256

// BenchmarkAppendParallel measures append throughput with benchWriters
// goroutines appending one item per op, each to its own session, against
// a raw loop of single-row INSERTs into a table of the same shape as
// entries, through the same driver and settings, at the same concurrency.
// The two alternate in phases of phaseOps ops; x-raw is store throughput /
// raw throughput.
func BenchmarkAppendParallel(b *testing.B) {
	benchRatio(b, benchWriters)
}

// BenchmarkAppendSerial is BenchmarkAppendParallel with one goroutine:
// the cost of an append when nothing shares it.
func BenchmarkAppendSerial(b *testing.B) {
	benchRatio(b, 1)
}

func benchRatio(b *testing.B, writers int) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *Store
		raw  func(testing.TB) func(g, seq int) error
	}{{"sqlite", newSQLite, rawSQLite}, {"postgres", newPostgres, rawPostgres}} {
		b.Run(d.name, func(b *testing.B) { appendRatio(b, d.open(b), d.raw(b), writers) })
	}
}

// appendRatio runs b.N store appends and b.N raw inserts, writers
// goroutines at a time, in alternating phases, and reports the cost of
// each and their throughput ratio.
func appendRatio(b *testing.B, s *Store, raw func(g, seq int) error, writers int) {
	ctx := context.Background()
	key := func(g int) recall.Key { return recall.Key{Project: "bench", Session: fmt.Sprint("w", g)} }
	seqs := make([]int, writers) // the raw loop's next seq, per goroutine
	var storeT, rawT time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(phaseOps, b.N-done)
		storeT += phase(b, n, writers, func(g int) error {
			_, err := s.Append(ctx, key(g), recall.Guard{}, benchItem.Entry())
			return err
		})
		rawT += phase(b, n, writers, func(g int) error {
			seqs[g]++
			return raw(g, seqs[g])
		})
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(storeT.Nanoseconds())/float64(b.N), "store-ns/op")
	b.ReportMetric(float64(rawT.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(rawT.Seconds()/storeT.Seconds(), "x-raw")
	var total int64
	for g := range writers {
		if m, err := s.Stat(ctx, key(g)); err == nil {
			total += m.LastSeq
		}
	}
	if total != int64(b.N) {
		b.Fatalf("%d appends stored, want %d", total, b.N)
	}
}

// phase runs n calls of op spread over writers goroutines (op gets its
// goroutine's number) and returns how long they took.
func phase(b *testing.B, n, writers int, op func(g int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := time.Now()
	for g := range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := op(g); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return elapsed
}

// rawSQLite returns the SQLite baseline: a single-row INSERT into a new
// database with the store's writer settings (WAL, synchronous=NORMAL, one
// connection), each its own transaction.
func rawSQLite(b testing.TB) func(g, seq int) error {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "raw.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, rawTable("BLOB", "INTEGER")); err != nil {
		b.Fatal(err)
	}
	// prepared, as the store's append statements are
	st, err := db.PrepareContext(ctx, rawInsert)
	if err != nil {
		b.Fatal(err)
	}
	return func(g, seq int) error {
		_, err := st.ExecContext(ctx, g, seq, "item", []byte(benchItem), time.Now().UnixMicro())
		return err
	}
}

// rawPostgres returns the PostgreSQL baseline: a single-row INSERT through
// a pgx pool made from the same DSN as the store's (so the same pool
// size), in a fresh schema.
func rawPostgres(b testing.TB) func(g, seq int) error {
	ctx := context.Background()
	dsn, schema := testsvc.PostgresSchema(b)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; "+rawTable("bytea", "timestamptz")); err != nil {
		b.Fatal(err)
	}
	return func(g, seq int) error {
		_, err := pool.Exec(ctx, rawInsert, g, seq, "item", []byte(benchItem), time.Now())
		return err
	}
}

// rawTable is the baseline's table: entries without the session table.
func rawTable(blob, timeType string) string {
	return `CREATE TABLE raw_entries (session bigint NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
		payload ` + blob + `, time ` + timeType + ` NOT NULL, PRIMARY KEY (session, seq))`
}

const rawInsert = `INSERT INTO raw_entries (session, seq, kind, payload, time) VALUES ($1, $2, $3, $4, $5)`

// forkBenchItem returns item i of BenchmarkFork10k's session: a message
// of 300 to 2,000 bytes, the sizes of the side-by-side benchmark's items.
func forkBenchItem(i int) recall.Item {
	return recall.Message("assistant", fmt.Sprint(i, " ", strings.Repeat("x", 240+i*7919%1700)))
}

// BenchmarkFork10k forks a session of 10,000 items of 300 to 2,000 bytes,
// the side-by-side benchmark's W4: the native fork (storekit.Forker)
// against recall.StoreSession.Fork's fallback (Load, then Append with IfNew) on the
// same store, alternately and each first every other time. It reports
// native-ns/op, fallback-ns/op and x-fallback, the native fork's speed as
// a multiple of the fallback's (fallback time / native time; above 1 is
// faster; see storetest.BenchmarkFork).
func BenchmarkFork10k(b *testing.B) {
	benchDialects(b, benchFork)
}

// benchFork is BenchmarkFork10k on s.
func benchFork(b *testing.B, s *Store) {
	ctx := context.Background()
	src := recall.Key{Project: "bench", Session: "big"}
	for i := 0; i < 10000; i += 1000 {
		batch := make([]recall.Item, 1000)
		for j := range batch {
			batch[j] = forkBenchItem(i + j)
		}
		if _, err := s.Append(ctx, src, recall.Guard{}, recall.ItemEntries(batch...)...); err != nil {
			b.Fatal(err)
		}
	}
	analyze(b, s)
	storetest.BenchmarkFork(b, s, src)
}

// BenchmarkListPinned lists the pinned sessions (5) of a project of 200
// sessions and of one of 20,000, alternately within one loop, and, as the
// baseline a caller without ListOptions.Pinned had, the 20,000-session
// project listed whole and filtered. It reports each per listing and the
// ratios x-200 (the large project's pinned listing / the small one's; 1
// would be the same cost) and x-scan (the whole listing / the large
// project's pinned listing).
func BenchmarkListPinned(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		for _, n := range []int{200, 20000} {
			project := fmt.Sprint("p", n)
			phase(b, n, benchWriters, func(int) error {
				_, err := s.Append(ctx, recall.Key{Project: project, Session: recall.NewSessionID()}, recall.Guard{}, benchItem.Entry())
				return err
			})
			all, err := s.List(ctx, project, recall.ListOptions{Limit: -1})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 5 {
				if _, err := recall.NewSession(s, all.Sessions[i*n/5].Key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
					b.Fatal(err)
				}
			}
		}
		analyze(b, s)
		storetest.BenchPinnedListing(b, s, "p200", "p20000")
	})
}
