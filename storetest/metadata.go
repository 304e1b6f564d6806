package storetest

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testMetadata checks a session's metadata map: set by Create and
// replaced by ChangeMeta with ClearMetadata, merged by ChangeMeta without
// it (a nil value deletes a key), cleared by ClearMetadata alone, and
// returned alike by Stat, Load and List.
func testMetadata(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	other := recall.Key{Project: "p", Session: "other"}
	e.mustAdd(other, msg("other"))
	str := func(s string) *string { return &s }

	if _, err := recall.NewSession(e.s, key).Create(e.ctx, recall.CreateOptions{Metadata: map[string]string{"a": "1", "b": "2"}}); err != nil {
		t.Fatal(err)
	}
	e.wantMetadata(key, "Create", map[string]string{"a": "1", "b": "2"})
	steps := []struct {
		what string
		do   func() (recall.Meta, error)
		want map[string]string
	}{
		{"SetMetadata replaces", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"c": new("3"), "b": new("two")}})
		}, map[string]string{"c": "3", "b": "two"}},
		{"MergeMetadata sets and adds", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"c": str("three"), "d": str("4")}})
		}, map[string]string{"b": "two", "c": "three", "d": "4"}},
		{"MergeMetadata deletes with nil", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"b": nil, "missing": nil}})
		}, map[string]string{"c": "three", "d": "4"}},
		{"an empty value is a value", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"e": str("")}})
		}, map[string]string{"c": "three", "d": "4", "e": ""}},
		{"text of every kind", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"ünï": new("世界 🎉"), "quote\"": new("line\nbreak\ttab"), "k.-_:/": new(`{"json":[1]}`)}})
		}, map[string]string{"ünï": "世界 🎉", "quote\"": "line\nbreak\ttab", "k.-_:/": `{"json":[1]}`}},
		{"SetMetadata(nil) clears", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true})
		}, nil},
		{"MergeMetadata into nothing", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"x": str("y")}})
		}, map[string]string{"x": "y"}},
		{"deleting the last key", func() (recall.Meta, error) {
			return recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"x": nil}})
		}, nil},
	}
	for _, st := range steps {
		m, err := st.do()
		if err != nil {
			t.Errorf("%s: %v", st.what, err)
			continue
		}
		if !maps.Equal(m.Metadata, st.want) {
			t.Errorf("%s returned %v, want %v", st.what, m.Metadata, st.want)
		}
		e.wantMetadata(key, st.what, st.want)
	}
	e.wantMetadata(other, "changes to another session", nil)
	e.wantView(key, nil)

	// Metadata is not an item, travels with Import, and is not forked.
	e.mustAdd(key, msg("x"))
	if _, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}}); err != nil {
		t.Fatal(err)
	}
	_, log := e.mustLoad(key)
	replica := recall.Key{Project: "p", Session: "replica"}
	if _, err := e.s.Import(e.ctx, replica, log...); err != nil {
		t.Fatalf("Import: %v", err)
	}
	e.wantMetadata(replica, "Import of the log", map[string]string{"k": "v"})
	fork := recall.Key{Project: "p", Session: "fork"}
	if m, err := recall.NewSession(e.s, key).Fork(e.ctx, 0, fork); err != nil || m.Metadata != nil {
		t.Errorf("Fork = metadata %v, %v; want a fork without metadata", m.Metadata, err)
	}
}

// wantMetadata checks key's metadata in Stat, Load and List against want;
// an empty map is nil.
func (e *env) wantMetadata(key recall.Key, what string, want map[string]string) {
	e.t.Helper()
	t := e.t
	m := e.mustStat(key)
	if !maps.Equal(m.Metadata, want) || (want == nil) != (m.Metadata == nil) {
		t.Errorf("after %s: Stat(%s).Metadata = %#v, want %#v", what, key, m.Metadata, want)
	}
	lm, _ := e.mustLoad(key)
	if !maps.Equal(lm.Metadata, want) {
		t.Errorf("after %s: Load(%s).Metadata = %v, want %v", what, key, lm.Metadata, want)
	}
	found := false
	for _, l := range listAll(t, e.ctx, e.s, key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true}) {
		if l.Key == key {
			found = true
			if !maps.Equal(l.Metadata, want) {
				t.Errorf("after %s: List shows %s with metadata %v, want %v", what, key, l.Metadata, want)
			}
		}
	}
	if !found && key.IsMain() {
		t.Errorf("after %s: List does not show %s", what, key)
	}
}

