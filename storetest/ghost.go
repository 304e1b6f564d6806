package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
)

// A LifecycleOp is one of recall's lifecycle helpers with fixed arguments,
// as applied to an existing session. None of them may bring back a
// session that was removed: they write with a guard that requires the
// session to exist (see recall.Guard).
type LifecycleOp struct {
	Name string
	// Do applies the helper to key. Its error is nil, or wraps
	// recall.ErrNotFound when the session is gone.
	Do func(ctx context.Context, s recall.Store, key recall.Key) error
}

// LifecycleOps returns the lifecycle helpers the ghost cases race against
// Remove: Clear, recall.StoreSession.SetTitle, recall.StoreSession.ChangeMeta of each field
// (archive, pin, labels, metadata replaced and merged) and RemoveItem (of the session's first item,
// seq 1). A store's own tests can use them to race the helpers across
// processes; see [CheckNoGhost].
func LifecycleOps() []LifecycleOp {
	v := "v"
	return []LifecycleOp{
		{"Clear", func(ctx context.Context, s recall.Store, k recall.Key) error {
			return recall.NewSession(s, k).Clear(ctx)
		}},
		{"SetTitle", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).SetTitle(ctx, "ghost?", recall.TitleUser)
			return err
		}},
		{"SetArchived", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)})
			return err
		}},
		{"SetPinned", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
			return err
		}},
		{"SetLabels", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"ghost"}, SetLabels: true})
			return err
		}},
		{"SetMetadata", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})
			return err
		}},
		{"MergeMetadata", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"k": &v}})
			return err
		}},
		{"RemoveItem", func(ctx context.Context, s recall.Store, k recall.Key) error {
			_, err := recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: 1})
			return err
		}},
	}
}

// CheckNoGhost returns an error when key is a ghost: a session that exists
// but does not begin with the items it was created with, as when a
// lifecycle helper brought it back after a Remove holding only its own
// entry. items are the items the session was created with, as its first
// batch. A session that does not exist is not a ghost, nor is one that
// still holds its items (whatever came after them).
func CheckNoGhost(ctx context.Context, s recall.Store, key recall.Key, items []recall.Item) error {
	_, log, err := s.Load(ctx, key)
	if errors.Is(err, recall.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: Load: %w", key, err)
	}
	if len(log) < len(items) {
		return fmt.Errorf("%s is a ghost: its log holds %d entries, %s; it was created with %d items", key, len(log), kinds(log), len(items))
	}
	for i, it := range items {
		if log[i].Seq != int64(i+1) || log[i].Kind != recall.KindItem || !bytes.Equal(log[i].Data, it) {
			return fmt.Errorf("%s is a ghost: its log is %s; it was created with %d items", key, kinds(log), len(items))
		}
	}
	return nil
}

// kinds renders the kinds of a log, for a failure message.
func kinds(log []recall.Entry) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range log {
		if i == 8 {
			fmt.Fprintf(&b, " ...%d more", len(log)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%s", e.Seq, e.Kind)
	}
	b.WriteByte(']')
	return b.String()
}

// ghostRounds is how often each lifecycle helper races a Remove.
const ghostRounds = 25

// testGhosts races Remove against each lifecycle helper, many rounds, in
// goroutines: a session removed while a helper runs stays removed. Remove
// always succeeds (the session exists when both start, and nothing else
// removes it), so afterwards the session must be gone, never back holding
// only the helper's entry. The helper either did its work before the
// remove or found the session gone (ErrNotFound).
func testGhosts(e *env) {
	t := e.t
	items := []recall.Item{msg("first"), msg("second")}
	for _, op := range LifecycleOps() {
		for r := range ghostRounds {
			key := recall.Key{Project: "p", Session: fmt.Sprintf("%s-%d", op.Name, r)}
			e.mustAdd(key, items...)
			var wg sync.WaitGroup
			var opErr, rmErr error
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				opErr = op.Do(e.ctx, e.s, key)
			})
			wg.Go(func() {
				<-start
				rmErr = e.s.Remove(e.ctx, key)
			})
			close(start)
			wg.Wait()
			if opErr != nil && !errors.Is(opErr, recall.ErrNotFound) {
				t.Errorf("%s racing Remove: %v; want nil or ErrNotFound", op.Name, opErr)
			}
			if rmErr != nil {
				t.Errorf("Remove racing %s: %v", op.Name, rmErr)
			}
			if err := CheckNoGhost(e.ctx, e.s, key, items); err != nil {
				t.Errorf("%s racing Remove, round %d: %v", op.Name, r, err)
			} else if m, err := e.s.Stat(e.ctx, key); !errors.Is(err, recall.ErrNotFound) {
				t.Errorf("%s racing Remove, round %d: the session exists after Remove (Stat: LastSeq %d, %v)", op.Name, r, m.LastSeq, err)
			}
		}
	}
	if got := listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true}); len(got) != 0 {
		t.Errorf("after the races List shows %v, want nothing", keysOf(got))
	}
}
