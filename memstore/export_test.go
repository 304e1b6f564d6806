package memstore

import (
	"encoding/json"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Plant is storetest.Config.Plant for memstore: it appends data verbatim
// as an item entry of the existing session key, bypassing validation, the
// way damaged or foreign data would arrive in a store that reads records
// from elsewhere. memstore has no separate read path, so it applies the
// entry to the session's metadata as it would any entry it holds.
//
// Such a store checks what it reads in full, since recall.Entry.Item looks at
// an item's first and last bytes only: data that Entry.Item takes for an
// object but that is not JSON ("{x}") it reads as an unreadable record,
// as the file store reads a line that does not decode. memstore does the
// same here: the record takes its seq and counts in Meta.Corrupt, and no
// entry holds it.
func Plant(t *testing.T, s recall.Store, key recall.Key, data []byte) {
	t.Helper()
	ms := s.(*Store)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	sess := ms.sessions[key]
	if sess == nil {
		t.Fatalf("memstore: plant into %s: no such session", key)
	}
	e := recall.Entry{Seq: sess.meta.LastSeq + 1, Kind: recall.KindItem, Time: storekit.Now(), Data: append([]byte(nil), data...)}
	if _, looks := e.Item(); looks && !json.Valid(data) {
		sess.meta.LastSeq = e.Seq
		sess.meta.Corrupt++
		return
	}
	sess.entries = append(sess.entries, e)
	sess.meta.Apply(e)
}
