package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/storekit"
)

// RunSearchModel is the model-based test of search: rapid draws random
// sequences of appends (English and Chinese text, many roles, times that
// tie), pops, item removals, clears, compactions, titles, archiving,
// removals and subagent records, and after every step a random search
// (terms, phrases, CJK terms of one and two characters, upper case; role,
// project, archived, time range, WholeLog and page size drawn too). The
// store's recall.Search, read page by page with its cursor, must return
// exactly the hits of a brute-force scan over the log the test keeps
// itself, in the same order (see search.Compare), with the same times
// and titles.
//
// The test writes entries with times it chooses where the store lets it
// (appends, compactions) and reads back the time the store gave the
// others (pops, clears, titles). Like RunModel it makes one store and
// removes what a sequence created before the next starts. Run and
// RunConfig run it as the subtest "SearchModel".
func RunSearchModel(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	sut := storeOf(t, newStore)
	rapid.Check(t, func(rt *rapid.T) {
		m := &searchModel{t: rt, ctx: rt.Context(), sut: sut, logs: map[recall.Key][]recall.Entry{},
			clock: storekit.Now().Add(-time.Hour)}
		m.reset()
		for range rapid.IntRange(1, maxModelOps).Draw(rt, "ops") {
			m.do(rapid.SampledFrom(searchModelOps).Draw(rt, "op"))
			m.search()
		}
		for range 5 {
			m.search()
		}
	})
}

// searchModelOps are the operations the search model draws from; a name
// listed twice is drawn twice as often.
var searchModelOps = []string{
	"append", "append", "append", "append", "pop", "removeItem", "clear",
	"compact", "title", "archive", "remove", "subagent",
}

// searchWords is the vocabulary of the model's texts and queries: words
// that share substrings, mixed case, Chinese without spaces.
var searchWords = []string{
	"alpha", "Alphabet", "beta", "Gamma", "tokenizer", "token", "北京", "张三", "住在", "我叫", "東京", "三",
}

// searchModel runs one sequence against the store under test and the
// logs the test keeps.
type searchModel struct {
	t     *rapid.T
	ctx   context.Context
	sut   recall.Store
	logs  map[recall.Key][]recall.Entry
	clock time.Time // the time of the model's next append
}

// searchKeys are the model's main sessions; subagent records hang under
// the first.
func searchKeys() []recall.Key {
	var out []recall.Key
	for _, p := range modelProjects {
		for _, s := range modelSessions {
			out = append(out, recall.Key{Project: p, Session: s})
		}
	}
	return out
}

var searchSubagent = recall.Key{Project: modelProjects[0], Session: modelSessions[0], Subpath: modelSubpaths[0]}

func (m *searchModel) reset() {
	for _, k := range append([]recall.Key{searchSubagent}, searchKeys()...) {
		if err := m.sut.Remove(m.ctx, k); err != nil && !errors.Is(err, recall.ErrNotFound) {
			m.t.Fatalf("reset: Remove %s: %v", k, err)
		}
	}
}

// text draws a text of one to five words, joined by spaces, line breaks
// or nothing.
func (m *searchModel) text(label string) string {
	n := rapid.IntRange(1, 5).Draw(m.t, label+"Words")
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(rapid.SampledFrom([]string{" ", " ", "\n\n", "", ", "}).Draw(m.t, label+"Sep"))
		}
		b.WriteString(rapid.SampledFrom(searchWords).Draw(m.t, label+"Word"))
	}
	return b.String()
}

// item draws an item of a kind search reads.
func (m *searchModel) item() recall.Item {
	text := m.text("item")
	switch rapid.IntRange(0, 4).Draw(m.t, "kind") {
	case 0:
		return recall.Message("user", text)
	case 1:
		return assistantMsg(text)
	case 2:
		return recall.Item(fmt.Sprintf(`{"type":"function_call","call_id":"c","name":"run","arguments":%q}`, text))
	case 3:
		return recall.Item(fmt.Sprintf(`{"type":"function_call_output","call_id":"c","output":%q}`, text))
	default:
		return recall.Item(fmt.Sprintf(`{"type":"reasoning","summary":[{"type":"summary_text","text":%q}],"encrypted_content":"alpha"}`, text))
	}
}

// tick returns the time of the next append: now and then the same as the
// last, so hits tie on time.
func (m *searchModel) tick() time.Time {
	if rapid.IntRange(0, 3).Draw(m.t, "sameTime") > 0 {
		m.clock = m.clock.Add(time.Millisecond)
	}
	return m.clock
}

func (m *searchModel) lastSeq(k recall.Key) int64 {
	if l := m.logs[k]; len(l) > 0 {
		return l[len(l)-1].Seq
	}
	return 0
}

