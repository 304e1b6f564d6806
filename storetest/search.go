package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// The search cases check recall.Search on the store (its own index when
// it is a recall.Searcher) against hits the case expects, and against
// search.Scan over the same store: the same hits in the same order,
// page by page. Rank and the snippet's cut may differ; the snippet is
// checked for shape (one line, valid UTF-8, spans that match the query).

// hitID is what a case expects of a hit: which item (or title) it is.
type hitID struct {
	Key  recall.Key
	Ref  recall.ItemRef
	Role string
}

func (h hitID) String() string {
	return fmt.Sprintf("%s@%d.%d(%s)", h.Key, h.Ref.Seq, h.Ref.Index, h.Role)
}

func idOf(h recall.Hit) hitID { return hitID{Key: h.Key, Ref: h.Ref, Role: h.Role} }

// SearchAll runs a search through every page (opts.Cursor is where it
// starts) with find, which is recall.Search or search.Scan, and
// returns the hits. It checks each page's shape: no more hits than the
// page size, a full page before every Next, an empty Next on the last.
func SearchAll(ctx context.Context, s recall.Store, opts recall.SearchOptions,
	find func(context.Context, recall.Store, recall.SearchOptions) (recall.SearchPage, error)) ([]recall.Hit, error) {
	var all []recall.Hit
	for pages := 0; ; pages++ {
		if err := ctx.Err(); err != nil {
			return all, err
		}
		p, err := find(ctx, s, opts)
		if err != nil {
			return all, err
		}
		if len(p.Hits) > opts.PageSize() {
			return all, fmt.Errorf("page of %d hits, limit %d", len(p.Hits), opts.PageSize())
		}
		if p.Next != "" && len(p.Hits) < opts.PageSize() {
			return all, fmt.Errorf("page of %d hits (limit %d) has a Next cursor", len(p.Hits), opts.PageSize())
		}
		if len(all) > 0 && len(p.Hits) > 0 && search.Compare(all[len(all)-1], p.Hits[0]) >= 0 {
			return all, fmt.Errorf("page %d starts with %s, which does not sort after %s, the end of the page before",
				pages+1, idOf(p.Hits[0]), idOf(all[len(all)-1]))
		}
		all = append(all, p.Hits...)
		if p.Next == "" {
			return all, nil
		}
		opts.Cursor = p.Next
	}
}

// CompareSearch runs opts through every page with recall.Search and with
// search.Scan on s, and returns an error naming every difference:
// the hits (key, ref, role, time, title) and their order must be the
// same; each hit's snippet must be one line of valid UTF-8 whose Matches
// are in range and match a term of the query. Nothing may write to s
// meanwhile. A store's own tests can call it on data of their own.
func CompareSearch(ctx context.Context, s recall.Store, opts recall.SearchOptions) error {
	got, err := SearchAll(ctx, s, opts, recall.Search)
	if err != nil {
		return fmt.Errorf("recall.Search %q %s: %w", opts.Query, optsString(opts), err)
	}
	want, err := SearchAll(ctx, s, opts, search.Scan)
	if err != nil {
		return fmt.Errorf("search.Scan %q %s: %w", opts.Query, optsString(opts), err)
	}
	q, _ := search.Parse(opts.Query)
	var errs []error
	if d := hitsDiff(got, want); d != "" {
		errs = append(errs, fmt.Errorf("recall.Search %q %s differs from search.Scan: %s", opts.Query, optsString(opts), d))
	}
	for _, h := range got {
		if err := checkSnippet(h, q); err != nil {
			errs = append(errs, fmt.Errorf("recall.Search %q: hit %s: %w", opts.Query, idOf(h), err))
		}
	}
	return errors.Join(errs...)
}

