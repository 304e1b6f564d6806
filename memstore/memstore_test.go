package memstore_test

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store {
		return memstore.New(memstore.Options{})
	})
}
