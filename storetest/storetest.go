// Package storetest is the conformance suite every recall.Store passes,
// exported so third-party stores can run it too.
//
// A store's tests call [RunConfig] with a function that makes a fresh,
// empty store and the hook that plants a damaged record in it (see
// [Config]); [Run] is RunConfig without the hook, which skips the
// damaged-data cases:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunConfig(t, storetest.Config{
//			New: func(t *testing.T) recall.Store {
//				s, err := mystore.Open(mystore.Options{Dir: t.TempDir()})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return s
//			},
//			Plant: plantRecord, // writes raw bytes as the next item entry
//		})
//	}
//
// The suite checks every contract of recall.Store, of recall.Session and
// of the root helpers over a store, in its own subtest, each on a new
// store, and runs storekit.Verify on the store when the subtest ends. Like
// testing/fstest, it reports every failure it can rather than stopping at
// the first, and it mutates what a store returns to prove that it returns
// copies. The groups of subtests:
//
//   - Session, Items: the Session handle, batches, verbatim items, refused
//     items, copies, missing sessions.
//   - Log: seqs, times, Entries pages, unknown kinds, usage, Import and its
//     refusals, purged logs, compaction guarded by recall.IfLastSeq.
//   - Meta, Metadata: titles, archive, pin, labels; the metadata map set,
//     merged, cleared and returned by Stat, Load and List, and its limits
//     (recall.ErrInvalidMetadata, nothing written).
//   - List: fields, order by activity, pagination, changes while paging,
//     projects, the pinned filter; Subagents; Fork; Remove; Cleanup (to
//     the trash, and purged).
//   - Trash: a session moved to the trash leaves List and Search and is
//     listed in the trash; restored, it is what it was (see testTrash for
//     the exact sense); EmptyTrash deletes what was trashed before its
//     cutoff but pinned sessions.
//   - Keys: hostile keys refused, edge keys kept apart.
//   - Guard: every guard of Append against missing, existing, moved and
//     removed sessions; a failed guard writes nothing; guarded writers
//     racing (exactly one wins).
//   - Ghosts: Remove racing each lifecycle helper ([LifecycleOps]) never
//     leaves a session holding only the helper's entry ([CheckNoGhost]).
//   - Create: empty sessions, with a title, metadata or items; creating an
//     existing key is ErrConflict.
//   - Views: Items returns the LastSeq its view was read at; readers
//     beside a writer see whole snapshots; storekit.VerifySession beside a
//     writer never reports a healthy session.
//   - RemoveItem: any one item by its ref, the log keeping it.
//   - Rewrite: storekit.Rewriter, on a store that has it: entries
//     replaced in place and appended in one step, the title, the first
//     prompt, List and Search following; refused rewrites write nothing.
//   - Rewind: the view set back to an item and redone, the log keeping
//     every item.
//   - Updated: activity moves Updated, the List order and Cleanup's age;
//     title and meta changes do not.
//   - Damaged: records that are not JSON objects ([DamagedItems], planted
//     with Config.Plant) are left out of every view and counted in
//     Meta.Corrupt, and storekit.Verify names the session.
//   - Context: every method, optional ability and root helper under a
//     cancelled context and an expired deadline returns the context's
//     error and changes nothing; a write blocked behind another writer's
//     lock (Config.Hold) returns promptly once its context ends, with the
//     context's error, and writes nothing.
//   - Concurrent, Close.
//   - Search: recall.Search (the store's index when it is a
//     recall.Searcher) finds what each case expects and the same hits in
//     the same order as search.Scan ([CompareSearch]): every role,
//     titles, phrases, case, CJK, pops, removals, clears, compactions,
//     WholeLog, archived sessions, projects, time ranges, paging across
//     appends, bad queries.
//
// It ends with [RunModel], a model-based test that runs random operations
// against the store and against a plain log the test keeps, replayed with
// recall.Replay, and demands the same observable results; then with
// [RunSearchModel], the same for search: random sequences searched with
// random options against a brute force over the test's own logs.
//
// The suite assumes nothing about time precision beyond microseconds and
// nothing about the store's clock beyond being within an hour of the
// test's. It shares no state between subtests, and runs them one at a
// time, so newStore may hand out stores that share a server.
//
// A store's own tests can reuse the suite's parts: [RunModel],
// [RunSearch] and [RunSearchModel] alone; [CompareSearch] and [SearchAll]
// on data of their own;
// the corpora [InvalidKeys], [EdgeKeys], [VerbatimItems], [InvalidItems]
// and [DamagedItems]; [LifecycleOps] and [CheckNoGhost], to race the
// lifecycle helpers against a remove across processes; the comparisons
// [MetaDiff], [EntryDiff] and [ErrorClass]; and [VerifyAfter], which
// checks a store with storekit.Verify when a test ends.
package storetest

