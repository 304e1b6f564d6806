package searchbench_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/sqlstore"
)

// itemsPerSession is the length of every corpus session.
const itemsPerSession = 100

func corpusSessions() int {
	if n, err := strconv.Atoi(os.Getenv("RECALL_SEARCH_BENCH_SESSIONS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// The corpus's words: syllables that make English-looking words, common
// Chinese characters, and the searched terms at known rates: "xylophonist"
// in 5 items (rare), "error" in one item in ten (common), the phrase
// "quick brown fox" in one in a thousand, "北京市" (three characters) and
// "张三" (two, below a trigram index) in one in five hundred each.
var (
	syllables = strings.Fields("ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu za ze zi zo zu")
	han       = []rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命")
)

func corpusText(r *rand.Rand, rare bool) string {
	var b strings.Builder
	for i := range 8 + r.IntN(20) {
		if i > 0 {
			b.WriteByte(' ')
		}
		if r.IntN(10) < 3 {
			for range 2 + r.IntN(6) {
				b.WriteRune(han[r.IntN(len(han))])
			}
			continue
		}
		for range 1 + r.IntN(3) {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
	}
	if rare {
		b.WriteString(" the xylophonist played")
	} else if r.IntN(10) == 0 {
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

// corpus is the generated data: every session's entries, with seqs and
// times, as Import takes them.
type corpus struct {
	keys    []recall.Key
	entries [][]recall.Entry
}

func makeCorpus(sessions int) corpus {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	total := sessions * itemsPerSession
	rare := map[int]bool{}
	for len(rare) < 5 {
		rare[r.IntN(total)] = true
	}
	var c corpus
	for i := range sessions {
		c.keys = append(c.keys, recall.Key{Project: fmt.Sprintf("proj%02d", i%50), Session: fmt.Sprintf("s%06d", i)})
		at := base.Add(time.Duration(r.IntN(365*24*60)) * time.Minute)
		es := make([]recall.Entry, itemsPerSession)
		for j := range es {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			es[j] = recall.Message(role, corpusText(r, rare[i*itemsPerSession+j])).Entry()
			es[j].Seq, es[j].Time = int64(j+1), at.Add(time.Duration(j)*time.Minute)
		}
		c.entries = append(c.entries, es)
	}
	return c
}

// load imports the corpus into s.
func (c corpus) load(ctx context.Context, s recall.Store) error {
	for i, k := range c.keys {
		if _, err := s.Import(ctx, k, c.entries[i]...); err != nil {
			return fmt.Errorf("import %s: %w", k, err)
		}
	}
	return nil
}

// contender is one way of searching the corpus.
type contender struct {
	name   string
	search func(ctx context.Context, query, literal string) (int, error)
	// index and logs are the bytes of the search index and of the data
	// it indexes (0 when not measured).
	index, logs int64
}

func dirSize(root string, keep func(string) bool) int64 {
	var n int64
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && keep(path) {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// literalScan is the baseline: read every JSONL log under home and count
// the lines that hold the literal bytes, as grep does.
func literalScan(home, literal string) (int, error) {
	n := 0
	needle := []byte(literal)
	err := filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			if bytes.Contains(line, needle) {
				n++
			}
		}
		return nil
	})
	return n, err
}

func searchFirstPage(s recall.Store) func(ctx context.Context, query, _ string) (int, error) {
	return func(ctx context.Context, query, _ string) (int, error) {
		p, err := recall.Search(ctx, s, recall.SearchOptions{Query: query, IncludeArchived: true})
		return len(p.Hits), err
	}
}

// setUp builds the corpus into every store, in parallel, and returns the
// contenders, the baseline first.
func setUp(b *testing.B) []contender {
	ctx := context.Background()
	n := corpusSessions()
	start := time.Now()
	c := makeCorpus(n)
	b.Logf("corpus: %d sessions, %d items, generated in %s", n, n*itemsPerSession, time.Since(start).Round(time.Millisecond))
	dir, keep := os.Getenv("RECALL_SEARCH_BENCH_DIR"), true
	if dir == "" {
		dir, keep = b.TempDir(), false
	}

	want := func(name string) bool {
		only := os.Getenv("RECALL_SEARCH_BENCH_STORES")
		return only == "" || slices.Contains(strings.Split(only, ","), name)
	}
	home := filepath.Join(dir, "file")
	fs, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Close() })
	stores, names := []recall.Store{fs}, []string{"file"}
	dbPath := filepath.Join(dir, "recall.db")
	var lite, pg *sqlstore.Store
	if want("sqlite") {
		if lite, err = sqlstore.OpenSQLite(ctx, dbPath, sqlstore.Options{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { lite.Close() })
		stores, names = append(stores, lite), append(names, "sqlite")
	}
	var dsn, schema string
	if want("postgres") {
		dsn = testsvc.PostgresDSN(b)
		schema = testsvc.UniqueName("recall_searchbench")
		if keep {
			schema = fmt.Sprintf("recall_searchbench_keep_%d", n)
		}
		if pg, err = sqlstore.OpenPostgres(ctx, dsn, sqlstore.Options{Schema: schema}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			pg.Close()
			if keep {
				return
			}
			testsvc.DropSchema(b, dsn, schema)
		})
		stores, names = append(stores, pg), append(names, "postgres")
	}

	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() {
			// A kept corpus is loaded once: a marker beside it says so.
			marker := filepath.Join(dir, fmt.Sprintf("loaded-%s-%d", names[i], n))
			if _, err := os.Stat(marker); keep && err == nil {
				b.Logf("%s: corpus kept from an earlier run", names[i])
				return
			}
			t0 := time.Now()
			if errs[i] = c.load(ctx, s); errs[i] == nil && keep {
				errs[i] = os.WriteFile(marker, nil, 0o644)
			}
			b.Logf("%s: imported in %s", names[i], time.Since(t0).Round(time.Millisecond))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if pg != nil {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			// As autovacuum would have by now: the planner's
			// statistics and the visibility map (index-only scans).
			conn.Exec(ctx, "VACUUM ANALYZE "+schema+".sessions, "+schema+".entries, "+schema+".search")
			conn.Close(ctx)
		}
	}
	// The first search builds the file store's index from the logs (the
	// index is a cache beside them); the SQL stores wrote theirs with
	// each import.
	for i, s := range stores {
		t0 := time.Now()
		if _, err := recall.Search(ctx, s, recall.SearchOptions{Query: "warm up"}); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: first search (file store: builds the index) %s", names[i], time.Since(t0).Round(time.Millisecond))
	}

	logs := dirSize(home, func(p string) bool { return strings.HasSuffix(p, ".jsonl") })
	out := []contender{
		{name: "literal-scan", search: func(_ context.Context, _, literal string) (int, error) { return literalScan(home, literal) }},
		{name: "file", search: searchFirstPage(fs), logs: logs,
			index: dirSize(home, func(p string) bool { return strings.Contains(filepath.Base(p), "#search") })},
	}
	if lite != nil {
		out = append(out, contender{name: "sqlite", search: searchFirstPage(lite), logs: logs, index: sqliteSearchBytes(b, dbPath)})
	}
	if pg != nil {
		out = append(out, contender{name: "postgres", search: searchFirstPage(pg), logs: logs, index: postgresSearchBytes(b, dsn, schema)})
	}
	for _, c := range out[1:] {
		b.Logf("%s: search index %.1f MB, JSONL logs of the same items %.1f MB (%.2f×)", c.name,
			float64(c.index)/(1<<20), float64(c.logs)/(1<<20), float64(c.index)/float64(c.logs))
	}
	return out
}

// sqliteSearchBytes is the size of SQLite's search tables and indexes
// (the search rows and the FTS5 trigram index), from dbstat.
func sqliteSearchBytes(b *testing.B, path string) int64 {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n sql.NullInt64
	if err := db.QueryRow(`SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'search%'`).Scan(&n); err != nil {
		b.Logf("sqlite: dbstat: %v (index size not measured)", err)
		return 0
	}
	return n.Int64
}

// postgresSearchBytes is the size of PostgreSQL's search table with its
// indexes (tsvector and trigram) and TOAST.
func postgresSearchBytes(b *testing.B, dsn, schema string) int64 {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, schema+".search").Scan(&n); err != nil {
		b.Logf("postgres: %v (index size not measured)", err)
	}
	return n
}

// BenchmarkSearch measures the first page of hits (20, newest first) for
// each kind of term on each store's index, and the literal scan of the
// JSONL logs for the same term, side by side on one corpus.
func BenchmarkSearch(b *testing.B) {
	contenders := setUp(b)
	ctx := context.Background()
	for _, q := range []struct{ name, query, literal string }{
		{"rare", "xylophonist", "xylophonist"},
		{"common", "error", "error"},
		{"phrase", `"quick brown fox"`, "quick brown fox"},
		{"cjk3", "北京市", "北京市"},
		{"cjk2", "张三", "张三"},
	} {
		for _, c := range contenders {
			b.Run(q.name+"/"+c.name, func(b *testing.B) {
				var hits int
				for b.Loop() {
					n, err := c.search(ctx, q.query, q.literal)
					if err != nil {
						b.Fatal(err)
					}
					hits = n
				}
				if hits == 0 {
					b.Fatalf("%s found nothing for %s", c.name, q.query)
				}
				b.ReportMetric(float64(hits), "hits")
			})
		}
	}
}

// BenchmarkFileAppend measures a durable append (the file store's default
// sync) to a home whose search index is built and open, against one
// without an index: the file store's index is caught up by searches, not
// by appends. The SQL stores' cost is sqlstore's BenchmarkAppendSearch.
func BenchmarkFileAppend(b *testing.B) {
	it := recall.Message("user", corpusText(rand.New(rand.NewPCG(5, 6)), false))
	for _, withIndex := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", withIndex), func(b *testing.B) {
			ctx := context.Background()
			s, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := recall.Key{Project: "p", Session: "s"}
			if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
				b.Fatal(err)
			}
			if withIndex {
				if _, err := recall.Search(ctx, s, recall.SearchOptions{Query: "error"}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
