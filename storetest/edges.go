package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// The edge cases of items, and what every store does with them. The rule
// behind each: nothing panics, and nothing is silently altered — the bytes
// that went in come out, or the batch is refused whole with a sentinel
// error and nothing of it is written. docs/ITEMS.md states the same table
// for users.
//
//	case                            outcome
//	item over the size limit        ErrTooLarge, nothing written (Append, Import, compaction)
//	item exactly at the limit       accepted, byte-exact
//	50 MiB item, limit raised       accepted, byte-exact (Items, Load, Entries, Pop)
//	JSON nested 10,000 deep         accepted, byte-exact
//	JSON nested deeper than that    ErrInvalidItem (encoding/json's limit), nothing written
//	invalid UTF-8 in a string       accepted, byte-exact
//	raw NUL byte                    ErrInvalidItem (not JSON), nothing written
//	escaped NUL (\u0000)            accepted, byte-exact
//	duplicate keys                  accepted, byte-exact (both keys kept)
//	100,000 tiny items              accepted, one batch or many; seqs dense, counts exact
//	title or label: NUL, bad UTF-8  ErrInvalidItem, nothing written
//	title or label: any other text  kept exactly

// EdgeLargeSize is the size of the large item [RunEdges] sends: 50 MiB,
// above recall.DefaultMaxItemSize.
const EdgeLargeSize = 50 << 20

// EdgeRaisedLimit is the maximum item size [RunEdges] asks for when it
// checks that a large item round-trips: 64 MiB.
const EdgeRaisedLimit = 64 << 20

// EdgeManyItems is how many tiny items [RunEdges] stores in one session.
const EdgeManyItems = 100_000

// EnvEdgeFull, set to 1, makes [RunEdges] use the full sizes even under
// the race detector or -short.
const EnvEdgeFull = "RECALL_EDGE_FULL"

// edgeSizes returns the size of the item that round-trips and the number
// of tiny items. They are EdgeLargeSize and EdgeManyItems, except under
// -short or the race detector, which slows these single-goroutine,
// byte-crunching cases twentyfold while finding nothing in them: there
// they are 8 MiB and 20,000, unless EnvEdgeFull is set. The refusal of an
// item over the default limit always uses EdgeLargeSize: it costs no read.
func edgeSizes() (large, many int) {
	if (testing.Short() || raceEnabled) && os.Getenv(EnvEdgeFull) != "1" {
		return 8 << 20, 20_000
	}
	return EdgeLargeSize, EdgeManyItems
}

// RunEdges runs the edge-case items of docs/ITEMS.md against stores made
// by newStore, which must return a new, empty store whose maximum item size
// is maxItemSize (0: the store's default, recall.DefaultMaxItemSize). Each
// case is a subtest on a fresh store, checked with storekit.Verify when it
// ends.
//
// Two cases move a lot of data: a 50 MiB item read back through every
// path, and 100,000 items. Under -short or the race detector they shrink
// (see EnvEdgeFull).
func RunEdges(t *testing.T, newStore func(t *testing.T, maxItemSize int) recall.Store) {
	t.Helper()
	with := func(max int) func(t *testing.T) recall.Store {
		return func(t *testing.T) recall.Store { return newStore(t, max) }
	}
	t.Run("TooLarge/Default", func(t *testing.T) { edgeTooLargeDefault(open(t, with(0))) })
	t.Run("TooLarge/Limit", func(t *testing.T) { edgeLimit(open(t, with(1024)), 1024) })
	t.Run("Large/Raised", func(t *testing.T) { edgeLarge(open(t, with(EdgeRaisedLimit))) })
	t.Run("Nesting", func(t *testing.T) { edgeNesting(open(t, with(0))) })
	t.Run("InvalidUTF8", func(t *testing.T) { edgeInvalidUTF8(open(t, with(0))) })
	t.Run("NUL", func(t *testing.T) { edgeNUL(open(t, with(0))) })
	t.Run("DuplicateKeys", func(t *testing.T) { edgeDuplicateKeys(open(t, with(0))) })
	t.Run("ManyTinyItems", func(t *testing.T) { edgeManyItems(open(t, with(0))) })
	t.Run("TitlesAndLabels", func(t *testing.T) { edgeText(open(t, with(0))) })
}

