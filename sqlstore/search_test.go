package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/search"
)

// hitID is what a hit must share with search.Scan's: everything
// but Rank and the snippet's cut.
type hitID struct {
	Key   recall.Key
	Title string
	Ref   recall.ItemRef
	Role  string
	Time  time.Time
}

func (h hitID) String() string {
	return fmt.Sprintf("%s %v %s %s %q", h.Key, h.Ref, h.Role, h.Time.Format(time.RFC3339Nano), h.Title)
}

// allHits pages through a search, at limit hits a page, and returns every
// hit; it fails t on an error or a page that does not follow the order.
func allHits(t *testing.T, search func(recall.SearchOptions) (recall.SearchPage, error), opts recall.SearchOptions) []hitID {
	t.Helper()
	var out []hitID
	for range 1000 {
		p, err := search(opts)
		if err != nil {
			t.Fatalf("search %+v: %v", opts, err)
		}
		for _, h := range p.Hits {
			out = append(out, hitID{h.Key, h.Title, h.Ref, h.Role, h.Time.UTC()})
			if h.Snippet == "" && len(h.Matches) == 0 {
				t.Errorf("hit %v has no snippet", h)
			}
		}
		if p.Next == "" {
			return out
		}
		if len(p.Hits) == 0 {
			t.Fatalf("search %+v: an empty page with a next cursor", opts)
		}
		opts.Cursor = p.Next
	}
	t.Fatalf("search %+v: more than 1000 pages", opts)
	return nil
}

// sameAsScan checks that s.Search returns the hits search.Scan
// does, in its order, for opts, page by page at every page size given.
func sameAsScan(t *testing.T, s *Store, opts recall.SearchOptions, limits ...int) {
	t.Helper()
	ctx := context.Background()
	if len(limits) == 0 {
		limits = []int{0}
	}
	// The scan's hits in one page (the tests hold fewer than
	// MaxSearchLimit), which the store's pages must add up to.
	all := opts
	all.Limit = recall.MaxSearchLimit
	want := allHits(t, func(o recall.SearchOptions) (recall.SearchPage, error) { return search.Scan(ctx, s, o) }, all)
	for _, limit := range limits {
		opts.Limit = limit
		got := allHits(t, func(o recall.SearchOptions) (recall.SearchPage, error) { return s.Search(ctx, o) }, opts)
		if !slices.Equal(got, want) {
			t.Errorf("search %q %+v (limit %d):\n got  %d hits %v\n want %d hits %v", opts.Query, opts, limit, len(got), got, len(want), want)
		}
	}
}

// hitRefs returns the refs of a page's hits.
func hitRefs(t *testing.T, s *Store, opts recall.SearchOptions) []string {
	t.Helper()
	p, err := s.Search(context.Background(), opts)
	if err != nil {
		t.Fatalf("search %q: %v", opts.Query, err)
	}
	var out []string
	for _, h := range p.Hits {
		out = append(out, fmt.Sprintf("%s/%s@%d.%d", h.Key.Session, h.Role, h.Ref.Seq, h.Ref.Index))
	}
	return out
}

// searchDialects runs f on both dialects, and on each with a search window
// of 2 rows too, so that both ways Search finds hits (the window of the
// newest rows, and the trigram index) are tested; on SQLite, with the
// search rows written by every append (lag=1) and by every third entry
// (lag=3), so that both appends and searches write them (see
// trailSearch).
func searchDialects(t *testing.T, f func(t *testing.T, newStore func(t testing.TB) *Store)) {
	for _, c := range []struct {
		dialect     string
		window, lag int
	}{{"sqlite", 0, 0}, {"sqlite", 2, 1}, {"sqlite", 2, 3}, {"postgres", 0, 0}, {"postgres", 2, 0}} {
		t.Run(fmt.Sprintf("%s/window=%d/lag=%d", c.dialect, c.window, c.lag), func(t *testing.T) {
			f(t, func(t testing.TB) *Store {
				var s *Store
				if c.dialect == "sqlite" {
					s = newSQLite(t)
					s.db.(*liteBackend).searchLag = c.lag
				} else {
					s = newPostgres(t)
				}
				s.window = c.window
				return s
			})
		})
	}
}

