package sqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/search"
)

// The search benchmarks run on a synthetic corpus of searchCorpusSessions
// main sessions of 100 items each (RECALL_BENCH_SEARCH_SESSIONS, default
// 10,000: 1,000,000 items), mixed English and Chinese, written through
// Import (so the search rows are the store's own). The corpus is built
// once and kept, keyed by its size: the SQLite file in
// $TMPDIR/recall-bench-search, the PostgreSQL schema
// recall_bench_search_<sessions>. Building it takes minutes.
//
// The terms: "xylophonist" in 5 items (rare), "error" in about one item in
// ten (common), the phrase "quick brown fox" in about one in a thousand,
// "北京市" (three CJK characters, the trigram index serves it) in about
// one in five hundred, and "张三" (two, below the trigram index) as often.

// searchCorpusItems is the number of items of a corpus session.
const searchCorpusItems = 100

func searchCorpusSessions() int {
	if n, err := strconv.Atoi(os.Getenv("RECALL_BENCH_SEARCH_SESSIONS")); err == nil && n > 0 {
		return n
	}
	return 10_000
}

// corpusText returns the text of an item of the corpus.
func corpusText(r *rand.Rand, rare bool) string {
	const syll = "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu za ze zi zo zu"
	const han = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴"
	words := strings.Fields(syll)
	hanr := []rune(han)
	var b strings.Builder
	n := 8 + r.IntN(20)
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		if r.IntN(10) < 3 {
			for range 2 + r.IntN(6) {
				b.WriteRune(hanr[r.IntN(len(hanr))])
			}
			continue
		}
		for range 1 + r.IntN(3) {
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	switch {
	case rare:
		b.WriteString(" the xylophonist played")
	case r.IntN(10) == 0:
		b.WriteString(" an error occurred")
	}
	if r.IntN(1000) == 0 {
		b.WriteString(" the quick brown fox")
	}
	if r.IntN(500) == 0 {
		b.WriteString(" 我住在北京市")
	}
	if r.IntN(500) == 0 {
		b.WriteString(" 我叫张三")
	}
	return b.String()
}

// searchCorpus returns a store holding the corpus, building it if needed.
func searchCorpus(b *testing.B, dialect string) *Store {
	b.Helper()
	ctx := context.Background()
	n := searchCorpusSessions()
	var s *Store
	var err error
	switch dialect {
	case "sqlite":
		dir := filepath.Join(os.TempDir(), "recall-bench-search")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		s, err = OpenSQLite(ctx, filepath.Join(dir, fmt.Sprintf("corpus-%d.db", n)), Options{})
	default:
		s, err = OpenPostgres(ctx, testsvc.PostgresDSN(b), Options{Schema: fmt.Sprintf("recall_bench_search_%d", n)})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var have int
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM sessions`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == n {
		if dialect == "postgres" {
			// As autovacuum would have by now: the planner's statistics
			// and the visibility map (index-only scans).
			if _, err := s.db.q().exec(ctx, `VACUUM ANALYZE sessions, entries, search`); err != nil {
				b.Fatal(err)
			}
		}
		return s
	}
	if have != 0 {
		b.Fatalf("the corpus store holds %d sessions, not 0 or %d: remove it", have, n)
	}
	start := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	total := n * searchCorpusItems
	rare := map[int]bool{}
	for len(rare) < 5 {
		rare[r.IntN(total)] = true
	}
	for i := range n {
		k := recall.Key{Project: fmt.Sprintf("proj%02d", i%50), Session: fmt.Sprintf("s%06d", i)}
		at := base.Add(time.Duration(r.IntN(365*24*60)) * time.Minute)
		es := make([]recall.Entry, searchCorpusItems)
		for j := range es {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			es[j] = recall.Message(role, corpusText(r, rare[i*searchCorpusItems+j])).Entry()
			es[j].Seq = int64(j + 1)
			es[j].Time = at.Add(time.Duration(j) * time.Minute)
		}
		if _, err := s.Import(ctx, k, es...); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("built the %s corpus (%d sessions, %d items) in %s", dialect, n, total, time.Since(start).Round(time.Second))
	if dialect == "postgres" {
		if _, err := s.db.q().exec(ctx, `VACUUM ANALYZE sessions, entries, search`); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkSearch measures the first page of hits (20) for each kind of
// term on the corpus, through the index (native) and, for the rare term,
// through search.Scan (scan), the fallback that loads every log:
// the baseline of the same run. RECALL_BENCH_SEARCH_SCAN=0 skips the
// scan, which takes seconds per search on the full corpus.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			s := searchCorpus(b, dialect)
			for _, c := range []struct{ name, query string }{
				{"rare", "xylophonist"},
				{"common", "error"},
				{"phrase", `"quick brown fox"`},
				{"cjk3", "北京市"},
				{"cjk2", "张三"},
				{"two-words", "error bakuda"},
			} {
				b.Run(c.name, func(b *testing.B) {
					opts := recall.SearchOptions{Query: c.query}
					hits := 0
					for b.Loop() {
						p, err := s.Search(ctx, opts)
						if err != nil {
							b.Fatal(err)
						}
						hits = len(p.Hits)
					}
					b.ReportMetric(float64(hits), "hits")
				})
			}
			if os.Getenv("RECALL_BENCH_SEARCH_SCAN") != "0" {
				b.Run("rare-scan", func(b *testing.B) {
					opts := recall.SearchOptions{Query: "xylophonist"}
					for b.Loop() {
						if _, err := search.Scan(ctx, s, opts); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.Run("size", func(b *testing.B) {
				for b.Loop() {
				}
				reportSizes(b, s, dialect)
			})
		})
	}
}

// reportSizes reports the bytes of the logs (the entries table with its
// index) and of the search index (the search table, its indexes and the
// trigram index).
func reportSizes(b *testing.B, s *Store, dialect string) {
	ctx := context.Background()
	var logs, index int64
	if dialect == "sqlite" {
		q := `SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN `
		if err := s.db.q().queryRow(ctx, q+`('entries', 'sqlite_autoindex_entries_1')`).Scan(&logs); err != nil {
			b.Logf("dbstat: %v", err)
			return
		}
		if err := s.db.q().queryRow(ctx, q+`('search', 'search_time', 'sqlite_autoindex_search_1') OR name LIKE 'search_fts%'`).Scan(&index); err != nil {
			b.Fatal(err)
		}
	} else {
		if err := s.db.q().queryRow(ctx, `SELECT pg_total_relation_size('entries'), pg_total_relation_size('search')`).Scan(&logs, &index); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(logs)/1e6, "logs-MB")
	b.ReportMetric(float64(index)/1e6, "index-MB")
	b.ReportMetric(float64(index)/float64(logs), "index/logs")
}

// benchKey is session i of the append benchmarks' store.
func benchKey(i int) recall.Key { return recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)} }

// fillSessions appends 100,000 corpus items to 100 sessions (benchKey 0
// to 99), in batches of 100: the store the append benchmarks start from.
func fillSessions(b *testing.B, s *Store, r *rand.Rand) {
	b.Helper()
	for i := range 1000 {
		es := make([]recall.Entry, 100)
		for j := range es {
			es[j] = msg(corpusText(r, false)).Entry()
		}
		if _, err := s.Append(context.Background(), benchKey(i%100), recall.Guard{}, es...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchCatchUp measures what SQLite's search rows cost a search
// that writes them (see searchbehind.go): each round appends one item to
// each of 100 sessions of a store holding 100,000 items (untimed), then
// searches twice for a rare word. The first search writes the 100
// entries' rows, in one transaction, before it reads (first-ns); the
// second finds nothing to write (again-ns), the baseline of the same run.
// catchup-ns/entry is their difference per entry written. synchronous is
// FULL, as in BenchmarkAppendSearch/sqlite.
func BenchmarkSearchCatchUp(b *testing.B) {
	ctx := context.Background()
	s := newSQLiteFull(b)
	r := rand.New(rand.NewPCG(5, 6))
	fillSessions(b, s, r)
	opts := recall.SearchOptions{Query: "xylophonist"}
	if _, err := s.Search(ctx, opts); err != nil {
		b.Fatal(err)
	}
	var first, again time.Duration
	for b.Loop() {
		b.StopTimer()
		for i := range 100 {
			if _, err := s.Append(ctx, benchKey(i), recall.Guard{}, msg(corpusText(r, false)).Entry()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for _, d := range []*time.Duration{&first, &again} {
			t0 := time.Now()
			if _, err := s.Search(ctx, opts); err != nil {
				b.Fatal(err)
			}
			*d += time.Since(t0)
		}
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-ns")
	b.ReportMetric(float64(again.Nanoseconds())/float64(b.N), "again-ns")
	b.ReportMetric(float64((first-again).Nanoseconds())/float64(100*b.N), "catchup-ns/entry")
}

// BenchmarkAppendSearch measures what the search rows add to an append:
// one message of about 150 bytes per call, to one of 100 sessions, on a
// store already holding 100,000 indexed items, alternately with the
// search rows written (indexed) and without (plain: the same store with
// the maintenance skipped, the baseline of the same run). It reports
// plain-ns/op, indexed-ns/op and indexed/plain, a ratio of the sums,
// which counts the rare appends that write many rows (SQLite, see
// searchbehind.go) and the WAL checkpoints whichever append meets them, and
// of the medians (-p50), what a typical append costs. Each append is a committed
// transaction: on SQLite with the default synchronous=FULL (sqlite) and
// with NORMAL (sqlite-normal); on PostgreSQL a commit that waits for its
// WAL flush.
func BenchmarkAppendSearch(b *testing.B) {
	ctx := context.Background()
	for _, dialect := range []string{"sqlite", "sqlite-normal", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			var s *Store
			switch dialect {
			case "sqlite":
				s = newSQLiteFull(b)
			case "sqlite-normal":
				s = newSQLite(b)
			default:
				s = newPostgres(b)
			}
			r := rand.New(rand.NewPCG(3, 4))
			fillSessions(b, s, r)
			if lb, ok := s.db.(*liteBackend); ok {
				// The rows of the store's 100,000 items written, as in
				// a store that has been running, so the timed appends
				// do not queue behind the catch-ups of the setup's.
				if err := lb.catchUpSearch(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if pb, ok := s.db.(*pgBackend); ok {
				// The rows of the store's 100,000 items indexed and
				// merged, as in a store that has been running, so the
				// timed appends do not share the server with them.
				pb.gin.wg.Wait()
				for _, stmt := range []string{indexTailPGSQL, ginCleanSQL} {
					if _, err := pb.pool.Exec(ctx, stmt); err != nil {
						b.Fatal(err)
					}
				}
			}
			texts := make([]recall.Item, 1024)
			for i := range texts {
				texts[i] = msg(corpusText(r, false))
			}
			var plain, indexed time.Duration
			var plains, indexeds []time.Duration
			i := 0
			appendOne := func(search bool) time.Duration {
				s.noSearch = !search
				k := benchKey(i % 100)
				t0 := time.Now()
				if _, err := s.Append(ctx, k, recall.Guard{}, texts[i%len(texts)].Entry()); err != nil {
					b.Fatal(err)
				}
				i++
				return time.Since(t0)
			}
			for round := 0; b.Loop(); round++ {
				// Each goes first every other round: a commit right
				// after another may wait on its WAL flush.
				var p, x time.Duration
				if round%2 == 0 {
					p = appendOne(false)
					x = appendOne(true)
				} else {
					x = appendOne(true)
					p = appendOne(false)
				}
				plain, indexed = plain+p, indexed+x
				plains, indexeds = append(plains, p), append(indexeds, x)
			}
			s.noSearch = false
			slices.Sort(plains)
			slices.Sort(indexeds)
			b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
			b.ReportMetric(float64(indexed.Nanoseconds())/float64(b.N), "indexed-ns/op")
			b.ReportMetric(float64(indexeds[len(indexeds)/2])/float64(plains[len(plains)/2]), "indexed/plain-p50")
			b.ReportMetric(indexed.Seconds()/plain.Seconds(), "indexed/plain")
		})
	}
}