// largeItem returns a valid item of exactly n bytes (n >= 64): a message
// whose text is a repeating pattern, so a shifted or cut copy differs.
func largeItem(n int) recall.Item {
	head, tail := `{"type":"message","role":"user","content":"`, `"}`
	const pattern = "0123456789abcdefghijklmnopqrstuvwxyz"
	body := n - len(head) - len(tail)
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte(pattern), body/len(pattern)+1)[:body]...)
	return append(b, tail...)
}

// snapshotOf is a session as it stood, to check that refused calls left it
// alone.
type snapshotOf struct {
	e    *env
	key  recall.Key
	meta recall.Meta
	log  []recall.Entry
}

func (e *env) snapshot(key recall.Key) snapshotOf {
	e.t.Helper()
	m, log := e.mustLoad(key)
	return snapshotOf{e: e, key: key, meta: m, log: log}
}

// unchanged reports any difference between the session now and the
// snapshot.
func (s snapshotOf) unchanged(what string) {
	t := s.e.t
	t.Helper()
	m, log := s.e.mustLoad(s.key)
	if d := MetaDiff(m, s.meta, true); d != "" {
		t.Errorf("%s changed the session: %s", what, d)
	}
	wantLog(t, what+": log", log, s.log, true)
}

// wantAbsent reports a session that a refused call created.
func (e *env) wantAbsent(what string, key recall.Key) {
	e.t.Helper()
	if _, err := e.s.Stat(e.ctx, key); !errors.Is(err, recall.ErrNotFound) {
		e.t.Errorf("%s created the session %s: Stat = %v", what, key, err)
	}
}

// wantRefused checks a refused call's error: it wraps target, and its text
// says what is wrong.
func wantRefused(t reporter, what string, err, target error, says string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
		return
	}
	if !strings.Contains(err.Error(), says) {
		t.Errorf("%s: error %q does not say %q", what, err, says)
	}
}

// edgeTooLargeDefault sends an item above the default limit through every
// writing call: each refuses it with ErrTooLarge and writes nothing.
func edgeTooLargeDefault(e *env) {
	t := e.t
	big := largeItem(EdgeLargeSize)
	key := recall.Key{Project: "p", Session: "existing"}
	e.mustAdd(key, msg("first"))
	before := e.snapshot(key)
	fresh := recall.Key{Project: "p", Session: "fresh"}
	limit := strconv.Itoa(recall.DefaultMaxItemSize)

	_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.ItemEntries(msg("ok"), big)...)
	wantRefused(t, "Append of a batch with a large item", err, recall.ErrTooLarge, limit)
	_, err = e.s.Append(e.ctx, fresh, recall.Guard{}, big.Entry())
	wantRefused(t, "Append of a large item to a new session", err, recall.ErrTooLarge, limit)
	e.wantAbsent("a refused large item", fresh)
	err = recall.NewSession(e.s, key).AddItems(e.ctx, big)
	wantRefused(t, "AddItems of a large item", err, recall.ErrTooLarge, limit)
	_, err = e.s.Import(e.ctx, fresh, imported(1, 0, msg("ok").Entry(), big.Entry())...)
	wantRefused(t, "Import of a large item", err, recall.ErrTooLarge, limit)
	e.wantAbsent("a refused import", fresh)
	// (A compaction over the limit: see edgeLimit, where it is cheap.)
	before.unchanged("refused large items")
	e.wantView(key, []recall.Item{msg("first")})
}

// edgeLimit checks the configured limit at its edge: an item of exactly
// max bytes is accepted, one byte more is refused, whatever the call.
func edgeLimit(e *env, max int) {
	t := e.t
	at, over := largeItem(max), largeItem(max+1)
	// Whitespace counts: the limit is on the bytes as given.
	padded := append(recall.Item(" "), largeItem(max)...)
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, at)
	before := e.snapshot(key)
	for _, it := range []recall.Item{over, padded} {
		_, err := e.s.Append(e.ctx, key, recall.Guard{}, it.Entry())
		wantRefused(t, fmt.Sprintf("Append of a %d-byte item, limit %d", len(it), max), err, recall.ErrTooLarge, strconv.Itoa(max))
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: before.meta.LastSeq, Items: []recall.Item{over}})
	_, err := e.s.Append(e.ctx, key, recall.Guard{}, comp)
	wantRefused(t, "a compaction holding an item over the limit", err, recall.ErrTooLarge, strconv.Itoa(max))
	fresh := recall.Key{Project: "p", Session: "imported"}
	_, err = e.s.Import(e.ctx, fresh, imported(1, 0, over.Entry())...)
	wantRefused(t, "Import of an item over the limit", err, recall.ErrTooLarge, strconv.Itoa(max))
	e.wantAbsent("a refused import", fresh)
	before.unchanged("items over the limit")

	// At the limit, every way in works.
	if _, err := e.s.Import(e.ctx, fresh, imported(1, 0, at.Entry())...); err != nil {
		t.Errorf("Import of an item of exactly the limit: %v", err)
	}
	comp = recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: before.meta.LastSeq, Items: []recall.Item{at}})
	if _, err := e.s.Append(e.ctx, key, recall.Guard{}, comp); err != nil {
		t.Errorf("a compaction holding an item of exactly the limit: %v", err)
	}
	e.wantView(key, []recall.Item{at})
	e.wantView(fresh, []recall.Item{at})
}