// optsString shows the options that select hits.
func optsString(o recall.SearchOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[limit %d", o.PageSize())
	if o.Project != "" {
		fmt.Fprintf(&b, " project %q", o.Project)
	}
	if o.Role != "" {
		fmt.Fprintf(&b, " role %s", o.Role)
	}
	if o.IncludeArchived {
		b.WriteString(" archived")
	}
	if o.WholeLog {
		b.WriteString(" wholelog")
	}
	if !o.Since.IsZero() {
		fmt.Fprintf(&b, " since %s", o.Since.Format(time.RFC3339Nano))
	}
	if !o.Until.IsZero() {
		fmt.Fprintf(&b, " until %s", o.Until.Format(time.RFC3339Nano))
	}
	b.WriteString("]")
	return b.String()
}

// hitsDiff describes how got differs from want, or returns "".
func hitsDiff(got, want []recall.Hit) string {
	var d []string
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			d = append(d, fmt.Sprintf("#%d missing %s", i, hitString(want[i])))
		case i >= len(want):
			d = append(d, fmt.Sprintf("#%d extra %s", i, hitString(got[i])))
		case idOf(got[i]) != idOf(want[i]) || !got[i].Time.Equal(want[i].Time) || got[i].Title != want[i].Title:
			d = append(d, fmt.Sprintf("#%d got %s, want %s", i, hitString(got[i]), hitString(want[i])))
		}
		if len(d) == 8 {
			d = append(d, "...")
			break
		}
	}
	return strings.Join(d, "; ")
}

func hitString(h recall.Hit) string {
	return fmt.Sprintf("%s at %s title %q", idOf(h), h.Time.Format(time.RFC3339Nano), h.Title)
}

// maxSnippet bounds a snippet's length: a store cuts its own, about
// search.SnippetBytes long.
const maxSnippet = 4 * search.SnippetBytes

// checkSnippet checks the shape of h's snippet for query q.
func checkSnippet(h recall.Hit, q search.Query) error {
	s := h.Snippet
	switch {
	case s == "":
		return errors.New("empty snippet")
	case !utf8.ValidString(s):
		return fmt.Errorf("snippet %q is not valid UTF-8", s)
	case strings.ContainsAny(s, "\n\r"):
		return fmt.Errorf("snippet %q spans lines", s)
	case len(s) > maxSnippet:
		return fmt.Errorf("snippet of %d bytes, more than %d", len(s), maxSnippet)
	case len(h.Matches) == 0:
		return fmt.Errorf("snippet %q marks no match", s)
	}
	end := 0
	for _, m := range h.Matches {
		if m.Start < end || m.End <= m.Start || m.End > len(s) {
			return fmt.Errorf("snippet %q: span %v out of order or range", s, m)
		}
		end = m.End
		part := search.Normalize(s[m.Start:m.End])
		if !slices.ContainsFunc(q.Terms, func(t string) bool { return strings.Contains(t, part) || strings.Contains(part, t) }) {
			return fmt.Errorf("snippet %q: span %q matches no term of %q", s, s[m.Start:m.End], q.Terms)
		}
	}
	return nil
}

// wantSearch checks one search on the case's store: recall.Search returns
// exactly want, in search order (see search.Compare), and the same as
// search.Scan (see CompareSearch). Each search runs twice: with the
// page size of opts and one hit a page.
func (e *env) wantSearch(opts recall.SearchOptions, want ...hitID) {
	e.t.Helper()
	for _, limit := range []int{opts.Limit, 1} {
		opts.Limit = limit
		got, err := SearchAll(e.ctx, e.s, opts, recall.Search)
		if err != nil {
			e.t.Errorf("Search %q %s: %v", opts.Query, optsString(opts), err)
			continue
		}
		e.wantHits(fmt.Sprintf("Search %q %s", opts.Query, optsString(opts)), got, want)
		if err := CompareSearch(e.ctx, e.s, opts); err != nil {
			e.t.Error(err)
		}
	}
}

