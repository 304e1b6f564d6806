package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
)

// schemaVersion is the version of the rules the data under a prefix
// follows, kept in the key P schema:
//
//	1 (no key)  a session's updated time (and index score) moved for every entry
//	2           it moves for conversation activity only (recall.Kind.IsActivity),
//	            and the metadata map lives in the hash fields "m:<key>"
//	3           the hash field "fp" holds recall.Meta.FirstPrompt
//	4           the indexes P idx:pin and P idx:pin:<project> hold every
//	            pinned main session (keys.go)
//
// A store upgrades older data before its first operation (ready): nothing
// is lost, only the times the old rule moved for title and meta entries,
// and the first prompts, are computed again from the logs, and the pinned
// sessions are indexed. A process of an older version that still writes
// beside this one after the upgrade keeps no pinned index: a session it
// unpins leaves the indexes at the next pinned listing (lua/list.lua), one
// it pins is missing from pinned listings until this version writes to it.
//
// The control record ReadItems reads (page.go, key P ctl:<key>) needs no
// version: each session's hash says which seq its record covers (field
// ctl), and the first page of a session whose record falls short of its
// last seq reads the controls from the log and writes the record
// (lua/page.lua). That covers the sessions written before the record and
// those an older version of this package, still running beside this
// one, writes to after an upgrade, which an upgrade run once cannot.
const schemaVersion = 4

//go:embed lua/upgrade.lua
var luaUpgrade string

//go:embed lua/schema.lua
var luaSchema string

//go:embed lua/pinindex.lua
var luaPinIndex string

var (
	upgradeScript  = redis.NewScript(luaUpgrade)
	schemaScript   = redis.NewScript(luaSchema)
	pinIndexScript = redis.NewScript(luaCommon + luaPinIndex)
)

// upgradeChunk is how many log elements one read of an upgrade fetches.
const upgradeChunk = 1000

// ready makes sure the data under the store's prefix follows
// schemaVersion before the store's first operation, upgrading it if not.
// After the first success it costs one atomic load. Goroutines of one
// store wait for its one upgrade (or for their ctx); several processes
// may upgrade at once, safely: each session's new time is written only if
// the session is still the one read (upgrade.lua), and every upgrader
// computes the same time from the same log. The version is raised only
// once every session is done, so a process that stops midway leaves the
// upgrade to the next one.
func (s *Store) ready(ctx context.Context) error {
	if s.upgraded.Load() {
		return nil
	}
	select {
	case s.upgrading <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.upgrading }()
	if s.upgraded.Load() {
		return nil
	}
	if err := s.upgrade(ctx); err != nil {
		return fmt.Errorf("upgrading the data to schema %d: %w", schemaVersion, err)
	}
	s.upgraded.Store(true)
	return nil
}

// upgrade brings the data under the prefix to schemaVersion. It reads
// every main session from the index of all sessions with ZSCAN, which
// returns every member present throughout, while the scores it rewrites
// move them. From version 1 or 2 it recomputes the update time and first
// prompt of each and of each one's subagent records; from version 3 or
// below it puts each pinned one in the pinned indexes (after the
// recompute, which sets the score they take).
func (s *Store) upgrade(ctx context.Context) error {
	v, err := s.rdb.Get(ctx, s.k.schema()).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if v >= schemaVersion {
		return nil
	}
	var cursor uint64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, next, err := s.rdb.ZScan(ctx, s.k.all(""), cursor, "", 256).Result()
		if err != nil {
			return err
		}
		for i := 0; i < len(page); i += 2 { // member, score, ...
			key, err := parseMember(page[i])
			if err != nil || !key.IsMain() {
				continue // not a session's member: List skips it too
			}
			if v < 3 {
				if err := s.recomputeWithRecords(ctx, key); err != nil {
					return err
				}
			}
			keys := []string{s.k.meta(key), s.k.pinned(""), s.k.pinned(key.Project)}
			if err := pinIndexScript.Run(ctx, s.rdb, keys, s.k.prefix, member(key)).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return schemaScript.Run(ctx, s.rdb, []string{s.k.schema()}, s.k.prefix, schemaVersion).Err()
}

// recomputeWithRecords recomputes the main session key and each of its
// subagent records (see recompute).
func (s *Store) recomputeWithRecords(ctx context.Context, key recall.Key) error {
	if err := s.recompute(ctx, key); err != nil {
		return err
	}
	subs, err := s.rdb.ZRange(ctx, s.k.sub(key), 0, -1).Result()
	if err != nil {
		return err
	}
	for _, m := range subs {
		sub, err := parseMember(m)
		if err != nil || sub.IsMain() {
			continue
		}
		if err := s.recompute(ctx, sub); err != nil {
			return err
		}
	}
	return nil
}

// recompute sets key's update time and first prompt to what
// recall.Meta.Apply derives from its log (the first readable entry's time,
// moved by conversation activity only; the first recall.Entry.Prompt) and its
// index scores to match. The log is read in chunks; the
// write happens only if the session's last seq and generation are still
// those read. When a writer got in between, only the elements it added
// are read before trying again (the log only grows while the generation
// holds), so even a busy session converges. A session whose hash cannot
// be read is left as it is (Load and List report it).
func (s *Store) recompute(ctx context.Context, key recall.Key) error {
	var (
		gen          string
		first, next  int64 = 0, 0 // the log's first seq; the next seq to read
		updated      int64
		prompt       string
		seen, reread bool
	)
	for range maxAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := s.rdb.HMGet(ctx, s.k.meta(key), "last", "first", "gen").Result()
		if err != nil {
			return err
		}
		lastStr, _ := h[0].(string)
		if lastStr == "" {
			return nil // gone (removed, expired)
		}
		last, err := strconv.ParseInt(lastStr, 10, 64)
		firstStr, _ := h[1].(string)
		f, ferr := firstSeq(firstStr)
		if err != nil || ferr != nil {
			return nil
		}
		g, _ := h[2].(string)
		if !reread || g != gen || f != first {
			gen, first, next, updated, prompt, seen = g, f, f, 0, "", false // (re-)created: from the start
		}
		reread = true
		for next <= last {
			lo := next - first
			els, err := s.rdb.LRange(ctx, s.k.log(key), lo, min(lo+upgradeChunk, last-first+1)-1).Result()
			if err != nil {
				return err
			}
			for i, el := range els {
				e, err := decodeElement(el, next+int64(i))
				if err != nil {
					continue // skipped by Load too
				}
				if prompt == "" {
					prompt = e.Prompt()
				}
				us := e.Time.UnixMicro()
				if !seen || e.Kind.IsActivity() && us > updated {
					updated, seen = us, true
				}
			}
			if len(els) == 0 {
				break // the list is shorter than the hash says (Load reports it)
			}
			next += int64(len(els))
		}
		if !seen {
			return nil // nothing readable to derive a time from: left as it is
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		keys := append([]string{s.k.meta(key)}, s.k.indexes(key)...)
		n, err := upgradeScript.Run(ctx, s.rdb, keys, s.k.prefix, lastStr, gen, strconv.FormatInt(updated, 10), scoreOf(updated), member(key), prompt).Int()
		if err != nil {
			return err
		}
		if n >= 0 {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: the session kept changing", key, recall.ErrConflict)
}