// TestSearchText checks what matches: words in any order, phrases, case,
// CJK terms of one and two characters (below the trigram index), LIKE's
// and FTS5's special characters in terms, tool calls and outputs, titles;
// each query's hits are the scan's, and a few are spelled out.
func TestSearchText(t *testing.T) {
	t.Parallel()
	searchDialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		a := recall.Key{Project: "p", Session: "a"}
		b := recall.Key{Project: "p", Session: "b"}
		c := recall.Key{Project: "q", Session: "c"}
		add := func(k recall.Key, items ...recall.Item) {
			t.Helper()
			for _, it := range items {
				if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
					t.Fatal(err)
				}
			}
		}
		add(a, recall.Message("user", "我叫张三，住在北京"),
			recall.Message("assistant", "Fixed the Tokenizer: it split\n  words   badly"),
			recall.Message("user", `100% sure the file_name is C:\temp\x "quoted" 'single' *star* AND OR NOT`))
		add(b, recall.Message("user", "the tokenizer again"),
			recall.Item(`{"type":"function_call","name":"grep_files","arguments":"{\"pattern\":\"needle\"}","call_id":"c1"}`),
			recall.Item(`{"type":"function_call_output","call_id":"c1","output":"found the needle in haystack.go"}`),
			recall.Item(`{"type":"reasoning","encrypted_content":"tokenizer-secret"}`))
		add(c, recall.Message("user", "北京 is a city; 张 alone"), recall.Message("user", "before\x00after nulbyte"))
		if _, err := recall.NewSession(s, a).SetTitle(ctx, "Tokenizer fixes 北京", recall.TitleUser); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"tokenizer", "TOKENIZER", "张三", "张", "北京", "住在北京", "words badly", `"words badly"`,
			`"badly words"`, "split words", "100%", "%", "_", "file_name", `c:\temp\x`, `\`, `"quoted"`, `'single'`, "*star*",
			"and or not", "nulbyte", "before", "after", "needle", "grep_files", "haystack.go", "secret", "fixes", "nothing-like-this", "the", "ok"} {
			for _, opts := range []recall.SearchOptions{{Query: q}, {Query: q, WholeLog: true}, {Query: q, Project: "p"},
				{Query: q, Role: recall.RoleTool}, {Query: q, Role: recall.RoleTitle}} {
				sameAsScan(t, s, opts, 0, 1, 2)
			}
		}
		for q, want := range map[string][]string{
			"张三":            {"a/user@1.0"},
			"北京":            {"c/user@1.0", "a/title@0.0", "a/user@1.0"},
			`"words badly"`: {"a/assistant@2.0"},
			"badly words":   {"a/assistant@2.0"},
			`"badly words"`: nil,
			"100%":          {"a/user@3.0"},
			"%":             {"a/user@3.0"},
			"_":             {"b/tool@2.0", "a/user@3.0"},
			`\`:             {"a/user@3.0"},
			"needle":        {"b/tool@3.0", "b/tool@2.0"},
			"secret":        nil,
			"tokenizer":     {"b/user@1.0", "a/title@0.0", "a/assistant@2.0"},
		} {
			if got := hitRefs(t, s, recall.SearchOptions{Query: q}); !slices.Equal(got, want) {
				t.Errorf("search %q: got %v, want %v", q, got, want)
			}
		}
	})
}

// TestSearchLiveness follows one session through every change of its
// view (append, pop, remove, clear, compaction, purge, import, fork,
// archive, remove) and checks after each that the live view and the
// whole log search as the scan does.
func TestSearchLiveness(t *testing.T) {
	t.Parallel()
	searchDialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		k := recall.Key{Project: "p", Session: "s"}
		// Under -short, two queries: "word" finds every item but one
		// summary of the compaction, "beta" finds that one and a few.
		queries := []string{"word", "alpha", "beta", "gamma", "summary"}
		if testing.Short() {
			queries = []string{"word", "beta"}
		}
		check := func(step string) {
			t.Helper()
			for _, q := range queries {
				for _, opts := range []recall.SearchOptions{{Query: q}, {Query: q, WholeLog: true}, {Query: q, IncludeArchived: true},
					{Query: q, WholeLog: true, IncludeArchived: true}} {
					sameAsScan(t, s, opts, 0, 1)
				}
			}
			checkFTS(t, s)
			if t.Failed() {
				t.Fatalf("after %s", step)
			}
		}
		appendItems := func(texts ...string) {
			t.Helper()
			var es []recall.Entry
			for _, x := range texts {
				es = append(es, msg(x).Entry())
			}
			if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
				t.Fatal(err)
			}
		}
		appendItems("word alpha 1", "word alpha 2", "word beta 3")
		check("append")
		if _, err := s.Pop(ctx, k); err != nil {
			t.Fatal(err)
		}
		check("pop")
		if _, err := recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: 1}); err != nil {
			t.Fatal(err)
		}
		check("remove")
		// Seqs: items 1-3, pop 4, remove 5. A batch that appends and
		// pops its own item, in one transaction (the general path).
		if _, err := s.Append(ctx, k, recall.Guard{}, msg("word gamma 6").Entry(),
			recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 6}), msg("word gamma 8").Entry()); err != nil {
			t.Fatal(err)
		}
		check("batch with a pop")
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindClear, nil), msg("word alpha 10").Entry()); err != nil {
			t.Fatal(err)
		}
		check("clear")
		appendItems("word beta 11", "word beta 12")
		comp := recall.Compaction{Through: 12, Replaced: 3, Items: []recall.Item{msg("summary of word alpha"), msg("summary beta"),
			recall.Item(`{"type":"reasoning","encrypted_content":"x"}`)}}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindCompaction, comp)); err != nil {
			t.Fatal(err)
		}
		check("compaction")
		if _, err := recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: 13, Index: 1}); err != nil {
			t.Fatal(err)
		}
		check("remove of a compaction item")
		appendItems("word gamma 14")
		if _, err := s.Purge(ctx, k); err != nil {
			t.Fatal(err)
		}
		check("purge")
		if _, err := recall.NewSession(s, k).SetTitle(ctx, "Word title", recall.TitleUser); err != nil {
			t.Fatal(err)
		}
		check("title")
		if _, err := recall.NewSession(s, k).Fork(ctx, 0, recall.Key{Project: "p", Session: "fork"}); err != nil {
			t.Fatal(err)
		}
		check("fork")
		_, log, err := s.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Import(ctx, recall.Key{Project: "p", Session: "imported"}, log...); err != nil {
			t.Fatal(err)
		}
		// A subagent record: never a hit.
		if _, err := s.Append(ctx, recall.Key{Project: "p", Session: "s", Subpath: "agent-1"}, recall.Guard{},
			msg("word alpha in a subagent").Entry()); err != nil {
			t.Fatal(err)
		}
		check("import")
		if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
			t.Fatal(err)
		}
		check("archive")
		if err := s.Remove(ctx, recall.Key{Project: "p", Session: "fork"}); err != nil {
			t.Fatal(err)
		}
		check("remove of a session")
		// Every row of the removed session went with it.
		var n int
		if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM search WHERE sid NOT IN (SELECT sid FROM sessions)`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d search rows of removed sessions (%v)", n, err)
		}
	})
}

