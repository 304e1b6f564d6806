package filestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/storekit"
)

// SyncPolicy says when the store forces written log bytes to stable storage.
type SyncPolicy int

const (
	// SyncAlways (the default, the zero value) fsyncs a log after every
	// write before the call returns (fdatasync on Linux, F_FULLFSYNC on
	// macOS, FlushFileBuffers on Windows), and fsyncs the directory of
	// every file it creates (Windows has no directory fsync and needs
	// none). An acknowledged batch survives SIGKILL, a kernel crash and
	// power loss.
	SyncAlways SyncPolicy = iota

	// SyncNever leaves log writes in the operating system's page cache.
	// THIS IS UNSAFE for crash durability: after a power loss or kernel
	// crash, batches acknowledged in the last seconds may be gone or torn
	// (a torn tail is repaired at the next write, and the log stays
	// readable). A killed process loses nothing the kernel has accepted.
	// Use it for tests and throwaway sessions only. Files the store creates
	// in one step (a new session's log with its first batch, which is how
	// recall.StoreSession.Fork and recall.StoreSession.Create write; the index) are still fsynced,
	// with their directory, since a link or rename without an fsync may
	// leave an empty file after a crash.
	SyncNever
)

// String returns "always" or "never".
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// Options configure a Store. The zero value works.
type Options struct {
	// Dir is the store's home. Default: DefaultHome() ($RECALL_HOME, or
	// ~/.recall when it is unset).
	Dir string
	// Sync is the fsync policy of appends. Default: SyncAlways.
	Sync SyncPolicy
	// MaxItemSize is the largest item accepted, in bytes.
	// Default: recall.DefaultMaxItemSize (32 MiB).
	MaxItemSize int
}

// Store is a recall.Store over JSONL files; see the package documentation.
// It is safe for concurrent use by many goroutines and many processes.
type Store struct {
	home string // absolute
	root string // home/projects
	opts Options

	closed atomic.Bool
	// test holds a test's switches and counters; nil in use.
	test  *testHooks
	locks keyLocks

	mu       sync.Mutex
	projects map[string]*projectIndex

	search searchIndex // see Search

	bg      sync.WaitGroup // settleDir's checks, which Close waits for
	closing chan struct{}  // closed by Close
}

// What the store implements: the Store and every optional ability.
var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ search.Indexer         = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.Forker        = (*Store)(nil)
	_ storekit.ItemPager     = (*Store)(nil)
	_ storekit.Purger        = (*Store)(nil)
	_ storekit.Rewriter      = (*Store)(nil)
)

const (
	logExt      = ".jsonl"
	projectsDir = "projects"
)

// DefaultHome returns the default home of the store: $RECALL_HOME when set,
// else .recall in the user's home directory. The result is absolute.
func DefaultHome() (string, error) {
	if h := os.Getenv("RECALL_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("filestore: RECALL_HOME %q: %w", h, err)
		}
		return abs, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("filestore: no RECALL_HOME and no home directory: %w", err)
	}
	return filepath.Join(u, ".recall"), nil
}

// Open opens the store at opts.Dir, creating the directory if needed; it
// fails with an error naming the path when the home cannot be created. A
// home that exists but cannot be written (a read-only mount, no write
// permission) opens for reading: every write then fails with an error
// that names the path and wraps the system's (EROFS, EACCES), and changes
// nothing. Open reads no log: torn tails are repaired by the first write
// to each session.
func Open(opts Options) (*Store, error) {
	if opts.Sync != SyncAlways && opts.Sync != SyncNever {
		return nil, fmt.Errorf("filestore: unknown sync policy %d", int(opts.Sync))
	}
	if opts.MaxItemSize <= 0 {
		opts.MaxItemSize = recall.DefaultMaxItemSize
	}
	home := opts.Dir
	if home == "" {
		h, err := DefaultHome()
		if err != nil {
			return nil, err
		}
		home = h
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return nil, fmt.Errorf("filestore: home %q: %w", opts.Dir, err)
	}
	opts.Dir = home
	root := filepath.Join(home, projectsDir)
	if err := mkdirDurable(root, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: home %s cannot be created: %w", home, err)
	}
	return &Store{home: home, root: root, opts: opts, projects: map[string]*projectIndex{}, closing: make(chan struct{})}, nil
}

