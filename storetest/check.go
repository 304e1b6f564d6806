package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// reporter is what the checks need of a test: *testing.T and *rapid.T both
// satisfy it.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// env is one subtest's store.
type env struct {
	t      *testing.T
	ctx    context.Context
	s      recall.Store
	closed bool
	// plant is Config.Plant, or nil.
	plant func(t *testing.T, s recall.Store, key recall.Key, data []byte)
	// hold is Config.Hold, or nil.
	hold func(t *testing.T, s recall.Store, key recall.Key) (waiting func() bool, release func())
	// maxProject is Config.MaxProject, or 0.
	maxProject int
}

// open makes a fresh store for t. It closes the store when t ends, after
// checking it with storekit.Verify: every subtest leaves a consistent store.
func open(t *testing.T, newStore func(t *testing.T) recall.Store) *env {
	t.Helper()
	s := newStore(t)
	if s == nil {
		t.Fatal("storetest: newStore returned nil")
	}
	e := &env{t: t, ctx: t.Context(), s: s}
	// Cleanups run last-registered first: Verify, then Close. t.Context is
	// cancelled by then, so they use a background context.
	t.Cleanup(func() {
		if e.closed {
			return
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Cleanup(func() {
		if e.closed {
			return
		}
		if err := storekit.Verify(context.Background(), s); err != nil {
			t.Errorf("storekit.Verify after the test: %v", err)
		}
	})
	return e
}

// VerifyAfter registers a cleanup on t that fails the test when
// storekit.Verify finds an inconsistency in s. Register it after the cleanup
// that closes s, so it runs first.
func VerifyAfter(t testing.TB, s recall.Store) {
	t.Helper()
	t.Cleanup(func() {
		if err := storekit.Verify(context.Background(), s); err != nil {
			t.Errorf("storekit.Verify: %v", err)
		}
	})
}

// msg is an item that names itself, for tests that count items.
func msg(format string, args ...any) recall.Item {
	return recall.Message("user", fmt.Sprintf(format, args...))
}

// msgs returns n distinct message items labelled prefix.
func msgs(prefix string, n int) []recall.Item {
	out := make([]recall.Item, n)
	for i := range out {
		out[i] = msg("%s-%d", prefix, i)
	}
	return out
}

// must fails the test on an unexpected error.
func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// changeMeta returns the step that applies c to key with recall.StoreSession.ChangeMeta.
func (e *env) changeMeta(key recall.Key, c recall.MetaChange) func() error {
	return func() error {
		_, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, c)
		return err
	}
}

// mustAppend appends items to key and fails the test on error.
func (e *env) mustAppend(key recall.Key, entries ...recall.Entry) int64 {
	e.t.Helper()
	seq, err := e.s.Append(e.ctx, key, recall.Guard{}, entries...)
	if err != nil {
		e.t.Fatalf("Append %s: %v", key, err)
	}
	return seq
}

// mustAdd appends items to key as one batch.
func (e *env) mustAdd(key recall.Key, items ...recall.Item) int64 {
	e.t.Helper()
	return e.mustAppend(key, recall.ItemEntries(items...)...)
}

// mustStat returns key's metadata and fails the test on error.
func (e *env) mustStat(key recall.Key) recall.Meta {
	e.t.Helper()
	m, err := e.s.Stat(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Stat %s: %v", key, err)
	}
	return m
}

// mustLoad returns key's log and fails the test on error.
func (e *env) mustLoad(key recall.Key) (recall.Meta, []recall.Entry) {
	e.t.Helper()
	m, es, err := e.s.Load(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Load %s: %v", key, err)
	}
	return m, es
}

// mustItems returns Items(key, limit) and fails the test on error. It
// also checks the LastSeq Items returns against Stat's (see wantLastSeq).
func (e *env) mustItems(key recall.Key, limit int) []recall.LiveItem {
	e.t.Helper()
	live, last, err := e.s.Items(e.ctx, key, limit)
	if err != nil {
		e.t.Fatalf("Items %s %d: %v", key, limit, err)
	}
	e.wantLastSeq(fmt.Sprintf("Items(%s, %d)", key, limit), key, last)
	return live
}

// wantLastSeq checks a LastSeq that a read of key returned against
// Stat's, read right after it (0 for a session that does not exist). The
// tests call it when nothing writes to key meanwhile.
func (e *env) wantLastSeq(what string, key recall.Key, got int64) {
	e.t.Helper()
	want := int64(0)
	m, err := e.s.Stat(e.ctx, key)
	switch {
	case err == nil:
		want = m.LastSeq
	case !errors.Is(err, recall.ErrNotFound):
		e.t.Errorf("Stat(%s): %v", key, err)
		return
	}
	if got != want {
		e.t.Errorf("%s returned LastSeq %d, Stat says %d", what, got, want)
	}
}

// later waits until the clock has moved on, so that the next write's time
// is after every earlier one: the tests that check the order of Updated
// call it between writes.
func (e *env) later() {
	time.Sleep(2 * time.Millisecond)
}

// wantView checks every way of reading key's items against want: Items
// and GetItems for several limits, the LastSeq Items returns, and the item
// count in Stat.
func (e *env) wantView(key recall.Key, want []recall.Item) {
	e.t.Helper()
	sess := recall.NewSession(e.s, key)
	for _, limit := range []int{0, -1, 1, 2, 3, len(want), len(want) + 5} {
		w := want
		if limit > 0 && limit < len(w) {
			w = w[len(w)-limit:]
		}
		live, last, err := e.s.Items(e.ctx, key, limit)
		if err != nil {
			e.t.Errorf("Items(%s, %d): %v", key, limit, err)
			continue
		}
		e.wantLastSeq(fmt.Sprintf("Items(%s, %d)", key, limit), key, last)
		wantItems(e.t, fmt.Sprintf("Items(%s, %d)", key, limit), recall.PlainItems(live), w)
		got, err := sess.GetItems(e.ctx, limit)
		if err != nil {
			e.t.Errorf("GetItems(%s, %d): %v", key, limit, err)
			continue
		}
		wantItems(e.t, fmt.Sprintf("GetItems(%s, %d)", key, limit), got, w)
	}
	if m, err := e.s.Stat(e.ctx, key); err == nil && m.ItemCount != len(want) {
		e.t.Errorf("Stat(%s).ItemCount = %d, want %d", key, m.ItemCount, len(want))
	}
}

// wantItems reports a difference between item lists, byte for byte.
func wantItems(t reporter, what string, got, want []recall.Item) {
	t.Helper()
	if diff := itemsDiff(got, want); diff != "" {
		t.Errorf("%s: %s", what, diff)
	}
}

// itemsDiff describes how got differs from want, or returns "".
func itemsDiff(got, want []recall.Item) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d items %s, want %d %s", len(got), short(got), len(want), short(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			return fmt.Sprintf("item %d is %s, want %s", i, clip(got[i]), clip(want[i]))
		}
	}
	return ""
}

