// Package storetest is the conformance suite every recall.Store passes,
// exported so third-party stores can run it too.
//
// A store's tests call [Run] with a function that makes a fresh, empty
// store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) recall.Store {
//			s, err := mystore.Open(mystore.Options{Dir: t.TempDir()})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Run checks every contract of recall.Store and recall.Session in its own
// subtest, each on a new store, and runs recall.Verify on the store when
// the subtest ends. Like testing/fstest, it reports every failure it can
// rather than stopping at the first, and it mutates what a store returns to
// prove that it returns copies. It ends with [RunModel], a model-based test
// that runs random operations against the store and against memstore and
// demands the same observable results.
//
// The suite assumes nothing about time precision beyond microseconds and
// nothing about the store's clock beyond being within an hour of the
// test's. It shares no state between subtests, and runs them one at a
// time, so newStore may hand out stores that share a server.
//
// A store's own tests can reuse the suite's parts: [RunModel] alone;
// the corpora [InvalidKeys], [EdgeKeys], [VerbatimItems] and
// [InvalidItems]; the comparisons [MetaDiff], [EntryDiff] and
// [ErrorClass]; and [VerifyAfter], which checks a store with
// recall.Verify when a test ends.
package storetest

import (
	"testing"

	"github.com/recallkit/recall"
)

// test is one conformance check, run on a fresh store.
type test struct {
	name string
	fn   func(e *env)
}

// tests lists the conformance checks in the order Run runs them.
var tests = []test{
	{"Session/AddGetPopClear", testSessionHandle},
	{"Session/EmptyBatch", testEmptyBatch},
	{"Items/Verbatim", testVerbatim},
	{"Items/InvalidRefused", testInvalidItems},
	{"Items/InvalidUTF8", testInvalidUTF8},
	{"Items/Copies", testCopies},
	{"Items/Missing", testMissing},
	{"Log/Seqs", testSeqs},
	{"Log/Times", testTimes},
	{"Log/Entries", testEntries},
	{"Log/UnknownKind", testUnknownKind},
	{"Log/Usage", testUsage},
	{"Log/Import", testImport},
	{"Log/ImportRefused", testImportRefused},
	{"Log/ImportPurged", testImportPurged},
	{"Log/Compaction", testCompaction},
	{"Meta/Titles", testTitles},
	{"Meta/ArchivePinLabels", testArchivePinLabels},
	{"List/Fields", testListFields},
	{"List/Order", testListOrder},
	{"List/Pagination", testListPagination},
	{"List/DefaultLimit", testListDefaultLimit},
	{"List/ChangesWhilePaging", testListChanges},
	{"List/Projects", testProjects},
	{"Subagents", testSubagents},
	{"Fork", testFork},
	{"Fork/Refused", testForkRefused},
	{"Remove", testRemove},
	{"Cleanup", testCleanup},
	{"Keys/Invalid", testInvalidKeys},
	{"Keys/Edge", testEdgeKeys},
	{"Concurrent/OneSession", testConcurrentOneSession},
	{"Concurrent/ManySessions", testConcurrentManySessions},
	{"Concurrent/Pop", testConcurrentPop},
	{"Close", testClose},
}

// Run runs the whole conformance suite against stores made by newStore,
// which must return a new, empty store for each call (the suite closes it).
// Every check is a subtest, so a store can skip one with -run/-skip while
// its author works on it; the model-based test runs as the subtest "Model"
// (see [RunModel]).
func Run(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(open(t, newStore))
		})
	}
	t.Run("Model", func(t *testing.T) { RunModel(t, newStore) })
}