// wantHits checks that got holds exactly the hits want, in search order.
func (e *env) wantHits(what string, got []recall.Hit, want []hitID) {
	e.t.Helper()
	var ids []hitID
	for i, h := range got {
		ids = append(ids, idOf(h))
		if i > 0 && search.Compare(got[i-1], h) >= 0 {
			e.t.Errorf("%s: hit %s does not sort before %s", what, idOf(got[i-1]), idOf(h))
		}
	}
	sortIDs := func(s []hitID) []hitID {
		s = slices.Clone(s)
		slices.SortFunc(s, func(a, b hitID) int { return strings.Compare(a.String(), b.String()) })
		return s
	}
	if g, w := sortIDs(ids), sortIDs(want); !slices.Equal(g, w) {
		e.t.Errorf("%s:\n got  %v\n want %v", what, g, w)
	}
}

// Items of every kind search looks at, and some it must not.
func userMsg(text string) recall.Item { return recall.Message("user", text) }

func assistantMsg(text string) recall.Item {
	return recall.Item(fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q}]}`, text))
}

func ref(seq int64) recall.ItemRef { return recall.ItemRef{Seq: seq} }

// testSearchRoles checks what is searched and under which role: message
// text of every role, tool calls' names and arguments, tool outputs,
// reasoning summaries; not encrypted reasoning, images or unknown items.
func testSearchRoles(e *env) {
	k := recall.Key{Project: "p", Session: "roles"}
	e.mustAdd(k,
		userMsg("Please fix the tokenizer, zebra"),                                                                                                  // 1
		assistantMsg("The Tokenizer is fixed. zebra"),                                                                                               // 2
		recall.Item(`{"type":"message","role":"developer","content":"You are careful with tokenizers."}`),                                           // 3
		recall.Item(`{"type":"message","role":"system","content":[{"type":"input_text","text":"system prompt zebra"}]}`),                            // 4
		recall.Item(`{"type":"function_call","call_id":"c1","name":"grep_repo","arguments":"{\"pattern\":\"tokenizer\"}"}`),                         // 5
		recall.Item(`{"type":"function_call_output","call_id":"c1","output":"tokenizer.go:12: func Tokenize"}`),                                     // 6
		recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"Think about the tokenizer"}],"encrypted_content":"secretblob"}`), // 7
		recall.Item(`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,imagedata"}]}`),            // 8
		recall.Item(`{"type":"custom_thing","text":"tokenizer unknown"}`),                                                                           // 9
		recall.Item(`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I cannot zebra"}]}`),                              // 10
	)
	q := recall.SearchOptions{Query: "tokenizer"}
	e.wantSearch(q,
		hitID{k, ref(1), recall.RoleUser}, hitID{k, ref(2), recall.RoleAssistant},
		hitID{k, ref(3), recall.RoleSystem}, hitID{k, ref(5), recall.RoleTool},
		hitID{k, ref(6), recall.RoleTool}, hitID{k, ref(7), recall.RoleAssistant})
	q.Role = recall.RoleTool
	e.wantSearch(q, hitID{k, ref(5), recall.RoleTool}, hitID{k, ref(6), recall.RoleTool})
	q.Role = recall.RoleAssistant
	e.wantSearch(q, hitID{k, ref(2), recall.RoleAssistant}, hitID{k, ref(7), recall.RoleAssistant})
	e.wantSearch(recall.SearchOptions{Query: "grep_repo"}, hitID{k, ref(5), recall.RoleTool})
	e.wantSearch(recall.SearchOptions{Query: "zebra", Role: recall.RoleSystem}, hitID{k, ref(4), recall.RoleSystem})
	e.wantSearch(recall.SearchOptions{Query: "zebra"},
		hitID{k, ref(1), recall.RoleUser}, hitID{k, ref(2), recall.RoleAssistant},
		hitID{k, ref(4), recall.RoleSystem}, hitID{k, ref(10), recall.RoleAssistant})
	for _, absent := range []string{"secretblob", "imagedata", "input_image", "unknown", "call_id", "c1 tokenizer"} {
		e.wantSearch(recall.SearchOptions{Query: absent})
	}
}

