package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Key layout, under the store's prefix P (the Lua helpers in lua/common.lua
// build the same names and must stay in step with this file):
//
//	P meta:<project>/<session>[:<subpath>]   hash: the session's metadata
//	P log:<project>/<session>[:<subpath>]    list: the entry log, element i holds seq i+1
//	P idx:all                                 zset: every main session (List of all projects)
//	P idx:active                              zset: the main sessions not archived
//	P idx:all:<project>                       zset: one project's main sessions
//	P idx:active:<project>                    zset: the same, not archived
//	P idx:sub:<project>/<session>             zset: a session's subagent records
//	P projects                                zset: the projects that hold a main session
//	P expiry                                  zset: index members scored by when their TTL ends
//
// The indexes are sorted sets whose members all score 0, so Redis orders
// them by their bytes, and each member spells its session's List position:
//
//	<16 hex digits: 2^62 - updated µs> <project> <session>[ <subpath>]
//
// The inverted time sorts newest first; the space sorts below every byte a
// name may hold ([A-Za-z0-9._-/]), so a shorter name sorts first, exactly
// like strings.Compare. Lexicographic order of members is therefore List
// order (recall.SortList), and a cursor is a ZRANGEBYLEX bound.

// maxMicros bounds the entry times the store accepts: Lua compares times as
// doubles, which are exact up to 2^53 µs (about 285 years from 1970).
const maxMicros = 1 << 53

// timeEnc is the sort prefix of an index member for a time in µs.
func timeEnc(us int64) string { return fmt.Sprintf("%016x", uint64(1<<62-us)) }

// parseTimeEnc inverts timeEnc.
func parseTimeEnc(s string) (int64, error) {
	var v uint64
	if len(s) != 16 {
		return 0, fmt.Errorf("bad time prefix %q", s)
	}
	if _, err := fmt.Sscanf(s, "%016x", &v); err != nil {
		return 0, fmt.Errorf("bad time prefix %q", s)
	}
	return int64(1<<62 - v), nil
}

// micros converts an entry time for storage, refusing those Lua cannot
// compare exactly.
func micros(t time.Time) (int64, error) {
	us := t.UnixMicro()
	if us <= -maxMicros || us >= maxMicros {
		return 0, fmt.Errorf("%w: entry time %s is outside the years 1685 to 2255", recall.ErrInvalidItem, t.Format(time.RFC3339))
	}
	return us, nil
}

// clampMicros converts a bound (a cursor or cleanup cutoff) that may lie
// outside the storable range: every stored time is inside it.
func clampMicros(us int64) int64 { return max(-maxMicros, min(us, maxMicros)) }

// fromMicros is the inverse of micros.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

type keys struct{ prefix string }

func (k keys) meta(key recall.Key) string { return k.prefix + "meta:" + key.String() }
func (k keys) log(key recall.Key) string  { return k.prefix + "log:" + key.String() }
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

// indexes are the KEYS an append script updates besides meta and log.
func (k keys) indexes(key recall.Key) []string {
	if key.IsMain() {
		return []string{k.all(""), k.active(""), k.all(key.Project), k.active(key.Project)}
	}
	return []string{k.sub(key)}
}

// memberSuffix is the part of an index member after its time prefix.
func memberSuffix(key recall.Key) string {
	s := " " + key.Project + " " + key.Session
	if key.Subpath != "" {
		s += " " + key.Subpath
	}
	return s
}

// parseMember splits an index member into its time (µs) and key.
func parseMember(m string) (int64, recall.Key, error) {
	parts := strings.Split(m, " ")
	if len(parts) != 3 && len(parts) != 4 {
		return 0, recall.Key{}, fmt.Errorf("%w: index member %q", recall.ErrCorrupt, m)
	}
	us, err := parseTimeEnc(parts[0])
	if err != nil {
		return 0, recall.Key{}, fmt.Errorf("%w: index member %q: %v", recall.ErrCorrupt, m, err)
	}
	key := recall.Key{Project: parts[1], Session: parts[2]}
	if len(parts) == 4 {
		key.Subpath = parts[3]
	}
	return us, key, nil
}

// cursorBound turns a List cursor into the exclusive ZRANGEBYLEX bound of
// the next page. A cursor time finer than a microsecond (stores never write
// one) still works: the page starts at the first member of the µs below it.
func cursorBound(c recall.Cursor) string {
	us := c.Updated.UnixMicro()
	if c.Updated.Nanosecond()%1000 != 0 || us != clampMicros(us) {
		return "[" + timeEnc(clampMicros(us))
	}
	return "(" + timeEnc(us) + memberSuffix(recall.Key{Project: c.Project, Session: c.Session, Subpath: c.Subpath})
}

// sinceBound is the inclusive ZRANGEBYLEX bound of the members updated
// strictly before t: they all sort at or after it.
func sinceBound(t time.Time) string {
	us := t.UnixMicro()
	if t.Nanosecond()%1000 == 0 {
		us-- // updated < t, in whole µs
	}
	return "[" + timeEnc(clampMicros(us))
}