// checkFTS runs FTS5's integrity-check on a SQLite store's trigram
// index: it holds exactly the rows of the search table (the triggers of
// migration 11), none of a deleted row left, none twice.
func checkFTS(t *testing.T, s *Store) {
	t.Helper()
	if s.db.name() != "sqlite" {
		return
	}
	err := s.db.update(context.Background(), func(ctx context.Context, q querier) error {
		_, err := q.exec(ctx, `INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)`)
		return err
	})
	if err != nil {
		t.Errorf("the trigram index is not in step with the search table: %v", err)
	}
}

// TestSearchFilters checks the time range, roles, projects, archived
// sessions and paging against the scan on a few hundred items with
// shared times (a batch's items share one), so ties are ordered by key
// and ref across pages.
func TestSearchFilters(t *testing.T) {
	t.Parallel()
	searchDialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		words := []string{"apple", "banana", "cherry", "苹果", "香蕉"}
		// Under -short, half the sessions: every filter still selects
		// some and leaves some out.
		for i := range testkit.Size(6, 12) {
			k := recall.Key{Project: fmt.Sprintf("p%d", i%3), Session: fmt.Sprintf("s%02d", i)}
			for j := range 4 {
				var es []recall.Entry
				for n := range 5 {
					role := []string{"user", "assistant", "system"}[(i+j+n)%3]
					e := recall.Message(role, fmt.Sprintf("%s and %s number %d", words[(i+n)%5], words[(j+n)%5], n)).Entry()
					e.Time = base.Add(time.Duration(j*10+i%4) * time.Minute)
					es = append(es, e)
				}
				if _, err := s.Import(ctx, k, withSeqs(t, s, k, es)...); err != nil {
					t.Fatal(err)
				}
			}
			if i%5 == 0 {
				if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
					t.Fatal(err)
				}
			}
			if i%4 == 0 {
				if _, err := recall.NewSession(s, k).SetTitle(ctx, "about "+words[i%5], recall.TitleUser); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Under -short, pages of 3 rather than of 1 and 7: a page still
		// ends inside a session and between sessions, in a third of the
		// calls (each call's SQL is parsed afresh, which under -race is most
		// of this test's time).
		limits := []int{0, 1, 7}
		if testing.Short() {
			limits = []int{0, 3}
		}
		for _, q := range []string{"apple", "banana cherry", "苹果", "number 3", "and"} {
			for _, opts := range []recall.SearchOptions{
				{Query: q},
				{Query: q, IncludeArchived: true},
				{Query: q, Project: "p1"},
				{Query: q, Role: recall.RoleAssistant},
				{Query: q, Role: recall.RoleTitle, IncludeArchived: true},
				{Query: q, Since: base.Add(10 * time.Minute)},
				{Query: q, Since: base.Add(10*time.Minute - time.Nanosecond), Until: base.Add(20*time.Minute + time.Nanosecond)},
				{Query: q, Since: base.Add(10*time.Minute + time.Nanosecond), Until: base.Add(20*time.Minute - time.Nanosecond)},
				{Query: q, Until: base.Add(21 * time.Minute)},
				{Query: q, Since: base.Add(11 * time.Minute), Until: base.Add(32 * time.Minute), Project: "p2", IncludeArchived: true},
			} {
				sameAsScan(t, s, opts, limits...)
			}
		}
	})
}