// short renders a few items for a failure message.
func short(items []recall.Item) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if i == 6 {
			fmt.Fprintf(&b, " ...%d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(clip(it))
	}
	b.WriteByte(']')
	return b.String()
}

// clip quotes an item, cut to a readable length.
func clip(it recall.Item) string {
	if it == nil {
		return "nil"
	}
	if len(it) > 120 {
		return fmt.Sprintf("%q...(%d bytes)", it[:120], len(it))
	}
	return fmt.Sprintf("%q", it)
}

// wantErr reports err unless it wraps target.
func wantErr(t reporter, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// sentinels are the error classes the suite tells apart.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrInvalidKey", recall.ErrInvalidKey},
	{"ErrInvalidItem", recall.ErrInvalidItem},
	{"ErrInvalidMetadata", recall.ErrInvalidMetadata},
	{"ErrTooLarge", recall.ErrTooLarge},
	{"ErrNotFound", recall.ErrNotFound},
	{"ErrConflict", recall.ErrConflict},
	{"ErrCorrupt", recall.ErrCorrupt},
	{"ErrUnsupported", recall.ErrUnsupported},
	{"ErrClosed", recall.ErrClosed},
}

// ErrorClass names the recall sentinel err wraps: "nil" for no error,
// "ErrNotFound", "ErrConflict" and so on, or "other: ..." for an error that
// wraps none of them. Two stores agree on an outcome when their errors have
// the same class.
func ErrorClass(err error) string {
	if err == nil {
		return "nil"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "other: " + err.Error()
}

// MetaDiff describes how got differs from want, field by field, or returns
// "". Times compare as instants (time.Equal); with times false they are
// left out, for comparing stores whose clocks differ.
func MetaDiff(got, want recall.Meta, times bool) string {
	var d []string
	add := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w)) }
	if got.Key != want.Key {
		add("Key", got.Key, want.Key)
	}
	if got.Title != want.Title || got.TitleSource != want.TitleSource {
		add("Title", fmt.Sprintf("%q/%q", got.Title, got.TitleSource), fmt.Sprintf("%q/%q", want.Title, want.TitleSource))
	}
	if got.FirstPrompt != want.FirstPrompt {
		add("FirstPrompt", fmt.Sprintf("%q", got.FirstPrompt), fmt.Sprintf("%q", want.FirstPrompt))
	}
	if times && !got.Created.Equal(want.Created) {
		add("Created", got.Created, want.Created)
	}
	if times && !got.Updated.Equal(want.Updated) {
		add("Updated", got.Updated, want.Updated)
	}
	if got.ItemCount != want.ItemCount {
		add("ItemCount", got.ItemCount, want.ItemCount)
	}
	if got.LastSeq != want.LastSeq {
		add("LastSeq", got.LastSeq, want.LastSeq)
	}
	if got.Archived != want.Archived {
		add("Archived", got.Archived, want.Archived)
	}
	if got.Pinned != want.Pinned {
		add("Pinned", got.Pinned, want.Pinned)
	}
	if got.Trashed.IsZero() != want.Trashed.IsZero() || times && !got.Trashed.Equal(want.Trashed) {
		add("Trashed", got.Trashed, want.Trashed)
	}
	if !(len(got.Labels) == 0 && len(want.Labels) == 0) && !slices.Equal(got.Labels, want.Labels) {
		add("Labels", fmt.Sprintf("%q", got.Labels), fmt.Sprintf("%q", want.Labels))
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		add("Metadata", got.Metadata, want.Metadata)
	}
	if !reflect.DeepEqual(got.ForkedFrom, want.ForkedFrom) {
		add("ForkedFrom", forkString(got.ForkedFrom), forkString(want.ForkedFrom))
	}
	if got.Usage != want.Usage {
		add("Usage", got.Usage, want.Usage)
	}
	if got.Corrupt != want.Corrupt {
		add("Corrupt", got.Corrupt, want.Corrupt)
	}
	return strings.Join(d, "; ")
}