// readBack adds to the model the entries the store wrote to k after seq
// after, as the store holds them, checking that they are the kinds want.
func (m *searchModel) readBack(what string, k recall.Key, after int64, want ...recall.Kind) {
	es, err := m.sut.Entries(m.ctx, k, after, 0)
	if err != nil {
		m.t.Fatalf("%s: Entries %s after %d: %v", what, k, after, err)
	}
	var kinds []recall.Kind
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, want) {
		m.t.Fatalf("%s wrote entries of kinds %v to %s, want %v", what, kinds, k, want)
	}
	m.logs[k] = append(m.logs[k], es...)
}

func (m *searchModel) live(k recall.Key) (recall.Meta, []recall.LiveItem) {
	return recall.Replay(k, m.logs[k])
}

func (m *searchModel) do(op string) {
	t := m.t
	key := rapid.SampledFrom(searchKeys()).Draw(t, "key")
	before := m.lastSeq(key)
	switch op {
	case "append", "subagent":
		if op == "subagent" {
			key, before = searchSubagent, m.lastSeq(searchSubagent)
		}
		var entries []recall.Entry
		at := m.tick()
		for range rapid.IntRange(1, 3).Draw(t, "n") {
			e := m.item().Entry()
			e.Time = at
			entries = append(entries, e)
		}
		last, err := m.sut.Append(m.ctx, key, recall.Guard{}, entries...)
		if err != nil {
			t.Fatalf("Append %s: %v", key, err)
		}
		for i := range entries {
			entries[i].Seq = last - int64(len(entries)-1-i)
		}
		if entries[0].Seq != before+1 {
			t.Fatalf("Append %s returned seq %d after %d for %d entries", key, last, before, len(entries))
		}
		m.logs[key] = append(m.logs[key], entries...)
	case "pop":
		if _, err := m.sut.Pop(m.ctx, key); err != nil {
			t.Fatalf("Pop %s: %v", key, err)
		}
		if _, live := m.live(key); len(live) > 0 {
			m.readBack("Pop", key, before, recall.KindPop)
		}
	case "removeItem":
		_, live := m.live(key)
		if len(live) == 0 {
			return
		}
		l := rapid.SampledFrom(live).Draw(t, "ref")
		if _, err := recall.NewSession(m.sut, key).RemoveItem(m.ctx, l.Ref); err != nil {
			t.Fatalf("RemoveItem %s %v: %v", key, l.Ref, err)
		}
		m.readBack("RemoveItem", key, before, recall.KindRemove)
	case "clear":
		if err := recall.NewSession(m.sut, key).Clear(m.ctx); err != nil {
			t.Fatalf("Clear %s: %v", key, err)
		}
		if before > 0 {
			m.readBack("Clear", key, before, recall.KindClear)
		}
	case "compact":
		if before == 0 {
			return
		}
		_, live := m.live(key)
		items := []recall.Item{recall.Message("user", "summary: "+m.text("summary"))}
		if len(live) > 0 {
			items = append(items, live[len(live)-1].Item)
		}
		e := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: before, Replaced: len(live), Items: items, Strategy: "storetest"})
		e.Time = m.tick()
		seq, err := m.sut.Append(m.ctx, key, recall.IfLastSeq(before), e)
		if err != nil {
			t.Fatalf("compaction of %s: %v", key, err)
		}
		e.Seq = seq
		m.logs[key] = append(m.logs[key], e)
	case "title":
		if before == 0 {
			return
		}
		if _, err := recall.NewSession(m.sut, key).SetTitle(m.ctx, m.text("title"), recall.TitleUser); err != nil {
			t.Fatalf("SetTitle %s: %v", key, err)
		}
		m.readBack("SetTitle", key, before, recall.KindTitle)
	case "archive":
		if before == 0 {
			return
		}
		meta, _ := m.live(key)
		if _, err := recall.NewSession(m.sut, key).ChangeMeta(m.ctx, recall.MetaChange{Archived: new(!meta.Archived)}); err != nil {
			t.Fatalf("SetArchived %s: %v", key, err)
		}
		m.readBack("SetArchived", key, before, recall.KindMeta)
	case "remove":
		err := m.sut.Remove(m.ctx, key)
		if err != nil && !(errors.Is(err, recall.ErrNotFound) && before == 0) {
			t.Fatalf("Remove %s: %v", key, err)
		}
		delete(m.logs, key)
		if key == searchSubagent.Parent() {
			delete(m.logs, searchSubagent)
		}
	default:
		panic("storetest: unknown search model op " + op)
	}
}

