package mirror_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// The mirror is a recall.Store: it passes the conformance suite, and
// afterwards (deletes propagated, so the suite's removals and re-creations
// reach the replica too) the replica holds exactly the primary's logs.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store {
		primary := &keepOpen{Store: memstore.New(memstore.Options{})}
		replica := &keepOpen{Store: memstore.New(memstore.Options{})}
		opts := fastOptions("")
		opts.PropagateDeletes = true
		opts.CloseTimeout = 30 * time.Second
		m, err := mirror.New(primary, replica, opts)
		if err != nil {
			t.Fatal(err)
		}
		// Cleanups run last-registered first: this one after the suite
		// closed the mirror, which flushed the replica.
		t.Cleanup(func() {
			if err := diffLogs(t, primary.Store, replica.Store, true); err != nil {
				t.Errorf("the replica after the suite: %v", err)
			}
		})
		return m
	})
}

// The lazy replica store is a recall.Store too.
func TestLazyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store {
		return mirror.Lazy(func(context.Context) (recall.Store, error) { return memstore.New(memstore.Options{}), nil })
	})
}

// The guard is the primary's, checked there atomically with the write: a
// failed guard writes nothing, so nothing is replicated, and the mirror
// does not start tracking a session that does not exist.
func TestGuardIsCheckedByThePrimary(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	missing := recall.Key{Project: "p", Session: "missing"}

	if _, err := m.Append(ctx, missing, recall.IfExists(), item("ghost").Entry()); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("append to a missing session with IfExists: %v, want ErrNotFound", err)
	}
	seq, err := m.Append(ctx, k, recall.IfNew(), recall.ItemEntries(item("1"), item("2"))...)
	if err != nil || seq != 2 {
		t.Fatalf("append with IfNew: %d, %v", seq, err)
	}
	if _, err := m.Append(ctx, k, recall.IfNew(), item("again").Entry()); !errors.Is(err, recall.ErrConflict) {
		t.Fatalf("append with IfNew to an existing session: %v, want ErrConflict", err)
	}
	if _, err := m.Append(ctx, k, recall.IfLastSeq(1), item("stale").Entry()); !errors.Is(err, recall.ErrConflict) {
		t.Fatalf("append with a stale IfLastSeq: %v, want ErrConflict", err)
	}
	if seq, err := m.Append(ctx, k, recall.IfLastSeq(2), item("3").Entry()); err != nil || seq != 3 {
		t.Fatalf("append with the right IfLastSeq: %d, %v", seq, err)
	}
	// An empty batch checks the guard and returns the last seq.
	if seq, err := m.Append(ctx, k, recall.IfExists()); err != nil || seq != 3 {
		t.Fatalf("empty batch: %d, %v", seq, err)
	}
	if _, err := m.Append(ctx, missing, recall.IfExists()); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("empty batch to a missing session with IfExists: %v, want ErrNotFound", err)
	}
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica, true); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Stat(ctx, missing); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("the refused session on the replica: %v, want ErrNotFound", err)
	}
	for _, ss := range m.Status(ctx) {
		if ss.Key == missing {
			t.Fatalf("the mirror tracks a session no write created: %+v", ss)
		}
	}
	if _, es, _ := replica.Load(ctx, k); len(es) != 3 {
		t.Fatalf("the replica holds %d entries, want 3", len(es))
	}
}

// An empty session (recall.StoreSession.Create with no items) replicates: the replica
// lists it with 0 items, with its title and metadata.
func TestEmptySessionReplicates(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	bare := recall.Key{Project: "p", Session: "bare"}
	titled := recall.Key{Project: "p", Session: "titled"}
	if _, err := recall.NewSession(m, bare).Create(ctx, recall.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(m, titled).Create(ctx, recall.CreateOptions{Title: "a title", Metadata: map[string]string{"team": "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(m, bare).Create(ctx, recall.CreateOptions{}); !errors.Is(err, recall.ErrConflict) {
		t.Fatalf("create of an existing session: %v, want ErrConflict", err)
	}
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica, true); err != nil {
		t.Fatal(err)
	}
	page, err := replica.List(ctx, "p", recall.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[recall.Key]recall.Meta{}
	for _, meta := range page.Sessions {
		listed[meta.Key] = meta
	}
	for _, k := range []recall.Key{bare, titled} {
		meta, ok := listed[k]
		if !ok {
			t.Fatalf("the replica does not list %s: %+v", k, page.Sessions)
		}
		if meta.ItemCount != 0 {
			t.Errorf("%s is listed with %d items, want 0", k, meta.ItemCount)
		}
		want, _ := primary.Stat(ctx, k)
		sameMeta(t, k, want, meta)
	}
	if meta := listed[titled]; meta.Title != "a title" || meta.Metadata["team"] != "a" {
		t.Errorf("title and metadata on the replica: %+v", meta)
	}
	if live, last, err := replica.Items(ctx, bare, 0); err != nil || len(live) != 0 || last != 1 {
		t.Errorf("replica items of the empty session: %v at %d, %v", live, last, err)
	}
}

// The new entry kinds replicate: removal of any item, metadata set,
// merged and cleared; the replica derives the same view and metadata.
func TestNewEntryKindsReplicate(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	one := "1"
	ops := []struct {
		name string
		do   func() error
	}{
		{"create with items", func() error {
			_, err := recall.NewSession(m, k).Create(ctx, recall.CreateOptions{Items: []recall.Item{item("a"), item("b"), item("c")}})
			return err
		}},
		{"remove an item", func() error {
			live, _, err := m.Items(ctx, k, 0)
			if err != nil {
				return err
			}
			_, err = recall.NewSession(m, k).RemoveItem(ctx, live[1].Ref)
			return err
		}},
		{"set metadata", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"a": new("x"), "b": new("y")}})
			return err
		}},
		{"merge metadata", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"a": nil, "c": &one}})
			return err
		}},
		{"pop", func() error { _, err := m.Pop(ctx, k); return err }},
		{"clear metadata", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true})
			return err
		}},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		flush(t, m, 10*time.Second)
		if err := diffLogs(t, primary, replica, true); err != nil {
			t.Fatalf("after %s: %v", op.name, err)
		}
		want, _ := primary.Stat(ctx, k)
		got, err := replica.Stat(ctx, k)
		if err != nil {
			t.Fatalf("after %s: replica: %v", op.name, err)
		}
		sameMeta(t, k, want, got)
		pv, _, _ := primary.Items(ctx, k, 0)
		rv, _, _ := replica.Items(ctx, k, 0)
		if len(pv) != len(rv) {
			t.Fatalf("after %s: views: primary %d items, replica %d", op.name, len(pv), len(rv))
		}
		for i := range pv {
			if pv[i].Ref != rv[i].Ref || string(pv[i].Item) != string(rv[i].Item) {
				t.Fatalf("after %s: view item %d: primary %+v, replica %+v", op.name, i, pv[i], rv[i])
			}
		}
	}
	kinds := map[recall.Kind]bool{}
	_, es, _ := replica.Load(ctx, k)
	for _, e := range es {
		kinds[e.Kind] = true
	}
	for _, want := range []recall.Kind{recall.KindCreate, recall.KindRemove, recall.KindMeta, recall.KindPop} {
		if !kinds[want] {
			t.Errorf("the replica's log has no %s entry", want)
		}
	}
}