// testSearchText checks the matching rules: every term, in any order;
// quoted phrases; case; white space; substrings; CJK without spaces.
func testSearchText(e *env) {
	k := recall.Key{Project: "p", Session: "text"}
	e.mustAdd(k,
		userMsg("The Quick brown fox\n\njumps over the lazy dog"), // 1
		userMsg("brown dogs are quick too"),                       // 2
		userMsg("我叫张三，住在北京"),                                      // 3
		userMsg("ÄPFEL und Birnen; Straße"),                       // 4
		userMsg("price: 100% (tax_incl) a_b*c"),                   // 5
		assistantMsg("張三 and 张三丰 in mixed text"),                  // 6
	)
	h := func(seq int64) hitID { return hitID{k, ref(seq), recall.RoleUser} }
	a := func(seq int64) hitID { return hitID{k, ref(seq), recall.RoleAssistant} }
	cases := []struct {
		q    string
		want []hitID
	}{
		{"quick", []hitID{h(1), h(2)}},
		{"QUICK BROWN", []hitID{h(1), h(2)}},
		{"dog quick", []hitID{h(1), h(2)}},
		{`"quick brown"`, []hitID{h(1)}},
		{`"brown quick"`, nil},
		{`"fox jumps"`, []hitID{h(1)}}, // the blank line is one space
		{`"lazy dog" fox`, []hitID{h(1)}},
		{"dogs", []hitID{h(2)}},
		{"ick", []hitID{h(1), h(2)}}, // substrings match
		{"张三", []hitID{h(3), a(6)}},
		{"张", []hitID{h(3), a(6)}},
		{"北京 张三", []hitID{h(3)}},
		{"三，住", []hitID{h(3)}},
		{"張三", []hitID{a(6)}},
		{"张三丰", []hitID{a(6)}},
		{"äpfel", []hitID{h(4)}},
		{"straße", []hitID{h(4)}},
		{"100%", []hitID{h(5)}},
		{"(tax_incl)", []hitID{h(5)}},
		{"a_b*c", []hitID{h(5)}},
		{"%", []hitID{h(5)}},
		{"_", []hitID{h(5)}},
		{"quick 北京", nil},
		{"absent", nil},
	}
	for _, c := range cases {
		e.wantSearch(recall.SearchOptions{Query: c.q}, c.want...)
	}
}

// testSearchTitles checks title hits: role "title", the zero ref, the
// session's Updated time, the current title only.
func testSearchTitles(e *env) {
	k := recall.Key{Project: "p", Session: "titled"}
	other := recall.Key{Project: "p", Session: "other"}
	e.mustAdd(k, userMsg("nothing here"))
	e.mustAdd(other, userMsg("a walrus in the text"))
	_, err := recall.NewSession(e.s, k).SetTitle(e.ctx, "Walrus migration plan", recall.TitleUser)
	e.must(err)
	title := hitID{k, recall.ItemRef{}, recall.RoleTitle}
	e.wantSearch(recall.SearchOptions{Query: "walrus"}, title, hitID{other, ref(1), recall.RoleUser})
	e.wantSearch(recall.SearchOptions{Query: "walrus", Role: recall.RoleTitle}, title)
	e.wantSearch(recall.SearchOptions{Query: "walrus plan"}, title)
	e.wantSearch(recall.SearchOptions{Query: "walrus", Role: recall.RoleUser}, hitID{other, ref(1), recall.RoleUser})
	p, err := recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "migration"})
	e.must(err)
	if m := e.mustStat(k); len(p.Hits) != 1 || !p.Hits[0].Time.Equal(m.Updated) || p.Hits[0].Title != m.Title {
		e.t.Errorf("title hit %+v: want the time %s and title %q", p.Hits, m.Updated, m.Title)
	}
	_, err = recall.NewSession(e.s, k).SetTitle(e.ctx, "Renamed", recall.TitleUser)
	e.must(err)
	e.wantSearch(recall.SearchOptions{Query: "migration"})
	e.wantSearch(recall.SearchOptions{Query: "renamed"}, title)
	// An item hit carries the session's current title too.
	p, err = recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "nothing"})
	e.must(err)
	if len(p.Hits) != 1 || p.Hits[0].Title != "Renamed" {
		e.t.Errorf("item hit %+v: want the title %q", p.Hits, "Renamed")
	}
}

