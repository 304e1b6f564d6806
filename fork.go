package recall

import (
	"fmt"
	"time"
)

// ForkLog builds the log of a fork of src, whose whole log is entries,
// taken after entry atSeq (the whole log when atSeq <= 0): a fork entry
// naming src and the seq, then one item entry per item of the view at that
// point, numbered from 1 and stamped now. Stores write it as the new
// session's log in one atomic step. An atSeq past the end is ErrNotFound.
func ForkLog(src Key, entries []Entry, atSeq int64, now time.Time) ([]Entry, error) {
	last := int64(0)
	if n := len(entries); n > 0 {
		last = entries[n-1].Seq
	}
	if atSeq <= 0 {
		atSeq = last
	}
	if atSeq > last {
		return nil, fmt.Errorf("%w: fork %s at seq %d: the log ends at %d", ErrNotFound, src, atSeq, last)
	}
	cut := len(entries)
	for i, e := range entries {
		if e.Seq > atSeq {
			cut = i
			break
		}
	}
	_, live := Replay(src, entries[:cut])
	out := make([]Entry, 0, len(live)+1)
	out = append(out, NewEntry(KindFork, ForkOrigin{Key: src, Seq: atSeq}))
	for _, l := range live {
		out = append(out, ItemEntry(l.Item.Clone()))
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
		out[i].Time = now
	}
	return out, nil
}
