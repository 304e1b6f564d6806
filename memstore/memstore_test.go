package memstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.RunConfig(t, storetest.Config{
		New: func(t *testing.T) recall.Store {
			return memstore.New(memstore.Options{})
		},
		Plant: memstore.Plant,
	})
}

// MaxItemSize refuses a batch holding a larger item, whole, and applies to
// the items of a compaction too.
func TestMaxItemSize(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{MaxItemSize: 64})
	storetest.VerifyAfter(t, s)
	key := recall.Key{Project: "p", Session: "s"}
	small := recall.Item(`{"a":1}`)
	big := recall.Item(`{"a":"` + strings.Repeat("x", 64) + `"}`)

	if _, err := s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(small, big)...); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("Append of a batch with a large item = %v, want ErrTooLarge", err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("a refused batch created the session: %v", err)
	}
	if _, err := s.Append(ctx, key, recall.Guard{}, small.Entry()); err != nil {
		t.Fatal(err)
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: 1, Items: []recall.Item{big}})
	if _, err := s.Append(ctx, key, recall.Guard{}, comp); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("a compaction with a large item = %v, want ErrTooLarge", err)
	}
	if _, err := s.Import(ctx, key, recall.Entry{Seq: 2, Kind: recall.KindItem, Time: storekit.Now(), Data: []byte(big)}); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("an import with a large item = %v, want ErrTooLarge", err)
	}
	if m, err := s.Stat(ctx, key); err != nil || m.LastSeq != 1 {
		t.Errorf("refused writes changed the session: %+v, %v", m, err)
	}
}

// onlyStore is a store that has none of the optional abilities of the one
// it holds, as a third-party store may have none.
type onlyStore struct{ recall.Store }

// TestReadItemsFallback runs the model with a store that is not an
// ItemPager: recall.StoreSession.ReadItems then cuts its pages out of Items.
func TestReadItemsFallback(t *testing.T) {
	storetest.RunModel(t, func(t *testing.T) recall.Store {
		s := onlyStore{memstore.New(memstore.Options{})}
		if _, ok := recall.As[storekit.ItemPager](s); ok {
			t.Fatal("the wrapper still shows ItemPager")
		}
		return s
	})
}
