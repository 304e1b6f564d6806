package storetest

// The operations of the model (model.go) that take more than a few lines:
// each applies one write to the store under test and to the reference.

import (
	"fmt"
	"maps"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
)

// appendWith appends entries to key under guard in both, and compares.
func (m *model) appendWith(key recall.Key, guard recall.Guard, entries []recall.Entry) {
	m.t.Helper()
	what := fmt.Sprintf("Append of %d entries to %s with guard %+v", len(entries), key, guard)
	_, exists := m.refLog(key)
	want := guardOutcome(guard, exists, m.lastSeq(key))
	got, err := m.sut.Append(m.ctx, key, guard, entries...)
	m.wantClass(what, err, want)
	if want == "nil" {
		if len(entries) > 0 {
			m.write(key, entries...)
		}
		if got != m.lastSeq(key) {
			m.t.Fatalf("%s returned seq %d, want %d", what, got, m.lastSeq(key))
		}
	}
	m.compare(key)
}

// itemEntries returns n entries of new items, some with usage.
func (m *model) itemEntries(n int) []recall.Entry {
	entries := make([]recall.Entry, n)
	for i := range entries {
		entries[i] = m.item().Entry()
		if rapid.Bool().Draw(m.t, "usage") {
			entries[i].Usage = &recall.Usage{InputTokens: int64(m.next), OutputTokens: 1, TotalTokens: int64(m.next) + 1}
		}
	}
	return entries
}

// doMetadata replaces or merges metadata with ChangeMeta. The keys are few, so
// merges collide; "fill" sets the 16 pairs allowed, so that a merge of
// one more key is over the limit; "over" is 17 pairs.
func (m *model) doMetadata() {
	t := m.t
	key := m.anyKey()
	fill := map[string]string{}
	for i := range recall.MaxMetadataPairs {
		fill[fmt.Sprintf("k%02d", i)] = "f"
	}
	over := maps.Clone(fill)
	over["k1"] = "one too many"
	meta, _, exists := m.refMeta(key)
	if rapid.Bool().Draw(t, "set") {
		md := rapid.SampledFrom([]map[string]string{nil, {"k1": "x"}, {"k1": "y", "k2": "z"}, fill, over}).Draw(t, "md")
		want := "ErrNotFound"
		switch {
		case len(md) > recall.MaxMetadataPairs:
			want = "ErrInvalidMetadata"
		case exists:
			want = "nil"
			m.write(key, recall.NewEntry(recall.KindMeta, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(md)}))
		}
		got, err := recall.NewSession(m.sut, key).ChangeMeta(m.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(md)})
		m.wantMeta(fmt.Sprintf("SetMetadata(%d pairs)", len(md)), key, got, err, want)
		return
	}
	x, y := "x", "y"
	changes := map[string]*string{}
	for _, k := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"k1", "k2", "k3", "k00"}), 1, 3, rapid.ID[string]).Draw(t, "keys") {
		changes[k] = rapid.SampledFrom([]*string{&x, &y, nil}).Draw(t, "value")
	}
	want := "ErrNotFound"
	switch {
	case !exists:
	case len(mergedMetadata(meta.Metadata, false, changes)) > recall.MaxMetadataPairs:
		want = "ErrInvalidMetadata"
	default:
		want = "nil"
		m.write(key, recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: changes}))
	}
	got, err := recall.NewSession(m.sut, key).ChangeMeta(m.ctx, recall.MetaChange{Metadata: changes})
	m.wantMeta(fmt.Sprintf("MergeMetadata(%d changes)", len(changes)), key, got, err, want)
}

// refFork applies Fork to the reference and returns the error class it
// must yield: the source must exist and reach atSeq, and the target must
// not exist.
func (m *model) refFork(src recall.Key, at int64, dst recall.Key) string {
	log, ok := m.refLog(src)
	last := m.lastSeq(src)
	if at <= 0 {
		at = last
	}
	switch {
	case !ok || at > last:
		return "ErrNotFound"
	case m.logs[dst] != nil:
		return "ErrConflict"
	}
	var upTo []recall.Entry
	for _, e := range log {
		if e.Seq <= at {
			upTo = append(upTo, e)
		}
	}
	_, live := recall.Replay(src, upTo)
	entries := []recall.Entry{recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: src, Seq: at})}
	for _, l := range live {
		entries = append(entries, l.Item.Entry())
	}
	m.write(dst, entries...)
	return "nil"
}