func forkString(f *recall.ForkOrigin) string {
	if f == nil {
		return "nil"
	}
	return fmt.Sprintf("%s@%d", f.Key, f.Seq)
}

// EntryDiff describes how got differs from want, or returns "". Item
// entries must hold the same bytes; other payloads the same JSON value, so
// a store may re-encode what recall itself generated. Times compare as
// instants when times is true.
func EntryDiff(got, want recall.Entry, times bool) string {
	var d []string
	if got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("Seq = %d, want %d", got.Seq, want.Seq))
	}
	if got.Kind != want.Kind {
		d = append(d, fmt.Sprintf("Kind = %q, want %q", got.Kind, want.Kind))
	}
	if times && !got.Time.Equal(want.Time) {
		d = append(d, fmt.Sprintf("Time = %v, want %v", got.Time, want.Time))
	}
	if want.Kind == recall.KindItem {
		if !bytes.Equal(got.Data, want.Data) {
			d = append(d, fmt.Sprintf("item = %s, want %s", clip(recall.Item(got.Data)), clip(recall.Item(want.Data))))
		}
	} else if !jsonEqual(got.Data, want.Data) {
		d = append(d, fmt.Sprintf("Data = %s, want %s", got.Data, want.Data))
	}
	gu, wu := recall.Usage{}, recall.Usage{}
	if got.Usage != nil {
		gu = *got.Usage
	}
	if want.Usage != nil {
		wu = *want.Usage
	}
	if gu != wu {
		d = append(d, fmt.Sprintf("Usage = %v, want %v", gu, wu))
	}
	return strings.Join(d, "; ")
}