// edgeLarge round-trips one large item through every read. It reads the
// item as few times as each path needs, since each read of 50 MiB costs
// seconds under the race detector; storekit.Verify then checks Items(0)
// against Load for both sessions.
func edgeLarge(e *env) {
	t := e.t
	size, _ := edgeSizes()
	big := largeItem(size)
	want := big.Clone()
	key := recall.Key{Project: "p", Session: "large"}
	e.mustAdd(key, msg("before"))
	e.mustAdd(key, big, msg("after"))
	big[len(big)/2] = 'X' // the store must have copied it

	if live := e.mustItems(key, 2); len(live) != 2 || !bytes.Equal(live[0].Item, want) {
		t.Errorf("Items(2) does not return the large item byte for byte: %s", short(recall.PlainItems(live)))
	}
	m, log := e.mustLoad(key)
	if m.ItemCount != 3 || len(log) != 3 || !bytes.Equal(log[1].Data, want) {
		t.Errorf("Load: %d items, %d entries; the large item is not byte for byte", m.ItemCount, len(log))
	}
	es, err := e.s.Entries(e.ctx, key, 1, 1)
	if err != nil || len(es) != 1 || !bytes.Equal(es[0].Data, want) {
		t.Errorf("Entries(after 1, limit 1): %d entries, %v; want the large item", len(es), err)
	}
	fork := recall.Key{Project: "p", Session: "fork"}
	if _, err := recall.NewSession(e.s, key).Fork(e.ctx, 2, fork); err != nil {
		t.Errorf("Fork of a session holding a large item: %v", err)
	} else if live := e.mustItems(fork, 1); len(live) != 1 || !bytes.Equal(live[0].Item, want) {
		t.Errorf("the fork does not end with the large item byte for byte")
	}
	if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, msg("after")) {
		t.Errorf("Pop = %s, %v", clip(it), err)
	}
	if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, want) {
		t.Errorf("Pop of the large item = %s, %v; want it byte for byte", clip(it), err)
	}
	wantItems(t, "Items(0) after the pops", recall.PlainItems(e.mustItems(key, 0)), []recall.Item{msg("before")})
}