// query draws a query of one or two terms, words or quoted phrases, at
// times upper case.
func (m *searchModel) query() string {
	var terms []string
	for range rapid.IntRange(1, 2).Draw(m.t, "terms") {
		w := rapid.SampledFrom(append(searchWords, "ALPHA", "ken", "京", "summary", "a")).Draw(m.t, "term")
		switch rapid.IntRange(0, 3).Draw(m.t, "termKind") {
		case 0:
			w = `"` + w + " " + rapid.SampledFrom(searchWords).Draw(m.t, "phraseWord") + `"`
		case 1:
			w = `"` + w + rapid.SampledFrom(searchWords).Draw(m.t, "phraseWord") + `"`
		}
		terms = append(terms, w)
	}
	return strings.Join(terms, " ")
}

// search draws a search and checks the store's pages against the brute
// force over the model's logs.
func (m *searchModel) search() {
	t := m.t
	opts := recall.SearchOptions{
		Query:           m.query(),
		Project:         rapid.SampledFrom([]string{"", "", modelProjects[1]}).Draw(t, "project"),
		IncludeArchived: rapid.Bool().Draw(t, "archived"),
		Role:            rapid.SampledFrom([]string{"", "", "", recall.RoleUser, recall.RoleAssistant, recall.RoleTool, recall.RoleTitle}).Draw(t, "role"),
		WholeLog:        rapid.Bool().Draw(t, "wholeLog"),
		Limit:           rapid.SampledFrom([]int{0, 1, 2, 3, 7}).Draw(t, "limit"),
	}
	if rapid.IntRange(0, 4).Draw(t, "timeRange") == 0 {
		opts.Since = m.clock.Add(-time.Duration(rapid.IntRange(0, 20).Draw(t, "since")) * time.Millisecond)
	}
	got, err := SearchAll(m.ctx, m.sut, opts, recall.Search)
	if err != nil {
		t.Fatalf("Search %q %s: %v", opts.Query, optsString(opts), err)
	}
	want := m.bruteForce(opts)
	if d := hitsDiff(got, want); d != "" {
		t.Fatalf("Search %q %s differs from the brute force over the model: %s", opts.Query, optsString(opts), d)
	}
	q, _ := search.Parse(opts.Query)
	for _, h := range got {
		if err := checkSnippet(h, q); err != nil {
			t.Fatalf("Search %q: hit %s: %v", opts.Query, idOf(h), err)
		}
	}
}

// bruteForce is search written plainly over the model's logs: every main
// session, replayed; every item of the view (or of the whole log) and the
// title, matched term by term.
func (m *searchModel) bruteForce(opts recall.SearchOptions) []recall.Hit {
	q, err := search.Parse(opts.Query)
	if err != nil {
		m.t.Fatalf("search.Parse %q: %v", opts.Query, err)
	}
	var out []recall.Hit
	for key, log := range m.logs {
		meta, live := recall.Replay(key, log)
		if !key.IsMain() || opts.Project != "" && key.Project != opts.Project || meta.Archived && !opts.IncludeArchived {
			continue
		}
		timeOf := map[int64]time.Time{}
		for _, e := range log {
			timeOf[e.Seq] = e.Time
		}
		consider := func(ref recall.ItemRef, role, text string, at time.Time) {
			if text == "" || opts.Role != "" && role != opts.Role || !opts.Since.IsZero() && at.Before(opts.Since) {
				return
			}
			norm := search.Normalize(text)
			for _, term := range q.Terms {
				if !strings.Contains(norm, term) {
					return
				}
			}
			out = append(out, recall.Hit{Key: key, Title: meta.Title, Ref: ref, Role: role, Time: at})
		}
		if opts.WholeLog {
			for _, e := range log {
				if it, ok := e.Item(); ok {
					role, text := search.Text(it)
					consider(recall.ItemRef{Seq: e.Seq}, role, text, e.Time)
				}
				if e.Kind == recall.KindCompaction {
					var c recall.Compaction
					if err := json.Unmarshal(e.Data, &c); err != nil {
						m.t.Fatalf("the model's compaction does not decode: %v", err)
					}
					for i, it := range c.Items {
						role, text := search.Text(it)
						consider(recall.ItemRef{Seq: e.Seq, Index: i}, role, text, e.Time)
					}
				}
			}
		} else {
			for _, l := range live {
				role, text := search.Text(l.Item)
				consider(l.Ref, role, text, timeOf[l.Ref.Seq])
			}
		}
		consider(recall.ItemRef{}, recall.RoleTitle, meta.Title, meta.Updated)
	}
	slices.SortFunc(out, search.Compare)
	return out
}
