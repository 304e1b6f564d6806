package memstore

import (
	"testing"

	"github.com/recallkit/recall"
)

// Plant is storetest.Config.Plant for memstore: it appends data verbatim
// as an item entry of the existing session key, bypassing validation, the
// way damaged or foreign data would arrive in a store that reads records
// from elsewhere. memstore has no separate read path, so it applies the
// entry to the session's metadata as it would any entry it holds.
func Plant(t *testing.T, s recall.Store, key recall.Key, data []byte) {
	t.Helper()
	ms := s.(*Store)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	sess := ms.sessions[key]
	if sess == nil {
		t.Fatalf("memstore: plant into %s: no such session", key)
	}
	e := recall.Entry{Seq: sess.meta.LastSeq + 1, Kind: recall.KindItem, Time: recall.Now(), Data: append([]byte(nil), data...)}
	sess.entries = append(sess.entries, e)
	sess.meta.Apply(e)
}
