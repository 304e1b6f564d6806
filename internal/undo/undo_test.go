package undo

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

var key = recall.Key{Project: "p", Session: "s"}

func call(id string) recall.Item {
	return recall.Item(fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"read_file","arguments":"{}"}`, id))
}

func output(id string) recall.Item {
	return recall.Item(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"x"}`, id))
}

func texts(items []recall.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Type()+":"+it.Role()+":"+it.Text())
	}
	return out
}

func TestLastTurn(t *testing.T) {
	user1, reply1 := recall.Message("user", "one"), recall.Message("assistant", "r1")
	user2, reply2 := recall.Message("user", "two"), recall.Message("assistant", "r2")
	tests := []struct {
		name        string
		items       []recall.Item
		wantRemoved []recall.Item
		wantLeft    []recall.Item
	}{
		{"user and reply", []recall.Item{user1, reply1, user2, reply2}, []recall.Item{user2, reply2}, []recall.Item{user1, reply1}},
		{"tool calls in the turn", []recall.Item{user1, reply1, user2, call("c1"), output("c1"), reply2}, []recall.Item{user2, call("c1"), output("c1"), reply2}, []recall.Item{user1, reply1}},
		{"a message without reply", []recall.Item{user1, reply1, user2}, []recall.Item{user2}, []recall.Item{user1, reply1}},
		{"the only turn", []recall.Item{user1, reply1}, []recall.Item{user1, reply1}, nil},
		{"no user message", []recall.Item{reply1, reply2}, nil, []recall.Item{reply1, reply2}},
		{"empty session", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			defer st.Close()
			sess := recall.NewSession(st, key)
			if err := sess.AddItems(ctx, tt.items...); err != nil {
				t.Fatal(err)
			}
			removed, err := LastTurn(ctx, st, key)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(removed), texts(tt.wantRemoved)) {
				t.Errorf("removed %v, want %v", texts(removed), texts(tt.wantRemoved))
			}
			left, err := sess.GetItems(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(left), texts(tt.wantLeft)) {
				t.Errorf("left %v, want %v", texts(left), texts(tt.wantLeft))
			}
			if len(tt.items) > 0 {
				if err := storekit.VerifySession(ctx, st, key); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestLastTurnLongTurnAndOneBatch(t *testing.T) {
	// A turn longer than the first read window, in a long session: the
	// window grows, and the pops go in as one batch (one append).
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	sess := recall.NewSession(st, key)
	for i := range 30 {
		if err := sess.AddItems(ctx, recall.Message("user", fmt.Sprint("q", i)), recall.Message("assistant", "a")); err != nil {
			t.Fatal(err)
		}
	}
	turn := []recall.Item{recall.Message("user", "last")}
	for i := range 40 {
		id := fmt.Sprint("c", i)
		turn = append(turn, call(id), output(id))
	}
	if err := sess.AddItems(ctx, turn...); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Stat(ctx, key)
	counting := &countingStore{Store: st}
	removed, err := LastTurn(ctx, counting, key)
	if err != nil || len(removed) != len(turn) {
		t.Fatalf("LastTurn removed %d items, %v; want %d", len(removed), err, len(turn))
	}
	after, _ := st.Stat(ctx, key)
	if after.LastSeq-before.LastSeq != int64(len(turn)) || after.ItemCount != 60 {
		t.Fatalf("after undo: last seq %d -> %d, items %d; want %d pop entries and 60 items", before.LastSeq, after.LastSeq, after.ItemCount, len(turn))
	}
	if counting.appends != 1 {
		t.Fatalf("undo made %d appends, want one batch", counting.appends)
	}
	if err := storekit.VerifySession(ctx, st, key); err != nil {
		t.Error(err)
	}
}

// countingStore counts Append calls.
type countingStore struct {
	recall.Store
	appends int
}

func (c *countingStore) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	c.appends++
	return c.Store.Append(ctx, key, guard, entries...)
}

// interleaved is a store into which another writer appends a whole turn
// right after the first read of the view, as a second `recall chat -c` on
// the same session would.
type interleaved struct {
	recall.Store
	turn []recall.Item
}

func (s *interleaved) Items(ctx context.Context, k recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	live, last, err := s.Store.Items(ctx, k, limit)
	if err == nil && s.turn != nil {
		turn := s.turn
		s.turn = nil
		if _, err := s.Store.Append(ctx, k, recall.Guard{}, recall.ItemEntries(turn...)...); err != nil {
			return nil, 0, err
		}
	}
	return live, last, err
}

// A turn appended between the read and the write is what undo removes: the
// stale read is refused by the guard and read again, so undo never pops
// half of one turn and half of another.
func TestLastTurnBesideAWriter(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	if err := recall.NewSession(st, key).AddItems(ctx, recall.Message("user", "one"), recall.Message("assistant", "r1")); err != nil {
		t.Fatal(err)
	}
	s := &interleaved{Store: st, turn: []recall.Item{recall.Message("user", "two"), recall.Message("assistant", "r2")}}
	removed, err := LastTurn(ctx, s, key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(removed), []string{"message:user:two", "message:assistant:r2"}; !slices.Equal(got, want) {
		t.Errorf("removed %q, want %q", got, want)
	}
	left, err := recall.NewSession(st, key).GetItems(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(left), []string{"message:user:one", "message:assistant:r1"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if err := storekit.VerifySession(ctx, st, key); err != nil {
		t.Error(err)
	}
}
