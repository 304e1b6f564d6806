package storetest

import (
	"maps"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// The model's reference: a plain log per session, kept by the test, whose
// metadata and view are what recall.Replay derives from it. Each operation
// is stated here as what it appends to that log, written from the
// contracts of recall.Store and the root helpers, not from any store.

// refLog returns key's log and whether the session exists.
func (m *model) refLog(key recall.Key) ([]recall.Entry, bool) {
	log, ok := m.logs[key]
	return log, ok
}

// refMeta returns key's metadata and view, and whether it exists.
func (m *model) refMeta(key recall.Key) (recall.Meta, []recall.LiveItem, bool) {
	log, ok := m.logs[key]
	if !ok {
		return recall.Meta{}, nil, false
	}
	meta, live := recall.Replay(key, log)
	return meta, live, true
}

// lastSeq returns the reference's LastSeq of key, 0 when it is missing.
func (m *model) lastSeq(key recall.Key) int64 {
	log := m.logs[key]
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// write appends entries to key's log as a store's Append does: seqs
// after the last, the time now unless the entry carries one. It creates
// the session. It returns the last seq.
func (m *model) write(key recall.Key, entries ...recall.Entry) int64 {
	log := m.logs[key]
	last := m.lastSeq(key)
	now := storekit.Now()
	for _, e := range entries {
		e = e.Clone()
		last++
		e.Seq = last
		if e.Time.IsZero() {
			e.Time = now
		}
		log = append(log, e)
	}
	m.logs[key] = log
	return last
}

// remove removes key as Store.Remove does (a main session takes its
// subagent records with it) and reports whether anything was there.
func (m *model) remove(key recall.Key) bool {
	found := false
	for k := range m.logs {
		if k == key || key.IsMain() && k.Parent() == key {
			delete(m.logs, k)
			found = true
		}
	}
	return found
}

// guardOutcome is the error class a guard yields on a session in the given
// state, as recall.Guard documents it: "nil" when it holds.
func guardOutcome(g recall.Guard, exists bool, last int64) string {
	switch {
	case g.Exists && !exists:
		return "ErrNotFound"
	case g.New && exists:
		return "ErrConflict"
	case g.CheckSeq && last != g.LastSeq:
		if !exists && g.LastSeq > 0 {
			return "ErrNotFound" // it existed when the caller read it
		}
		return "ErrConflict"
	}
	return "nil"
}

// importOutcome applies Import's rule to key's log: entries at or below
// LastSeq are skipped, the rest must continue the log without a gap and
// carry a time. It returns the entries to write and the error class.
func (m *model) importOutcome(key recall.Key, entries []recall.Entry) ([]recall.Entry, string) {
	last := m.lastSeq(key)
	next := last + 1
	var fresh []recall.Entry
	for _, e := range entries {
		if e.Seq <= last {
			continue
		}
		if e.Seq != next || e.Time.IsZero() {
			return nil, "ErrConflict"
		}
		fresh = append(fresh, e.Clone())
		next++
	}
	return fresh, "nil"
}

// foldTitle is the title SetTitle and Create store: runs of white space
// become one space, and none lead or trail.
func foldTitle(title string) string { return strings.Join(strings.Fields(title), " ") }

// mergedMetadata is the map a metadata change leaves on md.
func mergedMetadata(md map[string]string, clear bool, changes map[string]*string) map[string]string {
	out := map[string]string{}
	if !clear {
		maps.Copy(out, md)
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// refList is the reference's List: every session of project (every
// project when ""), main sessions or the records under opts.Parent,
// archived ones only when asked. Its order is not List's; the caller
// compares membership.
func (m *model) refList(project string, opts recall.ListOptions) []recall.Meta {
	var out []recall.Meta
	for k := range m.logs {
		meta, _, _ := m.refMeta(k)
		switch {
		case project != "" && k.Project != project:
		case meta.Trashed.IsZero() == opts.Trashed:
		case meta.Archived && !opts.IncludeArchived && !opts.Trashed:
		case !meta.Pinned && opts.Pinned:
		case opts.Parent != "" && (k.Session != opts.Parent || k.Subpath == ""):
		case opts.Parent == "" && k.Subpath != "":
		default:
			out = append(out, meta)
		}
	}
	return out
}

// refKeys returns the keys of the reference's sessions, sorted.
func (m *model) refKeys() []recall.Key {
	keys := slices.Collect(maps.Keys(m.logs))
	slices.SortFunc(keys, compareKeys)
	return keys
}
