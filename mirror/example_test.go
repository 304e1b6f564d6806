package mirror_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
)

// A mirror is used like any store: writes return once the local store has
// them, and reach the replica in the background.
func Example() {
	ctx := context.Background()
	local := memstore.New(memstore.Options{})  // in real use: filestore.Open(...)
	shared := memstore.New(memstore.Options{}) // in real use: PostgreSQL or Redis
	dir, _ := os.MkdirTemp("", "mirror-example")
	defer os.RemoveAll(dir)

	store, err := mirror.New(local, shared, mirror.Options{
		StateDir:    mirror.StateDir(dir, "postgres://db.internal/recall"),
		ReplicaName: "postgres://db.internal/recall",
	})
	if err != nil {
		panic(err)
	}
	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "s1"})
	_ = sess.AddItems(ctx, recall.Item(`{"role":"user","content":"hello"}`))

	// Flush waits until the replica has everything written so far.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := store.Flush(fctx); err != nil {
		fmt.Println("flush:", err)
	}
	items, _, _ := shared.Items(ctx, recall.Key{Project: "demo", Session: "s1"}, 0)
	fmt.Println("the replica holds", len(items), "item")
	for _, st := range store.Status(ctx) {
		fmt.Printf("%s: primary seq %d, replicated %d, lag %d\n", st.Key, st.PrimarySeq, st.ReplicatedSeq, st.Lag)
	}

	// Shutdown is the graceful Close(ctx): it flushes what it can before
	// the deadline, saves the positions, and closes both stores.
	fmt.Println("shutdown:", store.Shutdown(fctx))
	// Output:
	// the replica holds 1 item
	// demo/s1: primary seq 1, replicated 1, lag 0
	// shutdown: <nil>
}