// nested returns an item whose innermost value is depth objects and arrays
// deep, the outer object included.
func nested(depth int) recall.Item {
	var b bytes.Buffer
	b.WriteString(`{"type":"deep","v":`)
	for i := 1; i < depth; i++ {
		if i%2 == 1 {
			b.WriteByte('[')
		} else {
			b.WriteString(`{"a":`)
		}
	}
	b.WriteString("0")
	for i := depth - 1; i >= 1; i-- {
		if i%2 == 1 {
			b.WriteByte(']')
		} else {
			b.WriteByte('}')
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// edgeNesting stores JSON nested 10,000 levels deep (encoding/json's
// limit, which recall.Item.Validate applies) and refuses anything deeper.
func edgeNesting(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "nesting"}
	deep := nested(10_000)
	e.mustAdd(key, msg("before"), deep)
	e.wantView(key, []recall.Item{msg("before"), deep})
	if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, deep) {
		t.Errorf("Pop of the deep item = %s, %v", clip(it), err)
	}
	e.mustAdd(key, deep)
	before := e.snapshot(key)
	for _, depth := range []int{10_001, 100_000} {
		_, err := e.s.Append(e.ctx, key, recall.Guard{}, nested(depth).Entry())
		wantRefused(t, fmt.Sprintf("Append of JSON nested %d deep", depth), err, recall.ErrInvalidItem, "exceeded max depth")
	}
	before.unchanged("refused deep items")
}

// edgeInvalidUTF8 stores strings that are not UTF-8: overlong forms,
// surrogates, stray continuation bytes, a cut sequence, 0xff. JSON syntax
// allows them and encoding/json accepts them, so every store keeps them
// byte for byte; a store must never "repair" them into U+FFFD.
func edgeInvalidUTF8(e *env) {
	items := []recall.Item{
		recall.Item("{\"a\":\"\xff\xfe\"}"),
		recall.Item("{\"overlong\":\"\xc0\xaf\",\"surrogate\":\"\xed\xa0\x80\",\"cont\":\"\x80\x80\"}"),
		recall.Item("{\"cut\":\"abc\xe2\x82\"}"),
		recall.Item("{\"type\":\"message\",\"role\":\"user\",\"content\":\"caf\xe9 latin-1\"}"),
		recall.Item("{\"\xff key\":1}"),
	}
	key := recall.Key{Project: "p", Session: "utf8"}
	e.mustAdd(key, items...)
	e.wantView(key, items)
	_, log := e.mustLoad(key)
	for i, ent := range log {
		if !bytes.Equal(ent.Data, items[i]) {
			e.t.Errorf("Load: entry %d is %s, want %s", i, clip(recall.Item(ent.Data)), clip(items[i]))
		}
	}
	for i := len(items) - 1; i >= 0; i-- {
		if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, items[i]) {
			e.t.Errorf("Pop = %s, %v; want %s", clip(it), err, clip(items[i]))
		}
	}
}

// edgeNUL checks NUL bytes: raw ones are not JSON and are refused; escaped
// ones are ordinary JSON and kept byte for byte.
func edgeNUL(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "nul"}
	e.mustAdd(key, msg("first"))
	before := e.snapshot(key)
	for _, bad := range []recall.Item{
		recall.Item("{\"a\":\"x\x00y\"}"),
		recall.Item("{\"a\":1}\x00"),
		recall.Item("\x00{\"a\":1}"),
		recall.Item("{\"a\x00\":1}"),
	} {
		_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.ItemEntries(msg("ok"), bad)...)
		wantRefused(t, fmt.Sprintf("Append of %q", bad), err, recall.ErrInvalidItem, "")
	}
	before.unchanged("refused raw NULs")

	good := []recall.Item{
		recall.Item(`{"a":"\u0000"}`),
		recall.Item(`{"\u0000":"x\u0000y","type":"message","role":"user","content":"nul \u0000 inside"}`),
		recall.Item(`{"b":["\u0000\u0000",{"c":"\u0000"}]}`),
	}
	e.mustAdd(key, good...)
	e.wantView(key, append([]recall.Item{msg("first")}, good...))
}

// edgeDuplicateKeys stores objects with repeated keys. recall keeps items
// verbatim, so both keys survive, in order; recall's own accessors read the
// last one, as encoding/json does.
func edgeDuplicateKeys(e *env) {
	t := e.t
	items := []recall.Item{
		recall.Item(`{"a":1,"a":2}`),
		recall.Item(`{"type":"message","type":"function_call","call_id":"c1","call_id":"c2"}`),
		recall.Item(`{"x":{"k":1,"k":{"k":[1,1]}},"x":null}`),
	}
	key := recall.Key{Project: "p", Session: "dups"}
	e.mustAdd(key, items...)
	e.wantView(key, items)
	live := e.mustItems(key, 0)
	if len(live) == 3 && (live[1].Item.Type() != "function_call" || live[1].Item.CallID() != "c2") {
		t.Errorf("Type/CallID of %s = %q/%q, want the last keys' values", live[1].Item, live[1].Item.Type(), live[1].Item.CallID())
	}
}

// tiny returns the i-th tiny item; each is distinct.
func tiny(i int) recall.Item { return recall.Item(`{"i":` + strconv.Itoa(i) + `}`) }

