package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// CompactionAware is an optional ability of a Session: it can replace the
// older part of its history by something shorter (a summary), so that a
// long conversation still fits the model's context. The result is written
// as a compaction entry: the entries it replaces stay in the log, so
// exports and `recall show --full` still see them, while GetItems returns
// the compacted view. compact.Session is the implementation recall ships.
//
// Callers find it by type assertion, the way database/sql/driver finds
// its optional interfaces:
//
//	if ca, ok := sess.(recall.CompactionAware); ok {
//		res, err := ca.RunCompaction(ctx, recall.CompactionArgs{KeepLast: 10})
//	}
//
// If a Session does not implement CompactionAware, nothing compacts it:
// agent.Run sends the whole history (bounded by RunOptions.HistoryLimit
// only), and `recall compact` fails with ErrUnsupported.
type CompactionAware interface {
	// RunCompaction compacts the session now, or does nothing and reports
	// Compacted false when the view is under the trigger (see
	// CompactionArgs) or holds nothing older than the items kept.
	//
	// It must never lose an item appended while it works: it writes its
	// compaction entry with Through set to the LastSeq it read, so the
	// store refuses the entry (ErrConflict) after any concurrent append,
	// and it then reads the log again and retries a bounded number of
	// times. An error that wraps ErrConflict means it gave up.
	RunCompaction(ctx context.Context, args CompactionArgs) (CompactionResult, error)
}

// CompactionArgs say how RunCompaction compacts. The zero value compacts
// with the implementation's defaults when its own policy says so.
type CompactionArgs struct {
	// Force compacts even when the view is under the trigger, as a person
	// asking for it (/compact, `recall compact`) means. Default: false.
	Force bool
	// KeepLast is the least number of newest items kept verbatim after
	// the summary. More are kept when the cut would separate a
	// function_call from its output or a reasoning item from the item that
	// follows it. Default (0): the implementation's (compact.DefaultKeepLast).
	// Negative: keep none beyond what those rules require.
	KeepLast int
	// TriggerTokens, when positive and Force is false, compacts only when
	// the view's EstimateTokens exceeds it. It is checked against the view
	// as read, again at every retry, so two callers racing to compact the
	// same session compact it once. Default (0): the implementation's own
	// policy decides.
	TriggerTokens int
	// Instructions is extra guidance for the summary ("keep every API
	// decision"). Compactors that take none ignore it. Default: none.
	Instructions string
}

// CompactionResult reports what RunCompaction did.
type CompactionResult struct {
	// Compacted is false when nothing was written.
	Compacted bool `json:"compacted"`
	// Seq is the compaction entry's seq, or 0.
	Seq int64 `json:"seq,omitempty"`
	// Before and After count the items of the view before and after.
	Before int `json:"before"`
	After  int `json:"after"`
	// Summarized counts the older items replaced; Kept the newest items
	// kept verbatim.
	Summarized int `json:"summarized"`
	Kept       int `json:"kept"`
	// TokensBefore and TokensAfter are EstimateTokens of the view before
	// and after.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Strategy names the compactor that ran ("summary", "openai").
	Strategy string `json:"strategy,omitempty"`
	// Retries counts the times the compaction entry lost a race with a
	// concurrent write and was planned again.
	Retries int `json:"retries,omitempty"`
	// Usage is the token usage of the model calls the compaction made. It
	// is also recorded on the compaction entry, so Meta.Usage counts it.
	Usage Usage `json:"usage"`
	// NoGain is true when a compaction was made but not written because
	// its view would not have had fewer estimated tokens than
	// TokensBefore: compaction only shrinks. TokensAfter is then
	// TokensBefore, and TokensWouldBe what the compacted view would have
	// taken.
	NoGain        bool `json:"no_gain"`
	TokensWouldBe int  `json:"tokens_would_be,omitempty"`
}

// EstimateTokens estimates the tokens items take in a model's context: one
// token per 4 bytes of their JSON, rounded up. It is the rule of thumb
// OpenAI gives for English text; it needs no tokenizer and is the same for
// every model, which is what a compaction trigger needs. It over-counts
// JSON-heavy items (tool calls, their structure) and under-counts text in
// scripts with multi-byte characters (a CJK character is 3 bytes and often
// a token of its own), so leave a margin below the model's real limit.
func EstimateTokens(items ...Item) int {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return (n + 3) / 4
}

