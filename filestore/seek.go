package filestore

import (
	"bytes"
	"context"
	"io"
)

// Seqs grow with the offset along a log: a writer gives each entry the
// next seq under the log's lock and appends it, and a torn tail is moved
// aside before the next batch. So the line of a seq can be found by a
// search over the file's bytes, a few small reads, instead of a scan.

// lineProbe is what a probe of seekSeq found: the first line at or after
// the offset probed that decodes, the line just after it, and its seq.
type lineProbe struct {
	start, next int64 // the line's offset and the offset just past its '\n'
	seq         int64
	found       bool // false: no line from the offset probed to the end decodes
}

// seeker searches the lines of r[0:size) by seq.
type seeker struct {
	ctx  context.Context
	r    io.ReaderAt
	size int64
	// block is the size of a probe's first read: a couple of lines, so
	// that a probe usually costs one read. Longer lines cost more reads.
	block int
	last  int64 // the seq of the newest committed entry, when known
	reads int   // probes made, for the tests
}

// newSeeker returns a seeker of r[0:size), whose newest committed entry
// has the seq last (0 when not known), sizing its reads by the lines'
// average length.
func newSeeker(ctx context.Context, r io.ReaderAt, size, last int64) *seeker {
	block := 4 << 10
	if last > 0 {
		block = int(min(max(2*(size/last+1), 256), 64<<10))
	}
	return &seeker{ctx: ctx, r: r, size: size, block: block, last: last}
}

// seek returns the offset of the first line that decodes and whose seq is
// at least seq, or size when there is none. Lines that do not decode (a
// damaged line, a torn one) are stepped over: a probe looks at the next
// line that decodes.
//
// It narrows a window [lo, hi) of offsets: every line that decodes before
// lo has a seq below seq, and the first one at or after hi (if any) has
// one at or above it. Each probe aims where the seq should be if the lines
// between were of equal length (interpolation), or at the middle when the
// last aim did not halve the window, so a session of n lines costs a few
// probes and never more than about 2·log₂(size). A line of seq itself
// ends the search: no two lines hold the same seq.
func (k *seeker) seek(seq int64) (int64, error) {
	lo, hi := int64(0), k.size
	// The seqs of the lines that bound the window, for the aim: the line
	// before lo, and the one at hi (the end: one past the newest entry).
	loSeq, hiSeq := int64(0), k.last+1
	best := k.size // the offset of the first line that decodes at or after hi
	halved := true
	for lo < hi {
		if err := k.ctx.Err(); err != nil {
			return 0, err
		}
		mid := lo + (hi-lo)/2
		if halved && k.last > 0 && hiSeq > loSeq {
			// Aim half a line before where the line of seq would start
			// (in floating point: the product may not fit an int64).
			lines := float64(hiSeq - loSeq)
			line := float64(hi-lo) / lines
			est := float64(lo) + line*float64(min(seq, hiSeq)-loSeq-1) - line/2
			mid = min(max(int64(est), lo), hi-1)
		}
		p, err := k.probe(mid)
		if err != nil {
			return 0, err
		}
		if p.found && p.seq == seq {
			return p.start, nil // seqs are unique: no line before it has seq
		}
		window := hi - lo
		if !p.found || p.seq >= seq {
			hi = mid
			if p.found {
				best, hiSeq = p.start, p.seq
			}
		} else {
			// No line between mid and p.start decodes, and p is below
			// seq: the answer starts at or after the next line.
			lo, loSeq = p.next, p.seq
		}
		halved = hi-lo <= window/2
	}
	return best, nil
}

// probe returns the first line that decodes starting at or after off.
func (k *seeker) probe(off int64) (lineProbe, error) {
	k.reads++
	from := max(off-1, 0) // the byte before off says whether a line starts at off
	var buf []byte
	read := from
	need := k.block
	start := int64(-1)
	if off == 0 {
		start = 0
	}
	for {
		// Look at the lines read so far.
		for {
			if start < 0 {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				start = from + int64(i) + 1
			}
			rest := buf[start-from:]
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				if read < k.size {
					break // the line goes on past what was read
				}
				// The bytes after the last '\n': a line only if it decodes.
				if e, _, err := decodeLine(rest); err == nil && len(bytes.TrimSpace(rest)) > 0 {
					return lineProbe{start: start, next: k.size, seq: e.Seq, found: true}, nil
				}
				return lineProbe{}, nil
			}
			if e, _, err := decodeLine(rest[:i]); err == nil {
				return lineProbe{start: start, next: start + int64(i) + 1, seq: e.Seq, found: true}, nil
			}
			start += int64(i) + 1 // a damaged or blank line: the next one
		}
		if read >= k.size {
			return lineProbe{}, nil
		}
		if err := k.ctx.Err(); err != nil {
			return lineProbe{}, err
		}
		n := min(int64(need), k.size-read)
		at := len(buf)
		buf = append(buf, make([]byte, n)...)
		m, err := k.r.ReadAt(buf[at:], read)
		if err != nil && !(err == io.EOF && int64(m) == n) {
			return lineProbe{}, err // io.EOF: the log shrank under the read (see retryShrunk)
		}
		read += n
		need *= 2 // a long line costs O(its length), not O(length²)
	}
}
