package storetest

import (
	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testClose checks that every call after Close returns ErrClosed.
func testClose(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("x"))
	if err := storekit.Verify(e.ctx, e.s); err != nil {
		t.Errorf("Verify before Close: %v", err)
	}
	e.closed = true // the suite must not close it again
	if err := e.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := map[string]error{}
	_, calls["Append"] = e.s.Append(e.ctx, key, recall.Guard{}, msg("y").Entry())
	_, _, calls["Items"] = e.s.Items(e.ctx, key, 0)
	_, calls["Pop"] = e.s.Pop(e.ctx, key)
	_, calls["Stat"] = e.s.Stat(e.ctx, key)
	_, _, calls["Load"] = e.s.Load(e.ctx, key)
	_, calls["Entries"] = e.s.Entries(e.ctx, key, 0, 0)
	_, calls["List"] = e.s.List(e.ctx, "", recall.ListOptions{})
	_, calls["Projects"] = recall.Projects(e.ctx, e.s)
	calls["Remove"] = e.s.Remove(e.ctx, key)
	_, calls["Fork"] = recall.NewSession(e.s, key).Fork(e.ctx, 0, recall.Key{Project: "p", Session: "f"})
	_, calls["Cleanup"] = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(0)})
	_, calls["Import"] = e.s.Import(e.ctx, key, imported(2, 0, msg("z").Entry())...)
	_, calls["Create"] = recall.NewSession(e.s, recall.Key{Project: "p", Session: "new"}).Create(e.ctx, recall.CreateOptions{})
	_, calls["RemoveItem"] = recall.NewSession(e.s, key).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
	_, calls["SetMetadata"] = recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})
	if p, ok := e.s.(storekit.Purger); ok {
		_, calls["Purge"] = p.Purge(e.ctx, key)
	}
	for method, err := range calls {
		wantErr(t, method+" after Close", err, recall.ErrClosed)
	}
}