// withSeqs numbers entries after key's last seq, for Import.
func withSeqs(t *testing.T, s *Store, key recall.Key, es []recall.Entry) []recall.Entry {
	t.Helper()
	m, err := s.Stat(context.Background(), key)
	last := m.LastSeq
	if err != nil {
		last = 0
	}
	for i := range es {
		es[i].Seq = last + int64(i) + 1
	}
	return es
}

// TestSearchErrors: a bad query, role, limit or cursor is
// recall.ErrInvalidQuery, and a closed store recall.ErrClosed.
func TestSearchErrors(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		for _, opts := range []recall.SearchOptions{{Query: ""}, {Query: `"open`}, {Query: "x", Role: "robot"},
			{Query: "x", Limit: -1}, {Query: "x", Cursor: "!!"}} {
			if _, err := s.Search(ctx, opts); !errors.Is(err, recall.ErrInvalidQuery) {
				t.Errorf("search %+v: %v, want ErrInvalidQuery", opts, err)
			}
		}
		s.Close()
		if _, err := s.Search(ctx, recall.SearchOptions{Query: "x"}); !errors.Is(err, recall.ErrClosed) {
			t.Errorf("search on a closed store: %v", err)
		}
	})
}

// TestMigrateSearch opens a database written before the search table
// (schema version 2) with this package: the migration computes the
// search rows of every log (pops, clears and compactions included) and
// the normalized titles, so searching finds what was written before, as
// the scan does, and what is written after.
func TestMigrateSearch(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			q, ts, open := versionDatabase(t, dialect, 2)
			base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			item := func(s string) string { return string(msg(s)) }
			comp, _ := json.Marshal(recall.Compaction{Through: 4, Replaced: 2, Items: []recall.Item{msg("compacted 北京 summary")}})
			type entry struct{ kind, payload string }
			sessions := []struct {
				id, subpath, title string
				log                []entry
			}{
				{"one", "", "Old Title 北京", []entry{{"item", item("hello 北京 world")}, {"item", item("second hello")},
					{"pop", `{"seq":2}`}, {"item", item("third hello")}, {"compaction", string(comp)}, {"item", item("after hello")}}},
				{"two", "", "", []entry{{"item", item("hello cleared")}, {"clear", ""}, {"item", item("hello kept")}, {"item", "not json"}}},
				{"one", "agent", "", []entry{{"item", item("hello from a subagent")}}},
			}
			for i, sess := range sessions {
				var sid int64
				if err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, title, created_at, updated_at, item_count, last_seq, checked_seq)
					VALUES ('p', $1, $2, $3, $4, $4, 0, $5, 0) RETURNING sid`, sess.id, sess.subpath, sess.title, ts(base), len(sess.log)).Scan(&sid); err != nil {
					t.Fatal(err)
				}
				for j, e := range sess.log {
					var payload any
					if e.payload != "" {
						payload = []byte(e.payload)
					}
					if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, $3, $4, $5)`,
						sid, j+1, e.kind, payload, ts(base.Add(time.Duration(i*10+j)*time.Minute))); err != nil {
						t.Fatal(err)
					}
				}
			}
			s := open()
			for _, query := range []string{"hello", "北京", "summary", "title", "json"} {
				for _, opts := range []recall.SearchOptions{{Query: query}, {Query: query, WholeLog: true}} {
					sameAsScan(t, s, opts, 0, 1)
				}
			}
			if got, want := hitRefs(t, s, recall.SearchOptions{Query: "hello"}), []string{"two/user@3.0", "one/user@6.0"}; !slices.Equal(got, want) {
				t.Errorf("hello after the migration: %v, want %v", got, want)
			}
			if got, want := hitRefs(t, s, recall.SearchOptions{Query: "北京"}), []string{"one/user@5.0", "one/title@0.0"}; !slices.Equal(got, want) {
				t.Errorf("北京 after the migration: %v, want %v", got, want)
			}
			if _, err := s.Append(ctx, recall.Key{Project: "p", Session: "one"}, recall.Guard{}, msg("hello again").Entry()); err != nil {
				t.Fatal(err)
			}
			sameAsScan(t, s, recall.SearchOptions{Query: "hello"})
		})
	}
}

