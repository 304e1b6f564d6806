package storekit

import (
	"time"

	"github.com/recallkit/recall"
)

// ForkLog builds the whole log of a fork of src, for a store that
// implements Forker and writes the fork in one step of its own (a
// file linked into place, one transaction): a fork entry naming src and
// the seq, then one item entry per item of the view after entry atSeq
// (see recall.ViewAt), numbered from 1 and stamped now. The items come
// from the store's own log, which it validated when it was written; a
// store that cannot vouch for that validates them (recall.ValidateItems).
// An atSeq past the end is recall.ErrNotFound.
func ForkLog(src recall.Key, entries []recall.Entry, atSeq int64, now time.Time) ([]recall.Entry, error) {
	live, at, err := recall.ViewAt(src, entries, atSeq)
	if err != nil {
		return nil, err
	}
	out := make([]recall.Entry, 0, len(live)+1)
	out = append(out, recall.NewEntry(recall.KindFork, recall.ForkOrigin{Key: src, Seq: at}))
	for _, l := range live {
		out = append(out, l.Item.Entry())
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
		out[i].Time = now
	}
	return out, nil
}