// testMetadataLimits checks the limits of the metadata map at their edges
// (recall.MaxMetadataPairs pairs, keys of 1 to recall.MaxMetadataKeyLen
// bytes, values up to recall.MaxMetadataValueLen bytes, valid UTF-8): on
// the limit is accepted; over it is recall.ErrInvalidMetadata and nothing
// is written, whichever way the change arrives: Create, ChangeMeta
// replacing or merging, or a raw meta entry given to Append or Import.
func testMetadataLimits(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("x"))
	pairs := func(n int, prefix string) map[string]string {
		md := map[string]string{}
		for i := range n {
			md[fmt.Sprintf("%s%02d", prefix, i)] = "v"
		}
		return md
	}
	k64, k65 := strings.Repeat("k", recall.MaxMetadataKeyLen), strings.Repeat("k", recall.MaxMetadataKeyLen+1)
	v512, v513 := strings.Repeat("é", recall.MaxMetadataValueLen/2), strings.Repeat("v", recall.MaxMetadataValueLen+1)

	accepted := []struct {
		what string
		md   map[string]string
	}{
		{"16 pairs", pairs(recall.MaxMetadataPairs, "k")},
		{"a key of 64 bytes", map[string]string{k64: "v"}},
		{"a value of 512 bytes (256 two-byte runes)", map[string]string{"k": v512}},
		{"a key of 1 byte", map[string]string{"k": "v"}},
	}
	for _, a := range accepted {
		m, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(a.md)})
		if err != nil || !maps.Equal(m.Metadata, a.md) {
			t.Errorf("SetMetadata with %s = %d pairs, %v; want it kept", a.what, len(m.Metadata), err)
		}
		e.wantMetadata(key, "SetMetadata with "+a.what, a.md)
	}

	refused := []struct {
		what string
		md   map[string]string
	}{
		{"17 pairs", pairs(recall.MaxMetadataPairs+1, "k")},
		{"a key of 65 bytes", map[string]string{k65: "v"}},
		{"a value of 513 bytes", map[string]string{"k": v513}},
		{"an empty key", map[string]string{"": "v"}},
		{"a key that is not UTF-8", map[string]string{"caf\xe9": "v"}},
		{"a value that is not UTF-8", map[string]string{"k": "caf\xe9"}},
		{"a key holding NUL", map[string]string{"a\x00b": "v"}},
		{"a value holding NUL", map[string]string{"k": "a\x00b"}},
	}
	// Start from 16 pairs, so that a merge of one new key is over.
	full := pairs(recall.MaxMetadataPairs, "f")
	if _, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(full)}); err != nil {
		t.Fatal(err)
	}
	fresh := recall.Key{Project: "p", Session: "fresh"}
	for _, r := range refused {
		before := e.state(key)
		_, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(r.md)})
		wantErr(t, "SetMetadata with "+r.what, err, recall.ErrInvalidMetadata)
		_, err = recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: pointersOf(r.md)})
		wantErr(t, "MergeMetadata with "+r.what, err, recall.ErrInvalidMetadata)
		_, err = recall.NewSession(e.s, fresh).Create(e.ctx, recall.CreateOptions{Metadata: r.md})
		wantErr(t, "Create with "+r.what, err, recall.ErrInvalidMetadata)
		raw := recall.NewEntry(recall.KindMeta, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(r.md)})
		if r.what == "a key that is not UTF-8" || r.what == "a value that is not UTF-8" {
			// encoding/json would turn the bad bytes into U+FFFD: write
			// them raw.
			raw.Data = []byte(fmt.Sprintf(`{"clear_metadata":true,"metadata":{%q:%q}}`, firstKey(r.md), r.md[firstKey(r.md)]))
			raw.Data = []byte(strings.ReplaceAll(string(raw.Data), `\xe9`, "\xe9"))
		}
		_, err = e.s.Append(e.ctx, key, recall.Guard{}, msg("before").Entry(), raw)
		wantErr(t, "a raw Append of a meta entry with "+r.what, err, recall.ErrInvalidMetadata)
		_, err = e.s.Import(e.ctx, key, recall.Entry{Seq: before.meta.LastSeq + 1, Kind: recall.KindMeta, Time: storekit.Now(), Data: raw.Data})
		if !errors.Is(err, recall.ErrInvalidMetadata) && !errors.Is(err, recall.ErrInvalidItem) {
			t.Errorf("a raw Import of a meta entry with %s: %v, want ErrInvalidMetadata", r.what, err)
		}
		e.wantState("refused metadata with "+r.what, key, before)
		e.wantAbsent("Create with "+r.what, fresh)
	}

	// A merge is checked against what the session holds, atomically: one
	// new key on top of 16 is over; replacing or deleting keys is not.
	before := e.state(key)
	v := "v"
	_, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"new": &v}})
	wantErr(t, "MergeMetadata of a 17th pair", err, recall.ErrInvalidMetadata)
	e.wantState("a refused merge of a 17th pair", key, before)
	if m, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"f00": nil, "new": &v, "f01": &v}}); err != nil || len(m.Metadata) != recall.MaxMetadataPairs {
		t.Errorf("MergeMetadata that deletes one and adds one to 16 = %d pairs, %v; want 16", len(m.Metadata), err)
	}
}

// pointersOf turns a metadata map into the form MetaChange.Metadata takes.
func pointersOf(md map[string]string) map[string]*string {
	out := make(map[string]*string, len(md))
	for k, v := range md {
		out[k] = &v
	}
	return out
}

// firstKey returns a key of a one-pair map.
func firstKey(md map[string]string) string {
	for k := range md {
		return k
	}
	return ""
}
