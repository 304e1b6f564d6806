package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// The text of a search's hits, read from their entries for the snippets.

// itemTextSQL reads the entry of session $1 at seq $2 (SQLite).
const itemTextSQL = `SELECT kind, payload FROM entries WHERE session = $1 AND seq = $2`

// itemTextsPGSQL reads the entries of sessions $1 at seqs $2 (PostgreSQL:
// one round trip for the page).
const itemTextsPGSQL = `SELECT e.session, e.seq, e.kind, e.payload FROM entries e
	JOIN unnest($1::int8[], $2::int8[]) AS k(session, seq) ON e.session = k.session AND e.seq = k.seq`

// itemTexts returns the text of each item hit as its log holds it (see
// itemText), "" for titles.
func (sq searchQuery) itemTexts(ctx context.Context, tx querier, hits []hitRow) ([]string, error) {
	texts := make([]string, len(hits))
	if !sq.pg {
		for i, h := range hits {
			if h.Role == recall.RoleTitle {
				continue
			}
			var (
				kind    string
				payload []byte
			)
			err := tx.queryRow(ctx, itemTextSQL, h.sid, h.Ref.Seq).Scan(&kind, &payload)
			if isNoRows(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			texts[i] = itemText(kind, payload, h.Ref)
		}
		return texts, nil
	}
	var sids, seqs []int64
	for _, h := range hits {
		if h.Role != recall.RoleTitle {
			sids, seqs = append(sids, h.sid), append(seqs, h.Ref.Seq)
		}
	}
	if len(sids) == 0 {
		return texts, nil
	}
	type entryKey struct{ sid, seq int64 }
	found := map[entryKey]struct {
		kind    string
		payload []byte
	}{}
	rs, err := tx.query(ctx, itemTextsPGSQL, sids, seqs)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var (
			k       entryKey
			kind    string
			payload []byte
		)
		if err := rs.Scan(&k.sid, &k.seq, &kind, &payload); err != nil {
			return nil, err
		}
		found[k] = struct {
			kind    string
			payload []byte
		}{kind, payload}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	for i, h := range hits {
		if e, ok := found[entryKey{h.sid, h.Ref.Seq}]; ok && h.Role != recall.RoleTitle {
			texts[i] = itemText(e.kind, e.payload, h.Ref)
		}
	}
	return texts, nil
}

// itemText returns the text (search.Text) of the item at ref held
// by an entry of kind with payload, or "" when it has none.
func itemText(kind string, payload []byte, ref recall.ItemRef) string {
	it := recall.Item(payload)
	if recall.Kind(kind) == recall.KindCompaction {
		var c recall.Compaction
		if json.Unmarshal(payload, &c) != nil || ref.Index >= len(c.Items) {
			return ""
		}
		it = c.Items[ref.Index]
	}
	_, text := search.Text(it)
	return text
}