// edgeManyItems stores EdgeManyItems tiny items in one session: half in
// one atomic batch, half in batches of 500. Seqs stay dense and every read
// agrees on the count and the order (storekit.Verify adds Items(0) against
// Load).
func edgeManyItems(e *env) {
	t := e.t
	_, n := edgeSizes()
	key := recall.Key{Project: "p", Session: "many"}
	items := make([]recall.Item, n)
	for i := range items {
		items[i] = tiny(i)
	}
	half := n / 2
	if last := e.mustAdd(key, items[:half]...); last != int64(half) {
		t.Fatalf("Append of one batch of %d items returned seq %d", half, last)
	}
	for i := half; i < n; i += 500 {
		e.mustAdd(key, items[i:min(i+500, n)]...)
	}
	m := e.mustStat(key)
	if m.ItemCount != n || m.LastSeq != int64(n) {
		t.Fatalf("Stat: %d items, last seq %d; want %d, %d", m.ItemCount, m.LastSeq, n, n)
	}
	_, log := e.mustLoad(key)
	if len(log) != n {
		t.Errorf("Load: %d entries, want %d", len(log), n)
	}
	for i, ent := range log {
		if ent.Seq != int64(i+1) || !bytes.Equal(ent.Data, items[i]) {
			t.Fatalf("Load: entry %d is seq %d %s, want seq %d %s", i, ent.Seq, ent.Data, i+1, items[i])
		}
	}
	wantItems(t, "Items(10)", recall.PlainItems(e.mustItems(key, 10)), items[n-10:])
	es, err := e.s.Entries(e.ctx, key, int64(n-5), 0)
	if err != nil || len(es) != 5 || !bytes.Equal(es[4].Data, items[n-1]) {
		t.Errorf("Entries(after %d) = %d entries, %v; want the last 5", n-5, len(es), err)
	}
	if it, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(it, items[n-1]) {
		t.Errorf("Pop = %s, %v", clip(it), err)
	}
	page, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ItemCount != n-1 {
		t.Errorf("List = %+v, %v; want one session of %d items", page.Sessions, err, n-1)
	}
}

// edgeText checks titles and labels, which are text rather than JSON: a
// NUL byte (which PostgreSQL's text cannot hold) or bytes that are not
// UTF-8 (which encoding/json would turn into U+FFFD) are refused by every
// store alike, and nothing is written; any other text comes back exactly.
func edgeText(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "text"}
	e.mustAdd(key, msg("first"))
	before := e.snapshot(key)
	for _, bad := range []string{"a\x00b", "caf\xe9", "\xff", "cut \xe2\x82"} {
		_, err := recall.NewSession(e.s, key).SetTitle(e.ctx, bad, recall.TitleUser)
		wantRefused(t, fmt.Sprintf("SetTitle(%q)", bad), err, recall.ErrInvalidItem, "title")
		_, err = recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"ok", bad}, SetLabels: true})
		wantRefused(t, fmt.Sprintf("SetLabels(%q)", bad), err, recall.ErrInvalidItem, "label")
	}
	// The same payloads appended directly, bypassing the helpers.
	for _, data := range []string{
		`{"title":"a\u0000b","source":"user"}`,
		"{\"title\":\"caf\xe9\",\"source\":\"user\"}",
	} {
		_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.Entry{Kind: recall.KindTitle, Data: []byte(data)})
		wantRefused(t, fmt.Sprintf("Append of a title entry %q", data), err, recall.ErrInvalidItem, "title")
	}
	_, err := e.s.Append(e.ctx, key, recall.Guard{}, recall.Entry{Kind: recall.KindMeta, Data: []byte(`{"labels":["x\u0000"],"set_labels":true}`)})
	wantRefused(t, "Append of a label with an escaped NUL", err, recall.ErrInvalidItem, "label")
	before.unchanged("refused titles and labels")

	// A title's runs of white space become one space (SetTitle says so);
	// a label is kept as it is.
	good := "héllo 世界 🎉 <&> \"quoted\" back\\slash \x7f \\u0000"
	label := good + "\u2028\t\n"
	m, err := recall.NewSession(e.s, key).SetTitle(e.ctx, good, recall.TitleUser)
	if err != nil || m.Title != good {
		t.Errorf("SetTitle(%q) = %q, %v", good, m.Title, err)
	}
	m, err = recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{label, "b"}, SetLabels: true})
	if err != nil || len(m.Labels) != 2 || m.Labels[0] != label {
		t.Errorf("SetLabels(%q) = %q, %v", label, m.Labels, err)
	}
	page, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != good || len(page.Sessions[0].Labels) != 2 || page.Sessions[0].Labels[0] != label {
		t.Errorf("List = %+v, %v; want the title and labels as set", page.Sessions, err)
	}
}
