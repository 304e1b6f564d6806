package storekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// damaged is a memstore whose reads lie in one way.
type damaged struct {
	*memstore.Store
	how string
}

func (d *damaged) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	m, es, err := d.Store.Load(ctx, key)
	switch d.how {
	case "gap":
		if len(es) > 2 {
			es = append(es[:1], es[2:]...)
		}
	case "count":
		m.ItemCount++
	case "title":
		m.Title = "not in the log"
	case "start":
		for i := range es {
			es[i].Seq += 10
		}
	case "unreadable":
		m.Corrupt = 1
	}
	return m, es, err
}

func (d *damaged) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	live, last, err := d.Store.Items(ctx, key, limit)
	if d.how == "items" && len(live) > 0 {
		live = live[1:]
	}
	return live, last, err
}

// racing is a memstore that a writer appends to between a Load and the
// next read, as another process chatting beside `recall check` does.
type racing struct {
	*memstore.Store
	writes   int  // writes still to make, one per Load
	recreate bool // remove the session and create it anew instead of appending
	n        int  // writes made
}

func (r *racing) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	m, es, err := r.Store.Load(ctx, key)
	if err == nil && r.writes > 0 {
		r.writes--
		r.n++
		batch := []recall.Entry{recall.Message("user", fmt.Sprint("meanwhile ", r.n)).Entry()}
		if r.recreate {
			if err := r.Store.Remove(ctx, key); err != nil {
				return m, es, err
			}
			// a new log, longer than the one just loaded, of other items
			for len(batch) <= len(es) {
				batch = append(batch, batch[0])
			}
		}
		if _, err := r.Store.Append(ctx, key, recall.Guard{}, batch...); err != nil {
			return m, es, err
		}
	}
	return m, es, err
}

// A session appended to while Verify reads it is read again, not reported:
// the log and the view are compared only at the same LastSeq.
func TestVerifyBesideAWriter(t *testing.T) {
	ctx := context.Background()
	key := recall.Key{Project: "p", Session: "s"}
	r := &racing{Store: memstore.New(memstore.Options{})}
	if err := recall.NewSession(r, key).AddItems(ctx, recall.Message("user", "a")); err != nil {
		t.Fatal(err)
	}
	// Appends between the log and the view: the view is checked against
	// the log extended by what was appended, on every read.
	for range 5 {
		r.writes = 1
		if err := storekit.Verify(ctx, r); err != nil {
			t.Errorf("Verify beside a writer: %v", err)
		}
		if r.writes != 0 {
			t.Fatal("the writer did not write")
		}
	}
	// A session removed and created anew in between is read again.
	if _, err := r.Store.Append(ctx, key, recall.Guard{}, recall.Message("user", "b").Entry()); err != nil {
		t.Fatal(err)
	}
	r.writes, r.recreate = 1, true
	if err := storekit.VerifySession(ctx, r, key); err != nil || r.writes != 0 {
		t.Errorf("VerifySession beside a re-creation: %v (%d writes left)", err, r.writes)
	}
	// A session that never holds still is not verified, and says so,
	// without claiming corruption.
	if _, err := r.Store.Append(ctx, key, recall.Guard{}, recall.Message("user", "c").Entry()); err != nil {
		t.Fatal(err)
	}
	r.writes = 1000
	err := storekit.VerifySession(ctx, r, key)
	if !errors.Is(err, recall.ErrConflict) || errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("VerifySession of a session that keeps changing = %v, want ErrConflict", err)
	}
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	fill := func(s recall.Store) {
		t.Helper()
		main := recall.Key{Project: "p", Session: "s"}
		sess := recall.NewSession(s, main)
		for _, err := range []error{
			sess.AddItems(ctx, recall.Message("user", "a"), recall.Message("assistant", "b")),
			sess.AddItems(ctx, recall.Message("user", "c")),
			recall.NewSession(s, recall.Key{Project: "p", Session: "s", Subpath: "subagents/x"}).AddItems(ctx, recall.Message("user", "sub"), recall.Message("assistant", "sub"), recall.Message("user", "sub")),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Pop(ctx, main); err != nil {
			t.Fatal(err)
		}
		if _, err := recall.NewSession(s, main).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
			t.Fatal(err)
		}
	}

	healthy := memstore.New(memstore.Options{})
	fill(healthy)
	if err := storekit.Verify(ctx, healthy); err != nil {
		t.Errorf("Verify of a healthy store: %v", err)
	}

	for _, how := range []string{"gap", "count", "title", "start", "items", "unreadable"} {
		s := &damaged{Store: memstore.New(memstore.Options{}), how: how}
		fill(s)
		err := storekit.Verify(ctx, s)
		if !errors.Is(err, recall.ErrCorrupt) {
			t.Errorf("Verify of a store with a %s fault = %v, want ErrCorrupt", how, err)
			continue
		}
		// Verify reaches archived sessions and subagent records too.
		if !strings.Contains(err.Error(), "p/s:subagents/x") || !strings.Contains(err.Error(), "p/s: ") {
			t.Errorf("Verify with a %s fault did not report every session: %v", how, err)
		}
	}
}
