package filestore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// damagedLog builds a log of n entries, in batches, with lines of very
// different lengths (some longer than a probe's first read), damaged
// lines, blank lines, and a torn batch at its end. It returns the log and
// its committed entries, as a forward scan reads them.
func damagedLog(t *testing.T, rng *rand.Rand, n int) ([]byte, []recall.Entry) {
	t.Helper()
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var buf []byte
	seq := int64(0)
	for seq < int64(n) {
		batch := min(1+rng.IntN(3), n-int(seq))
		for i := range batch {
			seq++
			size := 10 + rng.IntN(200)
			if rng.IntN(10) == 0 {
				size = 5000 + rng.IntN(20000)
			}
			e := recall.Message("user", strings.Repeat("x", size)).Entry()
			if rng.IntN(8) == 0 {
				e = recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: max(1, seq-1)})
			}
			e.Seq, e.Time = seq, t0.Add(time.Duration(seq)*time.Second)
			var err error
			if buf, err = appendLine(buf, e, i < batch-1); err != nil {
				t.Fatal(err)
			}
		}
		switch rng.IntN(8) {
		case 0:
			buf = append(buf, `{"seq":12,"kind":"item","da`+"\n"...) // a line cut short and written over
		case 1:
			buf = append(buf, "\n  \n"...)
		case 2:
			buf = append(buf, bytes.Repeat([]byte{0xff}, 3000)...) // binary junk
			buf = append(buf, '\n')
		}
	}
	// A batch torn by a crash: a complete line marked "more", and half of
	// the next.
	e := recall.Message("user", "torn").Entry()
	e.Seq, e.Time = seq+1, t0
	buf, _ = appendLine(buf, e, true)
	buf = append(buf, `{"seq":`+fmt.Sprint(seq+2)+`,"kind":"item","data":{"ty`...)

	var committed []recall.Entry
	sc := scanner{stable: true, emit: func(e recall.Entry) { committed = append(committed, e) }}
	if err := sc.scanBytes(context.Background(), buf, 0); err != nil {
		t.Fatal(err)
	}
	if len(committed) != n {
		t.Fatalf("the log holds %d committed entries, want %d", len(committed), n)
	}
	return buf, committed
}

// lineSeqs returns the offset and the seq of each line of log that
// decodes, found line by line.
func lineSeqs(log []byte) (offs, seqs []int64) {
	off := 0
	for off < len(log) {
		end := len(log)
		if i := bytes.IndexByte(log[off:], '\n'); i >= 0 {
			end = off + i
		}
		if e, _, err := decodeLine(log[off:end]); err == nil {
			offs, seqs = append(offs, int64(off)), append(seqs, e.Seq)
		}
		off = end + 1
	}
	return offs, seqs
}

// The search for a seq's line finds the line a line-by-line scan finds,
// for every seq, over logs with damaged, blank, long and torn lines; and
// it takes O(log size) probes whether or not it knows the newest seq.
func TestSeekSeq(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 2, 7, 300} {
		for _, seed := range []uint64{1, 2, 3} {
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			log, committed := damagedLog(t, rng, n)
			r := bytes.NewReader(log)
			bound := 2*bits.Len64(uint64(len(log))) + 4
			offs, lineSeq := lineSeqs(log)
			wantSeek := func(seq int64) int64 {
				for i, s := range lineSeq {
					if s >= seq {
						return offs[i]
					}
				}
				return int64(len(log))
			}
			for _, last := range []int64{0, int64(n)} {
				for seq := int64(0); seq <= int64(n)+3; seq++ {
					k := newSeeker(ctx, r, int64(len(log)), last)
					got, err := k.seek(seq)
					if err != nil {
						t.Fatal(err)
					}
					if want := wantSeek(seq); got != want {
						t.Fatalf("n %d seed %d last %d: seek(%d) = %d, want %d", n, seed, last, seq, got, want)
					}
					if k.reads > bound {
						t.Errorf("n %d seed %d last %d: seek(%d) probed %d times in %d bytes, want at most %d", n, seed, last, seq, k.reads, len(log), bound)
					}
				}
			}
			checkRanges(t, log, committed)
		}
	}
}

// checkRanges checks a snapshot's backward and forward reads from every
// seq against the committed entries.
func checkRanges(t *testing.T, log []byte, committed []recall.Entry) {
	t.Helper()
	ctx := context.Background()
	r := bytes.NewReader(log)
	sn, err := newSnapshot(ctx, r, int64(len(log)), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(committed))
	if sn.last != n {
		t.Fatalf("the snapshot's last seq is %d, want %d", sn.last, n)
	}
	seqs := func(it func(func(recall.Entry, error) bool)) []int64 {
		var out []int64
		for e, err := range it {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Seq)
		}
		return out
	}
	for seq := int64(0); seq <= n+2; seq += 1 + n/40 {
		var down, up []int64
		for _, e := range committed {
			if e.Seq <= seq {
				down = append(down, e.Seq)
			} else {
				up = append(up, e.Seq)
			}
		}
		slices.Reverse(down)
		if got := seqs(sn.backward(seq)); !slices.Equal(got, down) {
			t.Fatalf("backward(%d) yields %v, want %v", seq, got, down)
		}
		if got := seqs(sn.forward(seq + 1)); !slices.Equal(got, up) {
			t.Fatalf("forward(%d) yields %v, want %v", seq+1, got, up)
		}
	}
	if got := seqs(sn.backward(math.MaxInt64)); int64(len(got)) != n {
		t.Fatalf("backward from the end yields %d entries, want %d", len(got), n)
	}
}