// jsonEqual reports whether a and b hold the same JSON value; two empty
// payloads are equal, as are an empty payload and null.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, errA := decodeAny(a)
	vb, errB := decodeAny(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

func decodeAny(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// wantLog compares a whole log with want.
func wantLog(t reporter, what string, got, want []recall.Entry, times bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if d := EntryDiff(got[i], want[i], times); d != "" {
			t.Errorf("%s: entry %d: %s", what, i, d)
		}
	}
}

// plausibleTime reports whether a store-assigned time is near the local
// clock. The window is wide: a database server's clock may differ a little
// from the test's.
func plausibleTime(tm time.Time) bool {
	d := time.Since(tm)
	return !tm.IsZero() && d < time.Hour && d > -time.Hour
}

// oldTime returns a fixed time in 2001 plus n minutes, in UTC at
// microsecond precision, for imported entries that make a session old.
func oldTime(n int) time.Time {
	return time.Date(2001, 2, 3, 4, 5, 6, 789000, time.UTC).Add(time.Duration(n) * time.Minute)
}

// imported returns a log of entries numbered from first, stamped with
// oldTime(minute), ready for Import.
func imported(first int64, minute int, entries ...recall.Entry) []recall.Entry {
	out := make([]recall.Entry, len(entries))
	for i, e := range entries {
		e.Seq = first + int64(i)
		e.Time = oldTime(minute)
		out[i] = e
	}
	return out
}

// listAll walks every page of List and returns the sessions in order,
// failing on a page that repeats a session, a page larger than the limit,
// or a cursor loop.
func listAll(t reporter, ctx context.Context, s recall.Store, project string, opts recall.ListOptions) []recall.Meta {
	t.Helper()
	var all []recall.Meta
	seen := map[recall.Key]bool{}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatalf("List(%q): more than 10000 pages: the cursor does not advance", project)
		}
		p, err := s.List(ctx, project, opts)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", project, opts, err)
		}
		limit := opts.Limit
		if limit == 0 {
			limit = recall.DefaultListLimit
		}
		if limit > 0 && len(p.Sessions) > limit {
			t.Errorf("List(%q) page of %d sessions, limit %d", project, len(p.Sessions), limit)
		}
		if p.Next != "" && limit > 0 && len(p.Sessions) != limit {
			t.Errorf("List(%q): a page of %d sessions before the last, want %d", project, len(p.Sessions), limit)
		}
		if p.Next != "" && limit < 0 {
			t.Errorf("List(%q) without a limit returned a next cursor", project)
		}
		for _, m := range p.Sessions {
			if seen[m.Key] {
				t.Errorf("List(%q): %s appears twice", project, m.Key)
			}
			seen[m.Key] = true
			all = append(all, m)
		}
		if p.Next == "" {
			return all
		}
		if len(p.Sessions) == 0 {
			t.Fatalf("List(%q): an empty page with a next cursor", project)
		}
		opts.Cursor = p.Next
	}
}

// keysOf returns the keys of metas, in order.
func keysOf(metas []recall.Meta) []recall.Key {
	out := make([]recall.Key, len(metas))
	for i, m := range metas {
		out[i] = m.Key
	}
	return out
}

// wantListOrder reports metas that are not in List order: newest updated
// first, ties by project, session and subpath.
func wantListOrder(t reporter, what string, metas []recall.Meta) {
	t.Helper()
	sorted := slices.Clone(metas)
	storekit.SortList(sorted)
	if !slices.Equal(keysOf(metas), keysOf(sorted)) {
		t.Errorf("%s: not newest-updated first:\n got %v\nwant %v", what, keysOf(metas), keysOf(sorted))
	}
}
