package redisstore

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the shared suite, each store on its own prefix.
func TestConformance(t *testing.T) {
	testURL(t) // skip loudly without Redis
	storetest.Run(t, func(t *testing.T) recall.Store { return newStore(t, Options{}) })
}