// Purger is an optional ability of a Store: it physically removes the
// entries before a session's latest compaction entry, which a compaction
// leaves in the log on purpose. It is separate from compaction and
// explicit, since it destroys history that exports could still show.
//
// If a Store does not implement Purger, the entries stay; callers report
// ErrUnsupported (`recall compact --purge` does). The file store and the
// memory store implement it.
type Purger interface {
	// Purge rewrites key's log as PurgeLog describes, atomically: after a
	// crash at any instant the session is exactly as before or exactly as
	// after. A session without a compaction entry, or whose latest one is
	// already its first entry, is left alone (Dropped 0). A session that
	// does not exist is ErrNotFound.
	Purge(ctx context.Context, key Key) (PurgeResult, error)
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
//     (Compaction.Created) and adds the usage recorded on the dropped
//     entries to its own, so Meta.Created and Meta.Usage do not change;
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
func PurgeLog(key Key, entries []Entry) ([]Entry, int, error) {
	at := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind != KindCompaction {
			continue
		}
		var c Compaction
		if json.Unmarshal(entries[i].Data, &c) == nil {
			at = i
			break
		}
	}
	if at <= 0 {
		return nil, 0, nil
	}
	comp := entries[at].Clone()
	var payload Compaction
	_ = json.Unmarshal(comp.Data, &payload) // decoded above
	payload.Created = entries[0].Time
	if c, ok := firstCreated(entries); ok {
		payload.Created = c // a log purged before keeps its first Created
	}
	comp.Data, _ = json.Marshal(payload)
	var dropped Usage
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
	out := make([]Entry, 0, len(entries)-at+3)
	out = append(out, comp)
	for _, e := range entries[at+1:] {
		out = append(out, e.Clone())
	}

	want, wantLive := Replay(key, entries)
	got, _ := Replay(key, out)
	last := entries[len(entries)-1]
	restore := func(e Entry) {
		e.Seq = last.Seq + 1 + int64(len(out)-(len(entries)-at))
		e.Time = want.Updated
		out = append(out, e)
	}
	if got.Title != want.Title || got.TitleSource != want.TitleSource {
		src := want.TitleSource
		if want.Title == "" || src == TitleNone {
			src = TitleUser // an empty user title clears any title
		}
		restore(NewEntry(KindTitle, TitleChange{Title: want.Title, Source: src}))
	}
	var mc MetaChange
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
		mc.ClearMetadata, mc.Metadata = true, pointers(want.Metadata)
	}
	if mc.Archived != nil || mc.Pinned != nil || mc.SetLabels || mc.ClearMetadata {
		restore(NewEntry(KindMeta, mc))
	}
	if want.ForkedFrom != nil && (got.ForkedFrom == nil || *got.ForkedFrom != *want.ForkedFrom) {
		restore(NewEntry(KindFork, *want.ForkedFrom))
	}

	// The purge must change nothing a reader sees but the dropped entries
	// (and LastSeq, by the entries restored). Checked here rather than
	// trusted, since a store writes the result over the only copy.
	got, gotLive := Replay(key, out)
	got.LastSeq = want.LastSeq
	if err := sameMeta(want, got); err != nil {
		return nil, 0, fmt.Errorf("recall: purge %s: %w", key, err)
	}
	if !slices.EqualFunc(wantLive, gotLive, func(a, b LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
		return nil, 0, fmt.Errorf("recall: purge %s: the purged log's view differs", key)
	}
	return out, at, nil
}

// firstCreated returns the Created a purged log's first entry records.
func firstCreated(entries []Entry) (time.Time, bool) {
	if len(entries) == 0 || entries[0].Kind != KindCompaction {
		return time.Time{}, false
	}
	var c Compaction
	if json.Unmarshal(entries[0].Data, &c) != nil || c.Created.IsZero() {
		return time.Time{}, false
	}
	return c.Created, true
}

// sameMeta reports how two Metas derived from logs differ, or nil.
func sameMeta(want, got Meta) error {
	if a, b := metaKey(want), metaKey(got); a != b {
		return errors.New("the purged log's metadata " + b + " differs from " + a)
	}
	return nil
}
