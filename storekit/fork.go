package storekit

import (
	"fmt"
	"sort"
	"time"

	"github.com/recallkit/recall"
)

// ForkLog builds the whole log of a fork of src, for a store that
// implements Forker and writes the fork in one step of its own (a
// file linked into place, one transaction): a fork entry naming src and
// the seq, then one item entry per item of the view after entry atSeq
// (the whole log when atSeq <= 0), numbered from 1 and stamped now. The
// items come from the store's own log, which it validated when it was
// written; a store that cannot vouch for that validates them
// (recall.ValidateItems). An atSeq past the end is recall.ErrNotFound.
func ForkLog(src recall.Key, entries []recall.Entry, atSeq int64, now time.Time) ([]recall.Entry, error) {
	last := int64(0)
	if len(entries) > 0 {
		last = entries[len(entries)-1].Seq
	}
	if atSeq <= 0 {
		atSeq = last
	} else if atSeq > last {
		return nil, fmt.Errorf("%w: %s at seq %d: the log ends at %d", recall.ErrNotFound, src, atSeq, last)
	}
	_, live := recall.Replay(src, entries[:sort.Search(len(entries), func(i int) bool { return entries[i].Seq > atSeq })])
	out := make([]recall.Entry, 0, len(live)+1)
	out = append(out, recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: src, Seq: atSeq}))
	for _, l := range live {
		out = append(out, l.Item.Entry())
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
		out[i].Time = now
	}
	return out, nil
}