// testSearchViews checks the live view against the whole log: popped,
// removed, cleared and compacted-away items are hits only with WholeLog;
// a compaction's items are hits by their ref.
func testSearchViews(e *env) {
	k := recall.Key{Project: "p", Session: "views"}
	e.mustAdd(k, userMsg("okapi one"), userMsg("okapi two"), userMsg("okapi three")) // 1-3
	_, err := e.s.Pop(e.ctx, k)                                                      // 4 pops 3
	e.must(err)
	_, err = recall.NewSession(e.s, k).RemoveItem(e.ctx, ref(1)) // 5
	e.must(err)
	e.wantSearch(recall.SearchOptions{Query: "okapi"}, hitID{k, ref(2), recall.RoleUser})
	all := []hitID{{k, ref(1), recall.RoleUser}, {k, ref(2), recall.RoleUser}, {k, ref(3), recall.RoleUser}}
	e.wantSearch(recall.SearchOptions{Query: "okapi", WholeLog: true}, all...)
	e.must(recall.NewSession(e.s, k).Clear(e.ctx)) // 6
	e.wantSearch(recall.SearchOptions{Query: "okapi"})
	e.wantSearch(recall.SearchOptions{Query: "okapi", WholeLog: true}, all...)
	last := e.mustAdd(k, userMsg("okapi four"), assistantMsg("ibex five")) // 7, 8
	c := e.mustCompact(k, last, 2, userMsg("summary: okapi and ibex"), assistantMsg("ibex five"))
	e.wantSearch(recall.SearchOptions{Query: "okapi"}, hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser})
	e.wantSearch(recall.SearchOptions{Query: "ibex"},
		hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser}, hitID{k, recall.ItemRef{Seq: c, Index: 1}, recall.RoleAssistant})
	e.wantSearch(recall.SearchOptions{Query: "okapi", WholeLog: true},
		append(all, hitID{k, ref(7), recall.RoleUser}, hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser})...)
	e.wantSearch(recall.SearchOptions{Query: "ibex", WholeLog: true}, hitID{k, ref(8), recall.RoleAssistant},
		hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser}, hitID{k, recall.ItemRef{Seq: c, Index: 1}, recall.RoleAssistant})
	// A pop reaches into the compaction's items.
	_, err = e.s.Pop(e.ctx, k)
	e.must(err)
	e.wantSearch(recall.SearchOptions{Query: "ibex"}, hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser})
	after := e.mustAdd(k, userMsg("okapi six"))
	e.wantSearch(recall.SearchOptions{Query: "okapi"}, hitID{k, recall.ItemRef{Seq: c}, recall.RoleUser}, hitID{k, ref(after), recall.RoleUser})
}

