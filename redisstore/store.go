// Package redisstore is a recall.Store on Redis (go-redis v9), for services
// that keep sessions in a Redis shared by many processes.
//
// Per session, the entries live in a list and the metadata in a hash; per
// project, a sorted set orders the main sessions by update time, and each
// session's subagent records have a sorted set of their own (keys.go
// describes the layout). Every write (append, pop, import, remove) is one
// Lua script, so it is atomic: seqs are assigned inside the script from
// the hash's last seq, the append's recall.Guard is checked there before
// anything is written, a pop finds the newest item and records its removal
// in the same step, and the metadata and index entries change with the
// log. Reads that span several commands run in MULTI transactions (Load,
// the first chunk of Items) or read only log elements that can no longer
// change (Items' older chunks, checked against the session's generation).
//
// ReadItems (storekit.ItemPager) reads one page of a view by position. The
// append script keeps, beside each log, a record of the seqs of the view's
// control entries (the clear or compaction it starts at, and the pops and
// removals since), so a page costs its items and those entries, not the
// length of the session (page.go).
//
// A log element that is not a readable entry, or an item entry whose item
// is not a JSON object (written by another program, or damaged), is kept
// and skipped: Items, Pop and the view leave it out, and Load counts it in
// Meta.Corrupt. Stat and List cannot see it without reading the log, so
// their Corrupt is 0.
//
// Updated is the time of the last conversation activity
// (recall.Kind.IsActivity); data written before that rule is upgraded on
// first use (see migrate.go).
//
// List reads the sorted sets from a keyset bound (never KEYS, never a SCAN
// of the keyspace). An optional TTL is refreshed on every append; sessions
// that expired are dropped from the indexes as they are read, and by later
// writes, so no stale entry lingers.
//
// Scripts compute the keys of index entries, so the store needs a
// standalone Redis (or one behind Sentinel); Redis Cluster is not
// supported. Use a "noeviction" or "volatile-*" maxmemory policy: a session
// evicted behind the store's back is dropped from List, but Projects may
// count it until a List reads past it.
package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/redact"
	"github.com/recallkit/recall/storekit"
)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "recall:"

// Options configure a Store. The zero value works.
type Options struct {
	// Prefix starts every key the store writes, so several apps (or
	// tests) can share one Redis database. Choose prefixes that are not
	// prefixes of one another. Default: DefaultPrefix ("recall:").
	Prefix string

	// TTL, when positive, makes a session expire TTL after its last
	// append; every append refreshes it. A subagent record has its own
	// TTL. Default (0): sessions are kept until removed.
	TTL time.Duration

	// MaxItemSize is the largest item accepted, in bytes.
	// Default: recall.DefaultMaxItemSize (32 MiB).
	MaxItemSize int
}

// Store is a recall.Store on Redis. It is safe for concurrent use, also by
// many processes sharing one Redis.
type Store struct {
	rdb    redis.UniversalClient
	owned  bool // Close closes rdb: Open made it
	opts   Options
	k      keys
	ttlMS  int64
	closed atomic.Bool

	// upgraded is set once the data under the prefix is known to follow
	// schemaVersion; upgrading holds the one upgrade of this store in
	// flight (see ready).
	upgraded  atomic.Bool
	upgrading chan struct{}

	// scanBudget, when above 0, replaces the constant scanBudget (a
	// test's, so that a page takes several script calls).
	scanBudget int
}

// What the store implements: the Store and every optional ability.
var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.Forker        = (*Store)(nil)
	_ storekit.Rewriter      = (*Store)(nil)
	_ storekit.ItemPager     = (*Store)(nil)
)

// New returns a store on an existing client, which the caller keeps
// owning: Close does not close it. New adds a hook to the client (see
// unavailableHook) so that its errors of an unreachable server also wrap
// recall.ErrUnavailable; every other error is left as it is.
func New(client redis.UniversalClient, opts Options) *Store {
	client.AddHook(unavailableHook{})
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	var ttlMS int64
	if opts.TTL > 0 {
		ttlMS = int64((opts.TTL + time.Millisecond - 1) / time.Millisecond) // PEXPIRE counts whole ms
	}
	return &Store{rdb: client, opts: opts, k: keys{prefix: opts.Prefix}, ttlMS: ttlMS, upgrading: make(chan struct{}, 1)}
}

// Open connects to the Redis at url (redis://, rediss:// or unix://, as
// go-redis ParseURL reads it: redis://user:password@host:port/db?options)
// and checks that it answers. Close closes the connection. An error names
// the store by its URL with the secrets redacted (storeurl.Redact), and
// its text never shows the password, even when the URL does not parse.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, redact.Wrap("redisstore: open", url, parseError(err))
	}
	client := redis.NewClient(o)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, redact.Wrap("redisstore: open", url, err, o.Password)
	}
	s := New(client, opts)
	s.owned = true
	return s, nil
}

// parseError is a URL parse error without the URL itself, which
// redact.Wrap would only show redacted anyway.
func parseError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("invalid URL: %w", ue.Err)
	}
	return err
}