// Home returns the store's home directory (absolute).
func (s *Store) Home() string { return s.home }

// ProjectDir returns the directory holding project's sessions,
// <home>/projects/<project>. The project key is validated first, so the
// result is always inside the home; the error wraps recall.ErrInvalidKey.
func (s *Store) ProjectDir(project string) (string, error) {
	if err := validProject(project); err != nil {
		return "", fmt.Errorf("filestore: %w", err)
	}
	return filepath.Join(s.root, project), nil
}

// Close marks the store closed; later calls return recall.ErrClosed. It
// writes the index records still held back (see the index); the logs need
// nothing, since the store holds no file open between calls.
func (s *Store) Close() error {
	s.mu.Lock()
	first := !s.closed.Swap(true)
	s.mu.Unlock()
	if first {
		close(s.closing)
	}
	s.bg.Wait()
	s.mu.Lock()
	projects := make([]*projectIndex, 0, len(s.projects))
	for _, p := range s.projects {
		projects = append(projects, p)
	}
	s.mu.Unlock()
	for _, p := range projects {
		p.close()
	}
	s.search.close()
	return nil
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return recall.ErrClosed
	}
	return nil
}

// validProject checks a project name alone.
func validProject(project string) error {
	return recall.Key{Project: project, Session: "x"}.Validate()
}

// validKey checks k (recall.Key.Validate). Session "a" has the log
// a.jsonl and session "a.jsonl" keeps its subagent records in a.jsonl/, so
// those two cannot both exist in one project: whichever comes second gets
// ErrConflict.
func validKey(k recall.Key) error { return k.Validate() }

// loc is where a validated key lives on disk.
type loc struct {
	key  recall.Key
	dir  string // project directory
	rel  string // session or session/subpath: the index key, '/'-separated
	path string // the log file
}

// locate validates key and returns its paths. It is the only way a key
// becomes a path, so no key that fails validation reaches the filesystem.
func (s *Store) locate(key recall.Key) (loc, error) {
	if err := s.checkOpen(); err != nil {
		return loc{}, err
	}
	if err := validKey(key); err != nil {
		return loc{}, err
	}
	rel := key.Session
	if key.Subpath != "" {
		rel += "/" + key.Subpath
	}
	dir := filepath.Join(s.root, key.Project)
	return loc{key: key, dir: dir, rel: rel, path: filepath.Join(dir, filepath.FromSlash(rel)+logExt)}, nil
}

// keyOf turns an index key back into a recall.Key; ok is false for a name
// no valid key produces (a file copied in by hand under a bad name).
func keyOf(project, rel string) (recall.Key, bool) {
	k := recall.Key{Project: project, Session: rel}
	if i := strings.IndexByte(rel, '/'); i >= 0 {
		k.Session, k.Subpath = rel[:i], rel[i+1:]
	}
	return k, validKey(k) == nil
}

// isNotExist reports a missing file or a path through a non-directory.
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, errNotDir)
}

// testHooks are the switches and counters a test gives the stores it
// opens (OpenHooked, in export_test.go), so that tests running side by
// side never switch each other's stores; a Store in use has none (nil).
// The switches are set before the store is opened and never change.
type testHooks struct {
	// NoPageCheck: List shows what the journal says, without a stat of
	// the logs of its page.
	NoPageCheck bool
	// NoHead: List never reads a first page from the journal's head
	// (listHead), so a test can compare it with a whole read.
	NoHead bool
	// Settled: every directory counts as settled (see racyWindow), as for
	// a List made after the file system's clock moved on.
	Settled bool
	// TrustedLists counts the project lists served from the journal
	// alone; HeadLists the first pages served by listHead.
	TrustedLists, HeadLists atomic.Int64
}

func (h *testHooks) pageCheck() bool { return h == nil || !h.NoPageCheck }

func (h *testHooks) head() bool { return h == nil || !h.NoHead }

func (h *testHooks) settled() bool { return h != nil && h.Settled }

// trusted counts a list served from the journal alone, from its head when
// head is true.
func (h *testHooks) trusted(head bool) {
	if h == nil {
		return
	}
	h.TrustedLists.Add(1)
	if head {
		h.HeadLists.Add(1)
	}
}