// testSearchSessions checks which sessions are searched: archived ones
// only when asked, one project or all, never removed sessions or subagent
// records.
func testSearchSessions(e *env) {
	a := recall.Key{Project: "p1", Session: "a"}
	b := recall.Key{Project: "p2", Session: "b"}
	arch := recall.Key{Project: "p1", Session: "arch"}
	gone := recall.Key{Project: "p1", Session: "gone"}
	sub := recall.Key{Project: "p1", Session: "a", Subpath: "subagents/x"}
	for _, k := range []recall.Key{a, b, arch, gone, sub} {
		e.mustAdd(k, userMsg("narwhal in "+k.String()))
	}
	_, err := recall.NewSession(e.s, arch).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)})
	e.must(err)
	e.must(e.s.Remove(e.ctx, gone))
	h := func(k recall.Key) hitID { return hitID{k, ref(1), recall.RoleUser} }
	e.wantSearch(recall.SearchOptions{Query: "narwhal"}, h(a), h(b))
	e.wantSearch(recall.SearchOptions{Query: "narwhal", IncludeArchived: true}, h(a), h(b), h(arch))
	e.wantSearch(recall.SearchOptions{Query: "narwhal", Project: "p1"}, h(a))
	e.wantSearch(recall.SearchOptions{Query: "narwhal", Project: "p1", IncludeArchived: true}, h(a), h(arch))
	e.wantSearch(recall.SearchOptions{Query: "narwhal", Project: "p3"})
	e.wantSearch(recall.SearchOptions{Query: "subagents"})
	_, err = recall.NewSession(e.s, arch).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(false)})
	e.must(err)
	e.wantSearch(recall.SearchOptions{Query: "narwhal", Project: "p1"}, h(a), h(arch))
	e.must(e.s.Remove(e.ctx, a))
	e.wantSearch(recall.SearchOptions{Query: "narwhal"}, h(b), h(arch))
	// A session made again under a removed key holds only its new items.
	e.mustAdd(gone, userMsg("something else"))
	e.wantSearch(recall.SearchOptions{Query: "narwhal"}, h(b), h(arch))
}

// testSearchTimes checks Since and Until against the times of the
// entries that hold the items (imported with known times), and the order
// of hits by time, key and ref.
func testSearchTimes(e *env) {
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	entry := func(seq int64, t time.Time, text string) recall.Entry {
		en := userMsg(text).Entry()
		en.Seq, en.Time = seq, t
		return en
	}
	x := recall.Key{Project: "p", Session: "x"}
	y := recall.Key{Project: "p", Session: "y"}
	_, err := e.s.Import(e.ctx, x, entry(1, at(0), "heron early"), entry(2, at(2), "heron mid"), entry(3, at(4), "heron late"))
	e.must(err)
	_, err = e.s.Import(e.ctx, y, entry(1, at(2), "heron tie"), entry(2, at(2), "heron tie again"), entry(3, at(3), "heron"))
	e.must(err)
	h := func(k recall.Key, seq int64) hitID { return hitID{k, ref(seq), recall.RoleUser} }
	got, err := SearchAll(e.ctx, e.s, recall.SearchOptions{Query: "heron"}, recall.Search)
	e.must(err)
	want := []hitID{h(x, 3), h(y, 3), h(y, 2), h(y, 1), h(x, 2), h(x, 1)} // ties: key, then ref, descending
	var ids []hitID
	for _, g := range got {
		ids = append(ids, idOf(g))
	}
	if !slices.Equal(ids, want) {
		e.t.Errorf("hits in order %v, want %v", ids, want)
	}
	e.wantSearch(recall.SearchOptions{Query: "heron", Since: at(2)}, h(x, 3), h(y, 3), h(y, 2), h(y, 1), h(x, 2))
	e.wantSearch(recall.SearchOptions{Query: "heron", Until: at(2)}, h(x, 1))
	e.wantSearch(recall.SearchOptions{Query: "heron", Since: at(2), Until: at(3)}, h(y, 2), h(y, 1), h(x, 2))
	e.wantSearch(recall.SearchOptions{Query: "heron", Since: at(5)})
	e.wantSearch(recall.SearchOptions{Query: "heron", Since: at(3), Limit: 1}, h(x, 3), h(y, 3))
}