// Close implements recall.Store. It closes the client if Open made it.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.owned {
		return nil
	}
	if err := s.rdb.Close(); err != nil {
		return fmt.Errorf("redisstore: close: %w", err)
	}
	return nil
}

// begin is the start of every method: the store is open, the data
// follows the current schema (ready), and ctx is not done. Methods that
// write check ctx again just before the script that writes.
func (s *Store) begin(ctx context.Context) error {
	if s.closed.Load() {
		return recall.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// check is begin for a method on one session: key must be valid too.
func (s *Store) check(ctx context.Context, key recall.Key) error {
	if s.closed.Load() {
		return recall.ErrClosed
	}
	if err := key.Validate(); err != nil {
		return err
	}
	return s.begin(ctx)
}

//go:embed lua/common.lua
var luaCommon string

//go:embed lua/append.lua
var luaAppend string

//go:embed lua/remove.lua
var luaRemove string

//go:embed lua/list.lua
var luaList string

//go:embed lua/projects.lua
var luaProjects string

//go:embed lua/prune.lua
var luaPrune string

// The scripts run by EVALSHA, falling back to EVAL after a server restart
// emptied the script cache.
var (
	appendScript   = redis.NewScript(luaCommon + luaAppend)
	removeScript   = redis.NewScript(luaCommon + luaRemove)
	listScript     = redis.NewScript(luaCommon + luaList)
	projectsScript = redis.NewScript(luaCommon + luaProjects)
	pruneScript    = redis.NewScript(luaCommon + luaPrune)
)

// errStale reports that a session changed between the reads, or between
// the read and the write, of one operation; the operation starts over.
var errStale = errors.New("redisstore: the session changed while it was read")

// scriptError maps a script's error reply, by its first word, to recall's
// sentinels.
func scriptError(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "ERR ") // Redis adds it to a one-word reply
	switch {
	case strings.HasPrefix(msg, "RECALL_STALE"):
		return errStale
	case strings.HasPrefix(msg, "RECALL_GUARD "):
		var ge guardError
		var exists int
		if _, err := fmt.Sscanf(msg, "RECALL_GUARD %d %d", &exists, &ge.last); err == nil {
			ge.exists = exists == 1
			return &ge
		}
		return fmt.Errorf("%w: %s", recall.ErrConflict, msg)
	case strings.HasPrefix(msg, "RECALL_GAP"):
		return fmt.Errorf("%w: %s", recall.ErrConflict, strings.TrimPrefix(msg, "RECALL_GAP "))
	}
	return err
}

// guardError is the append script's report of a failed guard: the state
// of the session it found.
type guardError struct {
	exists bool
	last   int64
}

func (e *guardError) Error() string {
	return fmt.Sprintf("redisstore: guard failed (session exists %t, last seq %d)", e.exists, e.last)
}

// check returns the error recall.Guard.Check gives for the state found,
// so that every store words (and classifies) a failed guard alike.
func (e *guardError) check(g recall.Guard) error {
	if err := g.Check(e.exists, e.last); err != nil {
		return err
	}
	return fmt.Errorf("%w: the session is at seq %d", recall.ErrConflict, e.last)
}

// randomHex returns 16 random hex digits: batch tokens and generations
// only need to be unique, not secret.
func randomHex() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// maxAttempts bounds the optimistic retries of Import (which re-plans
// when another writer got there first) and of multi-chunk reads (which
// start over when the session was re-created under them).
const maxAttempts = 32

// unavailableHook makes a client's errors that say Redis could not be
// reached (a connection refused, broken or timed out, a closed client or
// pool, a pool that gave no connection in time) wrap
// recall.ErrUnavailable, for the command's own error and for the error a
// call returns. A reply of the server (redis.Nil, an error reply) is
// left as it is, as is an error already marked (a client shared by two
// stores has the hook twice).
type unavailableHook struct{}

func (unavailableHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (unavailableHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil {
			return markUnavailable(ctx, err, cmd)
		}
		return nil
	}
}

func (unavailableHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := next(ctx, cmds); err != nil {
			return markUnavailable(ctx, err, cmds...)
		}
		return nil
	}
}

// markUnavailable returns err wrapping recall.ErrUnavailable when it says
// the server could not be reached, and sets the commands' errors alike.
func markUnavailable(ctx context.Context, err error, cmds ...redis.Cmder) error {
	if !unreachable(ctx, err) {
		return err
	}
	for _, c := range cmds {
		if ce := c.Err(); ce != nil && unreachable(ctx, ce) {
			c.SetErr(fmt.Errorf("%w: %w", recall.ErrUnavailable, ce))
		}
	}
	return fmt.Errorf("%w: %w", recall.ErrUnavailable, err)
}

// unreachable reports an error of the connection to Redis rather than of
// the command: not a reply, not the caller's context, not marked yet.
func unreachable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, recall.ErrUnavailable) || errors.Is(err, redis.Nil) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED)
}