import (
	"slices"
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
	{"Meta/FirstPrompt", testFirstPrompt},
	{"List/Fields", testListFields},
	{"List/Order", testListOrder},
	{"List/Pagination", testListPagination},
	{"List/DefaultLimit", testListDefaultLimit},
	{"List/ChangesWhilePaging", testListChanges},
	{"List/Projects", testProjects},
	{"List/Pinned", testListPinned},
	{"Subagents", testSubagents},
	{"Fork", testFork},
	{"Fork/Refused", testForkRefused},
	{"Remove", testRemove},
	{"Cleanup", testCleanupTrash},
	{"Cleanup/Purge", testCleanup},
	{"Trash", testTrash},
	{"Trash/Empty", testEmptyTrash},
	{"Keys/Invalid", testInvalidKeys},
	{"Keys/Edge", testEdgeKeys},
	{"Concurrent/OneSession", testConcurrentOneSession},
	{"Concurrent/ManySessions", testConcurrentManySessions},
	{"Concurrent/Pop", testConcurrentPop},
	{"Guard", testGuard},
	{"Guard/Concurrent", testGuardConcurrent},
	{"Ghosts", testGhosts},
	{"Create", testCreate},
	{"Views/Sequential", testViewsSequential},
	{"Views/Concurrent", testViewsConcurrent},
	{"Views/VerifyBesideWriter", testVerifyBesideWriter},
	{"RemoveItem", testRemoveItem},
	{"Rewind", testRewind},
	{"Rewrite", testRewrite},
	{"Metadata", testMetadata},
	{"Metadata/Limits", testMetadataLimits},
	{"Updated", testUpdated},
	{"Damaged", testDamaged},
	{"Context", testContext},
	{"Context/Blocked", testBlocked},
	{"Close", testClose},
}

// Run runs the whole conformance suite against stores made by newStore,
// which must return a new, empty store for each call (the suite closes it).
// Every check is a subtest, so a store can skip one with -run/-skip while
// its author works on it; the model-based test runs as the subtest "Model"
// (see [RunModel]). Run skips the damaged-data cases, which need a hook:
// a store that can plant a record runs [RunConfig] instead.
func Run(t *testing.T, newStore func(t *testing.T) recall.Store) {
	t.Helper()
	RunConfig(t, Config{New: newStore})
}

// Config is what RunConfig needs of a store.
type Config struct {
	// New returns a new, empty store (the suite closes it). Required.
	New func(t *testing.T) recall.Store
	// Plant writes data verbatim as the next entry of the existing
	// session key: an item entry at seq LastSeq+1 whose item is data,
	// which may be any bytes (not JSON, a JSON array, a string; see
	// DamagedItems). It bypasses validation, the way a damaged disk, a
	// buggy writer or another program would leave a record. It keeps the
	// seqs dense (the store's record of the last seq moves on, so the
	// next Append follows it), and need not update any other metadata
	// the store keeps: the suite expects the store's readers to notice
	// the record (Items, Pop and Load skip or count it). Plant fails t
	// when it cannot plant. The damaged-data cases ("Damaged") use it.
	// Default (nil): those cases are skipped, with a log line saying so.
	Plant func(t *testing.T, s recall.Store, key recall.Key, data []byte)
	// Hold takes the write lock of the existing session key as another
	// writer of the same data would (another process, another
	// connection to the database), and returns once it holds it. waiting
	// reports whether a write of s is blocked behind that lock; nil when
	// the store cannot tell, and the suite then ends the write's context
	// without knowing that the write got that far. release lets the lock
	// go. The blocked-write case ("Context/Blocked") uses it. Default
	// (nil): that case is skipped, with a log line saying so; a store
	// with no lock another writer could hold has nothing to hold.
	Hold func(t *testing.T, s recall.Store, key recall.Key) (waiting func() bool, release func())
	// MaxProject is the longest project the store takes, when it is
	// shorter than a key's may be: a store that keeps a client's projects
	// under a prefix of its own (remotestore, whose server puts a user's
	// projects in the user's namespace) has that much less room. The
	// edge-of-validity case ("Keys/Edge") then cuts its longest project
	// to MaxProject, with a log line saying so. Default (0): the room of
	// recall.Key.Validate.
	MaxProject int
}

// RunConfig runs the whole conformance suite, as Run does, with the hooks
// of cfg: the damaged-data cases included when cfg.Plant is set, the
// blocked-write case when cfg.Hold is.
func RunConfig(t *testing.T, cfg Config) {
	t.Helper()
	for _, tc := range slices.Concat(tests, searchTests) {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t, cfg.New)
			e.plant, e.hold, e.maxProject = cfg.Plant, cfg.Hold, cfg.MaxProject
			tc.fn(e)
		})
	}
	t.Run("Model", func(t *testing.T) { RunModel(t, cfg.New) })
	t.Run("SearchModel", func(t *testing.T) { RunSearchModel(t, cfg.New) })
}
