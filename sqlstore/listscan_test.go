package sqlstore

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/recallkit/recall"
)

// TestListPacked checks SQLite's packed List rows (metaPackedLite) against
// the columns Stat reads (scanMeta), on rows whose texts hold what could
// throw a cutter off: spaces, digits, NULs, multibyte and invalid UTF-8,
// and on NULL against empty optional columns, a fork, and times before
// 1970.
func TestListPacked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSQLite(t)
	w := s.db.(*liteBackend).w
	rows := []struct {
		key                          recall.Key
		title, source, prompt        string
		labels, metadata, forked     any
		forkSeq, created, updated    any
		archived, pinned, in, out, n int64
	}{
		{key: recall.Key{Project: "p", Session: "plain"}, created: int64(1), updated: int64(2)},
		{key: recall.Key{Project: "p", Session: "texts"}, title: "12 34 \x00 5 é\xff", source: "user", prompt: " 7 8 \x00",
			labels: `["a b","1 2"]`, metadata: `{"k":"v 1"}`, forked: `{"project":"p","session":"plain"}`, forkSeq: int64(9),
			created: int64(-62135596800000000), updated: int64(1700000000123456), archived: 1, pinned: 1, in: 10, out: 20, n: 30},
		{key: recall.Key{Project: "p", Session: "empty"}, labels: "", metadata: "", forked: nil, created: int64(3), updated: int64(4)},
	}
	for _, r := range rows {
		if _, err := s.Append(ctx, r.key, recall.Guard{}, benchItem.Entry()); err != nil {
			t.Fatal(err)
		}
		_, err := w.ExecContext(ctx, `UPDATE sessions SET title = ?, title_source = ?, first_prompt = ?, labels = ?, metadata = ?,
			forked_from = ?, fork_seq = ?, created_at = ?, updated_at = ?, archived = ?, pinned = ?,
			input_tokens = ?, output_tokens = ?, total_tokens = ? WHERE project = ? AND id = ?`,
			r.title, r.source, r.prompt, r.labels, r.metadata, r.forked, r.forkSeq, r.created, r.updated,
			r.archived, r.pinned, r.in, r.out, r.n, r.key.Project, r.key.Session)
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.List(ctx, "p", recall.ListOptions{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sessions) != len(rows) {
		t.Fatalf("List: %d sessions, want %d", len(p.Sessions), len(rows))
	}
	for _, m := range p.Sessions {
		want, err := s.Stat(ctx, m.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("List row of %s:\n%+v\nStat:\n%+v", m.Key, m, want)
		}
		if m.Key.Session == "texts" && (m.Title != rows[1].title || m.FirstPrompt != rows[1].prompt || m.ForkedFrom == nil || m.ForkedFrom.Seq != 9) {
			t.Errorf("texts: %+v", m)
		}
	}
}

// TestDecodePackedMeta checks that a packed value that does not add up is
// refused as corrupt rather than cut wrong.
func TestDecodePackedMeta(t *testing.T) {
	t.Parallel()
	const nums = "1 2 3 4 0 0 0 5 6 7 0 "
	good := nums + "1 2 0 0 0 0 0 0 " + "pidxyz"
	m, err := decodePackedMeta(good)
	if err != nil {
		t.Fatal(err)
	}
	if m.Key != (recall.Key{Project: "p", Session: "id"}) || m.FirstPrompt != "xyz" || m.ItemCount != 3 || m.LastSeq != 4 || m.Usage.TotalTokens != 7 {
		t.Errorf("decoded %+v", m)
	}
	for _, bad := range []string{
		"",
		nums,                                // no lengths
		nums + "1 2 0 0 0 0 0 0 " + "pi",    // texts shorter than their lengths
		nums + "1 2 0 0 0 0 0 -1 " + "pid",  // a negative length
		nums + "1 x 0 0 0 0 0 0 " + "pid",   // not a number
		nums + "1 2 0 0 0 0 0 0",            // no space after the last number
		nums + "1 2 0 0 0 9 0 0 " + "pidxy", // labels past the end
		"99999999999999999999 " + good[2:],  // past int64
	} {
		if _, err := decodePackedMeta(bad); !errors.Is(err, recall.ErrCorrupt) {
			t.Errorf("decodePackedMeta(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}
