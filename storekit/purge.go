package storekit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/recallkit/recall"
)

// Purger is an optional ability of a recall.Store: it physically removes the
// entries before a session's latest compaction entry, which a compaction
// leaves in the log on purpose. It is separate from compaction and
// explicit, since it destroys history that exports could still show.
//
// If a recall.Store does not implement Purger, the entries stay; callers report
// ErrUnsupported (`recall compact --purge` does). The file store and the
// memory store implement it.
type Purger interface {
	// Purge rewrites key's log as PurgeLog describes, atomically: after a
	// crash at any instant the session is exactly as before or exactly as
	// after. A session without a compaction entry, or whose latest one is
	// already its first entry, is left alone (Dropped 0). A session that
	// does not exist is recall.ErrNotFound.
	Purge(ctx context.Context, key recall.Key) (PurgeResult, error)
}

// PurgeResult reports what Purge did.
type PurgeResult struct {
	// Dropped counts the entries removed.
	Dropped int `json:"dropped"`
	// From is the seq of the compaction entry the log now starts at, or 0
	// when nothing was purged.
	From int64 `json:"from,omitempty"`
	// Restored counts the entries appended to carry over metadata that
	// only the dropped entries held (see PurgeLog).
	Restored int `json:"restored,omitempty"`
}

// PurgeLog returns the log a purge leaves of entries, a session's whole
// log in seq order, and how many entries it drops. Stores that implement
// Purger write its result in one atomic step.
//
// The purged log starts at the latest compaction entry (whose payload
// decodes) and keeps it and every later entry verbatim, with two changes
// that keep the session's metadata exactly as it was:
//
//   - the compaction entry records the session's creation time
//     (recall.Compaction.Created) and adds the usage recorded on the dropped
//     entries to its own, so recall.Meta.Created and recall.Meta.Usage do not change;
//   - metadata that only the dropped entries held (a title, archive, pin,
//     labels, metadata, a fork origin) is restored by entries appended
//     after the last one, numbered on from it and stamped with the
//     session's Updated time: at most one title, one meta and one fork
//     entry. LastSeq grows by their number; Updated does not change,
//     since none of them is activity.
//
// The session's view (items and their refs) is unchanged. A log without a
// compaction entry, or whose latest is already the first entry, has
// nothing to purge: PurgeLog returns nil and 0.
func PurgeLog(key recall.Key, entries []recall.Entry) ([]recall.Entry, int, error) {
	at := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind != recall.KindCompaction {
			continue
		}
		var c recall.Compaction
		if json.Unmarshal(entries[i].Data, &c) == nil {
			at = i
			break
		}
	}
	if at <= 0 {
		return nil, 0, nil
	}
	comp := entries[at].Clone()
	var payload recall.Compaction
	_ = json.Unmarshal(comp.Data, &payload) // decoded above
	payload.Created = entries[0].Time
	if c, ok := firstCreated(entries); ok {
		payload.Created = c // a log purged before keeps its first Created
	}
	comp.Data, _ = json.Marshal(payload)
	var dropped recall.Usage
	for _, e := range entries[:at] {
		if e.Usage != nil {
			dropped.Add(*e.Usage)
		}
	}
	if !dropped.IsZero() {
		u := dropped
		if comp.Usage != nil {
			u.Add(*comp.Usage)
		}
		comp.Usage = &u
	}
	out := make([]recall.Entry, 0, len(entries)-at+3)
	out = append(out, comp)
	for _, e := range entries[at+1:] {
		out = append(out, e.Clone())
	}

	want, wantLive := recall.Replay(key, entries)
	got, _ := recall.Replay(key, out)
	last := entries[len(entries)-1]
	restore := func(e recall.Entry) {
		e.Seq = last.Seq + 1 + int64(len(out)-(len(entries)-at))
		e.Time = want.Updated
		out = append(out, e)
	}
	if got.Title != want.Title || got.TitleSource != want.TitleSource {
		src := want.TitleSource
		if want.Title == "" || src == recall.TitleNone {
			src = recall.TitleUser // an empty user title clears any title
		}
		restore(recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: want.Title, Source: src}))
	}
	var mc recall.MetaChange
	if got.Archived != want.Archived {
		mc.Archived = &want.Archived
	}
	if got.Pinned != want.Pinned {
		mc.Pinned = &want.Pinned
	}
	if !slices.Equal(got.Labels, want.Labels) {
		mc.Labels, mc.SetLabels = slices.Clone(want.Labels), true
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		mc.ClearMetadata, mc.Metadata = true, metadataPointers(want.Metadata)
	}
	if mc.Archived != nil || mc.Pinned != nil || mc.SetLabels || mc.ClearMetadata {
		restore(recall.NewEntry(recall.KindMeta, mc))
	}
	if !got.Trashed.Equal(want.Trashed) {
		// at the time it was trashed, which Meta.Trashed is
		trashed := !want.Trashed.IsZero()
		restore(recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &trashed}))
		if trashed {
			out[len(out)-1].Time = want.Trashed
		}
	}
	if want.ForkedFrom != nil && (got.ForkedFrom == nil || *got.ForkedFrom != *want.ForkedFrom) {
		restore(recall.NewEntry(recall.KindFork, *want.ForkedFrom))
	}

	// The purge must change nothing a reader sees but the dropped entries
	// (and LastSeq, by the entries restored). Checked here rather than
	// trusted, since a store writes the result over the only copy.
	got, gotLive := recall.Replay(key, out)
	got.LastSeq = want.LastSeq
	if err := sameMeta(want, got); err != nil {
		return nil, 0, fmt.Errorf("recall: purge %s: %w", key, err)
	}
	if !slices.EqualFunc(wantLive, gotLive, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
		return nil, 0, fmt.Errorf("recall: purge %s: the purged log's view differs", key)
	}
	return out, at, nil
}

// firstCreated returns the Created a purged log's first entry records.
func firstCreated(entries []recall.Entry) (time.Time, bool) {
	if len(entries) == 0 || entries[0].Kind != recall.KindCompaction {
		return time.Time{}, false
	}
	var c recall.Compaction
	if json.Unmarshal(entries[0].Data, &c) != nil || c.Created.IsZero() {
		return time.Time{}, false
	}
	return c.Created, true
}

// sameMeta reports how two Metas derived from logs differ, or nil.
func sameMeta(want, got recall.Meta) error {
	if a, b := metaKey(want), metaKey(got); a != b {
		return errors.New("the purged log's metadata " + b + " differs from " + a)
	}
	return nil
}

// metadataPointers returns md as a MetaChange's Metadata map.
func metadataPointers(md map[string]string) map[string]*string {
	out := make(map[string]*string, len(md))
	for k, v := range md {
		out[k] = &v
	}
	return out
}