// TestSearchPostgresWindows checks the windows PostgreSQL looks through
// before every candidate (see pgItems): with a window of 8 rows, the first
// holds a hit or two of the queries, and the window their density says
// holds two pages is read next; terms of several words are looked up by
// their words (likeWords), among rows holding the words in another order;
// terms of two CJK characters by the bigram index, alone, together or
// beside other terms.
// The hits are the scan's, page by page, at several page sizes.
func TestSearchPostgresWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPostgres(t)
	s.window = 8
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for si := range 3 {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", si)}
		var es []recall.Entry
		for j := range 120 {
			text := "ba be bi " + strconv.Itoa(j)
			switch n := si*120 + j; {
			case n%5 == 0:
				text += " the quick brown fox jumps"
			case n%7 == 0:
				text += " a quick fox, brown"
			case n%11 == 0:
				text += " 我住在北京市"
			case n%13 == 0:
				text += " 我叫张三，住在東京"
			}
			e := recall.Message("user", text).Entry()
			// The sessions' items interleave in time, a minute apart.
			e.Seq, e.Time = int64(j+1), base.Add(time.Duration(3*j+si)*time.Minute)
			es = append(es, e)
		}
		if _, err := s.Import(ctx, k, es...); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`"quick brown fox"`, "北京市", "fox", "quick brown", `"fox jumps" quick`, "brown fox",
		"张三", "北京", "住在", "张三 住在", "京 张三", "三，", "fox 東京"} {
		sameAsScan(t, s, recall.SearchOptions{Query: q}, 0, 1, 3, 7, 25)
	}
}

// TestCJKBigrams checks the keys of the bigram index against the terms
// looked up by them: a row holding a term of two CJK characters holds its
// code (else the index would hide a hit), and other terms have none.
func TestCJKBigrams(t *testing.T) {
	t.Parallel()
	chars := []rune("张三北京東京ひらカナ한글a ，1\uFFFD𠀀")
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		body := make([]rune, r.IntN(12))
		for i := range body {
			body[i] = chars[r.IntN(len(chars))]
		}
		codes := cjkBigrams(string(body))
		if !slices.IsSorted(codes) || len(slices.Compact(slices.Clone(codes))) != len(codes) {
			t.Fatalf("cjkBigrams(%q) = %v: not sorted and distinct", string(body), codes)
		}
		if (codes == nil) != (bigramsLiteral(string(body)) == nil) {
			t.Fatalf("bigramsLiteral(%q) disagrees with cjkBigrams", string(body))
		}
		for i := 0; i+1 < len(body); i++ {
			term := string(body[i : i+2])
			code, ok := termBigram(term)
			if ok != (isCJK(body[i]) && isCJK(body[i+1])) {
				t.Fatalf("termBigram(%q) = %v", term, ok)
			}
			if ok && !slices.Contains(codes, code) {
				t.Fatalf("%q holds %q, but its codes %v miss %d", string(body), term, codes, code)
			}
		}
	}
	for _, term := range []string{"", "张", "张三丰", "a三", "三1", "三，"} {
		if _, ok := termBigram(term); ok {
			t.Errorf("termBigram(%q) is indexed", term)
		}
	}
	if got := *bigramsLiteral("张三 张三"); got != fmt.Sprintf("{%d}", bigramCode('张', '三')) {
		t.Errorf("bigramsLiteral(张三 张三) = %s", got)
	}
}
