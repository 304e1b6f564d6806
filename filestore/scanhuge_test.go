package filestore

import (
	"context"
	"io"
	"testing"
)

// flatReader is a file of size bytes, all 'x' but the last, a newline,
// that counts its reads. It holds no bytes itself.
type flatReader struct {
	size  int64
	reads int
}

func (r *flatReader) ReadAt(p []byte, off int64) (int, error) {
	r.reads++
	if off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off+int64(n) < r.size {
		p[n] = 'x'
		n++
	}
	if off+int64(n) == r.size && n > 0 {
		p[n-1] = '\n'
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestReverseLinesHugeLine reads one 32 MiB line backwards (a large item
// is one line) and counts the reads: the block keeps doubling while the
// line is longer than it, so reaching the line's start takes a number of
// reads logarithmic in its length. With the block capped at 1 MiB it took
// one read (and one copy of everything read so far) per MiB: quadratic,
// seconds for a 50 MiB item.
func TestReverseLinesHugeLine(t *testing.T) {
	const size = 32 << 20
	r := &flatReader{size: size}
	rl := newReverseLines(context.Background(), r, size, firstBlock)
	if seg, terminated, ok, err := rl.prev(); err != nil || !ok || terminated || len(seg) != 0 {
		t.Fatalf("the final segment = %d bytes, %t, %t, %v; want an empty one", len(seg), terminated, ok, err)
	}
	line, terminated, ok, err := rl.prev()
	if err != nil || !ok || !terminated || len(line) != size-1 {
		t.Fatalf("prev = %d bytes, %t, %t, %v; want the whole line", len(line), terminated, ok, err)
	}
	if r.reads > 16 {
		t.Errorf("%d reads to reach the start of a 32 MiB line; want at most 16 (log2 of 32 MiB / 16 KiB is 11)", r.reads)
	}
	if _, _, ok, _ := rl.prev(); ok {
		t.Errorf("a line before the first one")
	}
}
