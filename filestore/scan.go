package filestore

import (
	"bytes"
	"context"
	"io"
	"iter"

	"github.com/recallkit/recall"
)

// A log is read by these rules, forwards (scanner) and backwards
// (backward), and both must agree:
//
//   - A line ends with '\n'. A blank line is ignored.
//   - A line that does not decode is skipped and counted as corrupt. It is
//     left in the file forever.
//   - A line marked "more" waits for the rest of its batch: it belongs to
//     the log once a later line without the mark (or a corrupt line)
//     closes the batch. A batch still open at the end of the file was cut
//     by a crash, or is being written right now: it is not part of the log.
//   - The bytes after the last newline are a torn line unless they decode
//     as a complete closing entry (only the newline was lost).
//
// The committed end of a log is the offset just past its last complete
// batch. Everything after it is the torn tail that the next writer moves
// into a side file.
//
// Both readers look at their context as they go (every chunk or block
// read, every scanCheck bytes scanned), so a read of a huge log can be
// cancelled.

// scanCheck is how many bytes a scan of bytes already in memory covers
// between two looks at its context.
const scanCheck = 1 << 20

// scanner reads a log forwards and reports its committed entries.
type scanner struct {
	emit func(recall.Entry) // called for each committed entry, in file order
	// at, when set, is called just before emit with the offset of the
	// entry's line in the file and the line's length (without its '\n'),
	// so an entry can be read again on its own (the search index does).
	at func(pos, n int64)
	// stable means the bytes given to line stay untouched, so entries may
	// alias them; otherwise entries held for an open batch are copied.
	stable bool
	// done, when set, stops scanFile early once it returns true.
	done func() bool
	// chunk is scanFile's read size; 0 means 256 KiB.
	chunk int
	// lastSeq, when set, is the seq of the newest committed entry of the
	// bytes scanned, known to the caller: an entry up to it is emitted at
	// once, without waiting for the rest of its batch, which is there.
	lastSeq int64

	pending      []recall.Entry
	pendingAt    []int64 // line offset and length of each pending entry, when at is set
	corrupt      int
	end          int64 // committed end
	unterminated bool  // the committed log ends with a line missing its '\n'
}

// line handles a complete line (without '\n') that ends at offset next.
func (s *scanner) line(l []byte, next int64) {
	if len(bytes.TrimSpace(l)) == 0 {
		if len(s.pending) == 0 {
			s.end = next
		}
		return
	}
	e, more, err := decodeLine(l)
	switch {
	case err != nil:
		s.corrupt++
		s.commit()
	case more && (s.lastSeq == 0 || e.Seq > s.lastSeq):
		if !s.stable {
			e = e.Clone()
		}
		s.pending = append(s.pending, e)
		if s.at != nil {
			s.pendingAt = append(s.pendingAt, next-int64(len(l))-1, int64(len(l)))
		}
		return
	default:
		s.commit()
		if s.at != nil {
			s.at(next-int64(len(l))-1, int64(len(l)))
		}
		s.emit(e)
	}
	s.end = next
}

func (s *scanner) commit() {
	for i, e := range s.pending {
		if s.at != nil {
			s.at(s.pendingAt[2*i], s.pendingAt[2*i+1])
		}
		s.emit(e)
	}
	s.pending = s.pending[:0]
	s.pendingAt = s.pendingAt[:0]
}

// finish handles the bytes after the last newline, which end at offset size.
func (s *scanner) finish(tail []byte, size int64) {
	if len(bytes.TrimSpace(tail)) == 0 {
		return
	}
	if e, more, err := decodeLine(tail); err == nil && !more {
		s.commit()
		if s.at != nil {
			s.at(size-int64(len(tail)), int64(len(tail)))
		}
		s.emit(e)
		s.end = size
		s.unterminated = true
	}
}

// scanBytes runs s over data, the whole log from offset base to its end.
// It stops with ctx's error when ctx ends.
func (s *scanner) scanBytes(ctx context.Context, data []byte, base int64) error {
	off, check := 0, scanCheck
	for {
		if off >= check {
			if err := ctx.Err(); err != nil {
				return err
			}
			check = off + scanCheck
		}
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		s.line(data[off:off+i], base+int64(off+i+1))
		off += i + 1
	}
	s.finish(data[off:], base+int64(len(data)))
	return nil
}

// scanFile runs s over r from offset from to size, reading in chunks so a
// long log is never held in memory at once. It stops with ctx's error when
// ctx ends.
func (s *scanner) scanFile(ctx context.Context, r io.ReaderAt, from, size int64) error {
	s.end = from
	chunk := s.chunk
	if chunk <= 0 {
		// a small log is read in one piece of its size
		chunk = int(min(256<<10, max(size-from, 512)))
	}
	buf := make([]byte, 0, chunk)
	pos := from // file offset of buf[0]
	for read := from; read < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if free := cap(buf) - len(buf); free == 0 || free < chunk/4 {
			nb := make([]byte, len(buf), max(2*cap(buf), chunk))
			copy(nb, buf)
			buf = nb
		}
		n := min(int64(cap(buf)-len(buf)), size-read)
		m, err := r.ReadAt(buf[len(buf):len(buf)+int(n)], read)
		if err != nil && !(err == io.EOF && int64(m) == n) {
			if err == io.EOF {
				size = read + int64(m) // the file shrank under us
			} else {
				return err
			}
		}
		buf = buf[:len(buf)+m]
		read += int64(m)
		off := 0
		for {
			i := bytes.IndexByte(buf[off:], '\n')
			if i < 0 {
				break
			}
			s.line(buf[off:off+i], pos+int64(off+i+1))
			off += i + 1
			if s.done != nil && s.done() {
				return nil
			}
		}
		rest := copy(buf, buf[off:])
		buf = buf[:rest]
		pos += int64(off)
		if m == 0 {
			break
		}
	}
	s.finish(buf, pos+int64(len(buf)))
	return nil
}

