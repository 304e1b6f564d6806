package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Key layout, under the store's prefix P (the Lua helpers in lua/common.lua
// build the same names and must stay in step with this file):
//
//	P meta:<project>/<session>[:<subpath>]   hash: the session's metadata
//	P log:<project>/<session>[:<subpath>]    list: the entry log, element i holds seq first+i (hash field first, default 1)
//	P ctl:<project>/<session>[:<subpath>]    list: the seqs of the view's control entries, oldest first (page.go)
//	P idx:all                                 zset: every main session (List of all projects)
//	P idx:active                              zset: the main sessions not archived
//	P idx:all:<project>                       zset: one project's main sessions
//	P idx:active:<project>                    zset: the same, not archived
//	P idx:pin                                 zset: the pinned main sessions, archived too (schema 4)
//	P idx:pin:<project>                       zset: one project's pinned main sessions
//	P idx:sub:<project>/<session>             zset: a session's subagent records
//	P projects                                zset: the projects that hold a main session
//	P expiry                                  zset: sessions with a TTL, by when it ends (ms)
//	P schema                                  string: the version of the data's rules (migrate.go)
//
// A session's metadata hash holds its fields (last, created, updated,
// items, title, ...; record.go decodeMeta) and one field "m:<key>" per
// pair of its metadata map.
//
// A session's member in the indexes is its key, "<project> <session>[
// <subpath>]", and its score is minus its update time in µs. Redis orders
// a sorted set by score, then by the members' bytes, so ascending order is
// newest first and ties sort by project, session and subpath: the space
// sorts below every byte a name may hold ([A-Za-z0-9._-/]), so a shorter
// name sorts first, exactly like strings.Compare. Index order is therefore
// List order (storekit.SortList), and an append moves its session with one
// ZADD per index.

// maxMicros bounds the entry times the store accepts: scores and Lua
// numbers are doubles, exact up to 2^53 µs (about 285 years from 1970).
const maxMicros = 1 << 53

// micros converts an entry time for storage, refusing those a double
// cannot hold exactly.
func micros(t time.Time) (int64, error) {
	us := t.UnixMicro()
	if us <= -maxMicros || us >= maxMicros {
		return 0, fmt.Errorf("%w: entry time %s is outside the years 1685 to 2255", recall.ErrInvalidItem, t.Format(time.RFC3339))
	}
	return us, nil
}

// fromMicros is the inverse of micros.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

type keys struct{ prefix string }

func (k keys) meta(key recall.Key) string { return k.prefix + "meta:" + key.String() }
func (k keys) log(key recall.Key) string  { return k.prefix + "log:" + key.String() }
func (k keys) ctl(key recall.Key) string  { return k.prefix + "ctl:" + key.String() }
func (k keys) schema() string             { return k.prefix + "schema" }
func (k keys) sub(key recall.Key) string {
	return k.prefix + "idx:sub:" + key.Project + "/" + key.Session
}

// all and active name the indexes of main sessions: of one project, or of
// every project when project is "".
func (k keys) all(project string) string {
	if project == "" {
		return k.prefix + "idx:all"
	}
	return k.prefix + "idx:all:" + project
}

func (k keys) active(project string) string {
	if project == "" {
		return k.prefix + "idx:active"
	}
	return k.prefix + "idx:active:" + project
}

// pinned names the indexes of pinned main sessions, archived ones
// included: of one project, or of every project when project is "".
// They hold few members, so that a listing of pinned sessions (archived
// ones skipped as they are met) costs about the number of pinned ones.
func (k keys) pinned(project string) string {
	if project == "" {
		return k.prefix + "idx:pin"
	}
	return k.prefix + "idx:pin:" + project
}

// indexes are the KEYS an append script updates besides meta, log and ctl.
func (k keys) indexes(key recall.Key) []string {
	if key.IsMain() {
		return []string{k.all(""), k.active(""), k.all(key.Project), k.active(key.Project), k.pinned(""), k.pinned(key.Project)}
	}
	return []string{k.sub(key)}
}

// member is a session's member in the indexes.
func member(key recall.Key) string {
	s := key.Project + " " + key.Session
	if key.Subpath != "" {
		s += " " + key.Subpath
	}
	return s
}

// parseMember is the inverse of member.
func parseMember(m string) (recall.Key, error) {
	parts := strings.Split(m, " ")
	if len(parts) != 2 && len(parts) != 3 {
		return recall.Key{}, fmt.Errorf("%w: index member %q", recall.ErrCorrupt, m)
	}
	key := recall.Key{Project: parts[0], Session: parts[1]}
	if len(parts) == 3 {
		key.Subpath = parts[2]
	}
	return key, nil
}

// bound is a position in an index: the members after it are those with a
// greater score, or an equal score and a member that sorts after Member.
// The zero bound (Score "") is before everything.
type bound struct {
	Score  string
	Member string
}

// scoreOf is the score of an update time in µs, clamped to the range
// stored times lie in, which keeps bounds of far times meaningful.
func scoreOf(us int64) string {
	return strconv.FormatInt(-max(-maxMicros, min(us, maxMicros)), 10)
}

// cursorBound is where the next page after a List cursor starts. A cursor
// time finer than a microsecond (stores never write one) still splits the
// list right: every session of its µs and older comes after it.
func cursorBound(c storekit.Cursor) bound {
	us := c.Updated.UnixMicro() // floors
	if c.Updated.Nanosecond()%1000 != 0 {
		return bound{Score: scoreOf(us)}
	}
	return bound{Score: scoreOf(us), Member: member(recall.Key{Project: c.Project, Session: c.Session, Subpath: c.Subpath})}
}

// olderThan is the bound after which come the sessions updated strictly
// before t.
func olderThan(t time.Time) bound {
	us := t.UnixMicro() // floors: with a fraction, updated <= us is before t
	if t.Nanosecond()%1000 == 0 {
		us-- // updated < t, in whole µs
	}
	return bound{Score: scoreOf(us)}
}