// sameMeta fails t when two metadata differ in anything JSON shows.
func sameMeta(t *testing.T, k recall.Key, want, got recall.Meta) {
	t.Helper()
	jw, _ := json.Marshal(want)
	jg, _ := json.Marshal(got)
	if string(jw) != string(jg) {
		t.Errorf("%s: primary meta %s, replica %s", k, jw, jg)
	}
}

// ignoresContext is a store that never looks at the context it is given,
// as a third-party store might not.
type ignoresContext struct{ recall.Store }

func (s ignoresContext) Append(_ context.Context, key recall.Key, g recall.Guard, es ...recall.Entry) (int64, error) {
	return s.Store.Append(context.Background(), key, g, es...)
}

func (s ignoresContext) Import(_ context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
	return s.Store.Import(context.Background(), key, es...)
}

func (s ignoresContext) Pop(_ context.Context, key recall.Key) (recall.Item, error) {
	return s.Store.Pop(context.Background(), key)
}

func (s ignoresContext) Remove(_ context.Context, key recall.Key) error {
	return s.Store.Remove(context.Background(), key)
}

// Every method of the mirror returns the context's error and changes
// nothing under an ended context, even over a primary that would not check
// it; so does the lazy store, without opening its store.
func TestContextHonoured(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	replica := memstore.New(memstore.Options{})
	m := newMirror(t, ignoresContext{mem}, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	_, before, _ := mem.Load(ctx, k)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for name, c := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
		want := c.Err()
		calls := map[string]error{}
		_, calls["Append"] = m.Append(c, k, recall.Guard{}, item("x").Entry())
		_, calls["Import"] = m.Import(c, recall.Key{Project: "p", Session: "imp"}, recall.Entry{Seq: 1, Kind: recall.KindItem, Time: storekit.Now(), Data: json.RawMessage(item("i"))})
		_, calls["Pop"] = m.Pop(c, k)
		calls["Remove"] = m.Remove(c, k)
		_, calls["Cleanup"] = m.Cleanup(c, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)})
		_, _, calls["Items"] = m.Items(c, k, 0)
		_, calls["Stat"] = m.Stat(c, k)
		_, _, calls["Load"] = m.Load(c, k)
		_, calls["Entries"] = m.Entries(c, k, 0, 0)
		_, calls["List"] = m.List(c, "", recall.ListOptions{})
		_, calls["Projects"] = m.Projects(c)
		_, calls["Purge"] = m.Purge(c, k)
		_, calls["Fork"] = recall.NewSession(m, k).Fork(c, 0, recall.Key{Project: "p", Session: "fork"})
		_, calls["Create"] = recall.NewSession(m, recall.Key{Project: "p", Session: "new"}).Create(c, recall.CreateOptions{})
		for method, err := range calls {
			if !errors.Is(err, want) {
				t.Errorf("%s under a %s context: %v, want %v", method, name, err, want)
			}
		}
	}
	flush(t, m, 10*time.Second)
	_, after, err := mem.Load(ctx, k)
	if err != nil {
		t.Fatalf("the session after the calls: %v", err)
	}
	if err := sameEntries(before, after); err != nil {
		t.Fatalf("calls under an ended context changed the primary: %v", err)
	}
	if keys := allKeys(t, mem); len(keys) != 1 {
		t.Fatalf("calls under an ended context created sessions: %v", keys)
	}
	if err := diffLogs(t, mem, replica, true); err != nil {
		t.Fatal(err)
	}

	var opened atomic.Int32
	lazy := mirror.Lazy(func(context.Context) (recall.Store, error) {
		opened.Add(1)
		return memstore.New(memstore.Options{}), nil
	})
	defer lazy.Close()
	if _, err := lazy.Append(cancelled, k, recall.Guard{}, item("x").Entry()); !errors.Is(err, context.Canceled) {
		t.Errorf("lazy append under a cancelled context: %v", err)
	}
	if _, _, err := lazy.Items(cancelled, k, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("lazy items under a cancelled context: %v", err)
	}
	if n := opened.Load(); n != 0 {
		t.Errorf("the lazy store opened its store %d times under a cancelled context", n)
	}
}