// reverseLines yields the lines of r[0:size) from the last to the first,
// reading blocks from the end, so reading the newest lines costs what they
// weigh, not what the log weighs. The final segment (after the last '\n')
// comes first with terminated false; the lines yielded stay valid after
// the iteration (blocks are never reused).
type reverseLines struct {
	ctx   context.Context // checked before each block is read
	r     io.ReaderAt
	lo    int64  // file offset of buf[0]
	buf   []byte // file bytes [lo, lo+len(buf)) not yet yielded
	block int
	tail  bool // the final segment is still to come
}

// firstBlock is the size of the first read from the end: enough for the
// newest few dozen items of a typical session. Later reads double it.
const firstBlock = 16 << 10

func newReverseLines(ctx context.Context, r io.ReaderAt, size int64, block int) *reverseLines {
	return &reverseLines{ctx: ctx, r: r, lo: size, block: block, tail: true}
}

// extend reads the block before lo in front of buf.
func (rl *reverseLines) extend() error {
	if err := rl.ctx.Err(); err != nil {
		return err
	}
	n := min(int64(rl.block), rl.lo)
	nb := make([]byte, int(n)+len(rl.buf))
	if _, err := rl.r.ReadAt(nb[:n], rl.lo-n); err != nil {
		return err
	}
	copy(nb[n:], rl.buf)
	rl.buf, rl.lo = nb, rl.lo-n
	// Double the block up to 1 MiB, and on while the line being looked
	// for is longer than the block: every extend copies the bytes pending,
	// so a fixed block would make a line of n bytes cost O(n²) to reach
	// (seconds for a 50 MiB item); doubling keeps it O(n).
	if rl.block < 1<<20 || rl.block < len(rl.buf) {
		rl.block *= 2
	}
	return nil
}

// prev returns the previous line; ok is false at the start of the file.
func (rl *reverseLines) prev() (line []byte, terminated, ok bool, err error) {
	if rl.tail {
		// The final segment runs from the last '\n' to the end.
		for {
			if i := bytes.LastIndexByte(rl.buf, '\n'); i >= 0 || rl.lo == 0 {
				rl.tail = false
				seg := rl.buf[i+1:]
				rl.buf = rl.buf[:i+1]
				return seg, false, true, nil
			}
			if err := rl.extend(); err != nil {
				return nil, false, false, err
			}
		}
	}
	for len(rl.buf) > 0 || rl.lo > 0 {
		body := rl.buf[:max(len(rl.buf)-1, 0)] // without the line's '\n'
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 || rl.lo == 0 {
			line = body[i+1:]
			rl.buf = rl.buf[:i+1]
			return line, true, true, nil
		}
		if err := rl.extend(); err != nil {
			return nil, false, false, err
		}
	}
	return nil, false, false, nil
}

// backward yields the committed entries of r[0:size), newest first, by the
// rules above; it is what storekit.Tail reads. It yields ctx's error when
// ctx ends.
func backward(ctx context.Context, r io.ReaderAt, size int64) iter.Seq2[recall.Entry, error] {
	return backwardBlocks(ctx, r, size, firstBlock, nil)
}

// maxTailBlock caps the first read tailBlock sizes: past it, reads double
// as for any backward read.
const maxTailBlock = 1 << 20

// tailBlock sizes the first backward read of a tail of limit items of a
// log of size bytes whose last seq is lastSeq (0 when unknown): the log's
// average line times limit+1 (the lines are mostly items; one more covers
// the torn or unfinished end), rounded up to 4 KiB, within [firstBlock,
// maxTailBlock]. A guess that falls short only costs more reads.
func tailBlock(size, lastSeq int64, limit int) int {
	if size <= 0 || lastSeq <= 0 || limit <= 0 {
		return firstBlock
	}
	avg := size/lastSeq + 1
	if int64(limit) >= maxTailBlock/avg {
		return maxTailBlock
	}
	n := (avg*int64(limit+1) + 4<<10 - 1) &^ (4<<10 - 1)
	return int(min(max(n, firstBlock), maxTailBlock))
}

// backwardBlocks is backward with a first read of block bytes. When
// newest is not nil, it is set to the seq of the first entry yielded: the
// newest committed entry of r[0:size), the log's LastSeq at size (seqs
// grow along the log).
func backwardBlocks(ctx context.Context, r io.ReaderAt, size int64, block int, newest *int64) iter.Seq2[recall.Entry, error] {
	return backwardLines(ctx, r, size, block, newest, false)
}

// backwardFrom yields the entries of the lines before off, newest first,
// reading blocks of block bytes and more. off must be the start of a line
// at or before the committed end of the log (as seekSeq finds one): every
// line before it then belongs to the log, and a batch that off cuts in two
// is committed, not open.
func backwardFrom(ctx context.Context, r io.ReaderAt, off int64, block int) iter.Seq2[recall.Entry, error] {
	return backwardLines(ctx, r, off, block, nil, true)
}

func backwardLines(ctx context.Context, r io.ReaderAt, size int64, block int, newest *int64, committed bool) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		rl := newReverseLines(ctx, r, size, block)
		skipping := !committed // still inside the torn tail or an open batch
		for {
			l, terminated, ok, err := rl.prev()
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			if !ok {
				return
			}
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			e, more, err := decodeLine(l)
			switch {
			case !terminated && (err != nil || more):
				continue // the final segment is torn unless it is a complete closing entry
			case err != nil:
				skipping = false // a corrupt line closes a batch
				continue
			case skipping && more:
				continue
			}
			skipping = false
			if newest != nil {
				*newest, newest = e.Seq, nil
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}
