package filestore

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/recallkit/recall"
)

// A page of a view (ReadItems) needs the view's control entries: its last
// clear or compaction and the pops and removes after it. Finding them in
// the log means reading it back to that clear or compaction, all of a
// session that never had one. So the record of a log keeps where their
// lines are, up to maxControls of them; a page reads just those lines.
// The record is derived by the scanner that derives its Meta (derive,
// readAll) and brought along by the writer as it appends (writer.write),
// and a record's stat is compared with the log's before it is believed,
// as for its Meta: what it says of the lines below its committed end
// stays true while the log is the same file, since those bytes never
// change.

// maxControls is the most control lines a record keeps. A view with more
// pops and removes since its last clear or compaction is read backwards
// from the end, until a later clear or compaction brings the count back.
const maxControls = 64

// ctlLine is the place of a control entry's line in a log: its offset and
// its length without the '\n'.
type ctlLine struct{ off, n int64 }

// controlLines are the control lines of a log's view, oldest first: the
// last clear or usable compaction, if any, then the pops and removes
// after it (those that name no item too: storekit.ReadPage skips them).
// The lines are shared by the records that hold them and never written
// to: see returns a new value.
type controlLines struct {
	known bool // false: more than maxControls, or not derived
	lines []ctlLine
}

// noControls is the controlLines of a log without entries.
func noControls() controlLines { return controlLines{known: true} }

// see returns c after the entry e, whose line starts at off and is n bytes
// long. It tells a usable compaction as storekit.ReadPage does: by its
// data decoding as a recall.Compaction.
func (c controlLines) see(e recall.Entry, off, n int64) controlLines {
	switch e.Kind {
	case recall.KindClear:
	case recall.KindCompaction:
		var comp recall.Compaction
		if json.Unmarshal(e.Data, &comp) != nil {
			return c // skipped by the view
		}
	case recall.KindPop, recall.KindRemove:
		if !c.known || len(c.lines) >= maxControls {
			return controlLines{}
		}
		return controlLines{known: true, lines: append(slices.Clip(c.lines), ctlLine{off, n})}
	default:
		return c
	}
	return controlLines{known: true, lines: []ctlLine{{off, n}}} // the view starts here
}

// isControl reports whether an entry of kind k is one controlLines keep.
func isControl(k recall.Kind) bool {
	switch k {
	case recall.KindClear, recall.KindCompaction, recall.KindPop, recall.KindRemove:
		return true
	}
	return false
}

// appendControls encodes c as one field of a journal line: "?" when not
// known, "-" for none, else "<off>:<n>" for each line, comma separated.
func appendControls(buf []byte, c controlLines) []byte {
	if !c.known {
		return append(buf, '?')
	}
	if len(c.lines) == 0 {
		return append(buf, '-')
	}
	for i, l := range c.lines {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, l.off, 10)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, l.n, 10)
	}
	return buf
}

// parseControls decodes a field appendControls wrote; ok is false for one
// it cannot have written.
func parseControls(b []byte) (c controlLines, ok bool) {
	switch string(b) {
	case "?":
		return controlLines{}, true
	case "-":
		return noControls(), true
	}
	c.known = true
	prev := int64(-1)
	for f := range bytes.SplitSeq(b, []byte{','}) {
		o, n, found := bytes.Cut(f, []byte{':'})
		off, ok1 := atoi(o)
		size, ok2 := atoi(n)
		if !found || !ok1 || !ok2 || off <= prev || size <= 0 || len(c.lines) == maxControls {
			return controlLines{}, false
		}
		c.lines = append(c.lines, ctlLine{off, size})
		prev = off
	}
	return c, true
}
