package storekit

import (
	"encoding/json"
	"fmt"

	"github.com/recallkit/recall"
)

// ImportPlan returns the entries of an Import that are new to a session
// whose LastSeq is last: it drops those at or below last (replays are
// idempotent) and checks that the rest continue the log without a gap and
// carry a time. The error wraps recall.ErrConflict.
//
// A new session (last 0) starts at seq 1, or at a compaction entry that
// read the log just before it (Through = Seq-1): that is how a log left by
// a purge starts (see PurgeLog), so a purged session can be copied to a
// store that never held it.
func ImportPlan(last int64, entries []recall.Entry) ([]recall.Entry, error) {
	var fresh []recall.Entry
	for _, e := range entries {
		if e.Seq <= last {
			continue
		}
		want := last + 1
		if n := len(fresh); n > 0 {
			want = fresh[n-1].Seq + 1
		} else if last == 0 && e.Seq > 1 && purgedStart(e) {
			want = e.Seq
		}
		if e.Seq != want {
			return nil, fmt.Errorf("%w: import of seq %d, expected %d", recall.ErrConflict, e.Seq, want)
		}
		if e.Time.IsZero() {
			return nil, fmt.Errorf("%w: imported seq %d has no time", recall.ErrConflict, e.Seq)
		}
		fresh = append(fresh, e)
	}
	return fresh, nil
}

// purgedStart reports whether e can start a purged log: a compaction
// entry whose payload decodes and that read the log at the seq before its
// own.
func purgedStart(e recall.Entry) bool {
	if e.Kind != recall.KindCompaction {
		return false
	}
	var c recall.Compaction
	return json.Unmarshal(e.Data, &c) == nil && c.Through == e.Seq-1
}