// testSearchPaging checks paging with the cursor: every hit once, in
// order, across page sizes, and pages that do not shift while sessions
// grow (new hits are newer and sort before the cursor).
func testSearchPaging(e *env) {
	var want []hitID
	keys := []recall.Key{{Project: "p", Session: "s1"}, {Project: "p", Session: "s2"}, {Project: "q", Session: "s3"}}
	for round := range 4 {
		for _, k := range keys {
			var items []recall.Item
			for i := range 3 {
				items = append(items, userMsg(fmt.Sprintf("gecko round %d item %d", round, i)))
			}
			last := e.mustAdd(k, items...)
			for s := last - 2; s <= last; s++ {
				want = append(want, hitID{k, ref(s), recall.RoleUser})
			}
		}
	}
	for _, limit := range []int{0, 1, 2, 5, 7, 36, 100} {
		e.wantSearch(recall.SearchOptions{Query: "gecko", Limit: limit}, want...)
	}
	// Page through while appending matching items, newer than every
	// hit so far.
	e.later()
	first, err := recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "gecko", Limit: 5})
	e.must(err)
	got := slices.Clone(first.Hits)
	next := first.Next
	for i := 0; next != ""; i++ {
		if i > len(want) {
			e.t.Fatalf("pages of Search \"gecko\" while appending: more pages than hits, the cursor does not advance")
		}
		e.mustAdd(keys[i%len(keys)], userMsg(fmt.Sprintf("gecko newer %d", i)))
		p, err := recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "gecko", Limit: 5, Cursor: next})
		e.must(err)
		got = append(got, p.Hits...)
		next = p.Next
	}
	e.wantHits("pages of Search \"gecko\" while appending", got, want)
	// A fresh search finds the new items first.
	p, err := recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "newer", Limit: 100})
	e.must(err)
	if len(p.Hits) == 0 {
		e.t.Errorf("a new search finds none of the items appended while paging")
	}
	for _, opts := range []recall.SearchOptions{{Query: "gecko"}, {Query: "gecko newer", Limit: 2}} {
		if err := CompareSearch(e.ctx, e.s, opts); err != nil {
			e.t.Error(err)
		}
	}
}

// testSearchInvalid checks that bad queries and options are refused with
// recall.ErrInvalidQuery.
func testSearchInvalid(e *env) {
	e.mustAdd(recall.Key{Project: "p", Session: "s"}, userMsg("hello"))
	for _, opts := range []recall.SearchOptions{
		{Query: ""},
		{Query: "   "},
		{Query: `"unterminated`},
		{Query: `""`},
		{Query: "hello", Role: "robot"},
		{Query: "hello", Limit: -1},
		{Query: "hello", Limit: recall.MaxSearchLimit + 1},
		{Query: "hello", Cursor: "not a cursor!"},
		{Query: "hello", Since: time.Now(), Until: time.Now().Add(-time.Hour)},
	} {
		_, err := recall.Search(e.ctx, e.s, opts)
		if !errors.Is(err, recall.ErrInvalidQuery) {
			e.t.Errorf("Search %+v: %v, want recall.ErrInvalidQuery", opts, err)
		}
	}
}

// testSearchContext checks that a search under a cancelled context
// returns the context's error.
func testSearchContext(e *env) {
	e.mustAdd(recall.Key{Project: "p", Session: "s"}, userMsg("hello"))
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := recall.Search(ctx, e.s, recall.SearchOptions{Query: "hello"}); !errors.Is(err, context.Canceled) {
		e.t.Errorf("Search under a cancelled context: %v, want context.Canceled", err)
	}
}

// searchTests are the search cases of the suite.
var searchTests = []test{
	{"Search/Roles", testSearchRoles},
	{"Search/Text", testSearchText},
	{"Search/Titles", testSearchTitles},
	{"Search/Views", testSearchViews},
	{"Search/Sessions", testSearchSessions},
	{"Search/Times", testSearchTimes},
	{"Search/Paging", testSearchPaging},
	{"Search/Invalid", testSearchInvalid},
	{"Search/Context", testSearchContext},
}

// RunSearch runs the search cases of the suite alone (Run and RunConfig
// run them too), each on a fresh store from newStore.
func RunSearch(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	for _, tc := range searchTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(open(t, newStore)) })
	}
}
