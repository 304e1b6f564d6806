package filestore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"pgregory.net/rapid"
)

// genLog draws a log file: batches of entries (some multi-line), with
// garbage and blank lines between batches, CRLF endings, and a tail that
// is clean, torn at a random byte of the last batch, or missing only the
// final newline. It returns the file, the seqs a reader must see, and the
// number of corrupt lines.
func genLog(t *rapid.T) (file []byte, want []int64, corrupt int) {
	var buf bytes.Buffer
	seq := int64(0)
	nb := rapid.IntRange(0, 12).Draw(t, "batches")
	var lastStart int
	var lastSeqs []int64
	for b := range nb {
		switch rapid.IntRange(0, 6).Draw(t, "between") {
		case 0:
			buf.WriteString("garbage line\n")
			corrupt++
		case 1:
			buf.WriteString("\n")
		case 2:
			buf.WriteString("  \r\n")
		}
		lastStart = buf.Len()
		n := rapid.IntRange(1, 4).Draw(t, "batch size")
		crlf := rapid.Bool().Draw(t, "crlf")
		lastSeqs = lastSeqs[:0]
		for i := range n {
			seq++
			size := rapid.IntRange(0, 300).Draw(t, "item size")
			it := fmt.Sprintf(`{"b":%d,"pad":"%s"}`, b, strings.Repeat("x", size))
			e := recall.Entry{Seq: seq, Kind: recall.KindItem, Time: t0, Data: []byte(it)}
			line, err := appendLine(nil, e, i < n-1)
			if err != nil {
				t.Fatal(err)
			}
			if crlf {
				line = append(line[:len(line)-1], "\r\n"...)
			}
			buf.Write(line)
			lastSeqs = append(lastSeqs, seq)
			want = append(want, seq)
		}
	}
	file = buf.Bytes()
	if nb > 0 {
		switch rapid.IntRange(0, 3).Draw(t, "tail") {
		case 1: // torn: cut anywhere inside the last batch but its very end
			cut := rapid.IntRange(lastStart, len(file)-2).Draw(t, "cut")
			if bytes.HasSuffix(file, []byte("\r\n")) && cut == len(file)-2 {
				break // only "\r\n" lost: the last line is still complete
			}
			file = file[:cut]
			want = want[:len(want)-len(lastSeqs)]
		case 2: // only the final newline lost
			file = file[:len(file)-1]
		}
	}
	return file, want, corrupt
}

func seqsOf(es []recall.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// TestScanAgree checks the forward scanner against the log's construction
// and the backward reader against the forward scanner, with block and
// chunk sizes small enough to split lines anywhere.
func TestScanAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		file, want, corrupt := genLog(t)
		chunk := rapid.IntRange(1, 600).Draw(t, "chunk")
		block := rapid.IntRange(1, 600).Draw(t, "block")

		var whole []recall.Entry
		sc := scanner{stable: true, emit: func(e recall.Entry) { whole = append(whole, e) }}
		if err := sc.scanBytes(context.Background(), file, 0); err != nil {
			t.Fatal(err)
		}
		if got := seqsOf(whole); !slices.Equal(got, want) {
			t.Fatalf("scanBytes seqs %v, want %v\n%q", got, want, file)
		}
		if sc.corrupt != corrupt {
			t.Fatalf("corrupt %d, want %d", sc.corrupt, corrupt)
		}

		var chunked []recall.Entry
		sc2 := scanner{chunk: chunk, emit: func(e recall.Entry) { chunked = append(chunked, e.Clone()) }}
		if err := sc2.scanFile(context.Background(), bytes.NewReader(file), 0, int64(len(file))); err != nil {
			t.Fatal(err)
		}
		if got := seqsOf(chunked); !slices.Equal(got, want) || sc2.end != sc.end || sc2.corrupt != sc.corrupt {
			t.Fatalf("scanFile: seqs %v end %d corrupt %d; scanBytes: %v %d %d", got, sc2.end, sc2.corrupt, want, sc.end, sc.corrupt)
		}
		for i := range chunked {
			if !bytes.Equal(chunked[i].Data, whole[i].Data) {
				t.Fatalf("seq %d: chunked data %q, whole %q", chunked[i].Seq, chunked[i].Data, whole[i].Data)
			}
		}

		// Everything past the committed end is torn: the file cut there
		// reads the same.
		var cut []recall.Entry
		sc3 := scanner{stable: true, emit: func(e recall.Entry) { cut = append(cut, e) }}
		if err := sc3.scanBytes(context.Background(), file[:sc.end], 0); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(cut), want) || sc3.end != sc.end {
			t.Fatalf("log cut at its committed end %d reads %v (end %d), want %v", sc.end, seqsOf(cut), sc3.end, want)
		}

		var back []int64
		var newest int64
		for e, err := range backwardBlocks(context.Background(), bytes.NewReader(file), int64(len(file)), block, &newest) {
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, e.Seq)
		}
		slices.Reverse(back)
		if !slices.Equal(back, want) {
			t.Fatalf("backward seqs %v, want %v\n%q", back, want, file)
		}
		// the first entry met is the log's LastSeq at that size
		var wantNewest int64
		if len(want) > 0 {
			wantNewest = want[len(want)-1]
		}
		if newest != wantNewest {
			t.Fatalf("backward's newest seq %d, want the last of %v", newest, want)
		}
	})
}

// TestReverseLinesLong reads lines far longer than the first block.
func TestReverseLinesLong(t *testing.T) {
	lines := []string{"", "a", strings.Repeat("b", 70000), "c", strings.Repeat("d", 5), ""}
	file := strings.Join(lines, "\n") // ends without a newline after the last ""
	rl := newReverseLines(context.Background(), strings.NewReader(file), int64(len(file)), 3)
	var got []string
	for {
		l, _, ok, err := rl.prev()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(l))
	}
	slices.Reverse(got)
	if !slices.Equal(got, lines) {
		t.Fatalf("got %d lines, want %d", len(got), len(lines))
	}
}

// TestTailBlock checks the first read GetItems sizes: whole 4 KiB pages,
// within [firstBlock, maxTailBlock], and enough for limit+1 average lines
// when that fits under the cap; unknown sizes and huge limits included.
func TestTailBlock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.Int64Range(-1, 1<<40).Draw(t, "size")
		last := rapid.Int64Range(-1, 1<<30).Draw(t, "last")
		limit := rapid.OneOf(rapid.IntRange(-1, 10_000), rapid.IntRange(1<<62, 1<<63-1)).Draw(t, "limit")
		n := tailBlock(size, last, limit)
		if n < firstBlock || n > maxTailBlock || n%(4<<10) != 0 {
			t.Fatalf("tailBlock(%d, %d, %d) = %d", size, last, limit, n)
		}
		if size <= 0 || last <= 0 || limit <= 0 {
			if n != firstBlock {
				t.Fatalf("tailBlock(%d, %d, %d) = %d without an estimate, want firstBlock", size, last, limit, n)
			}
			return
		}
		if need := float64(size) / float64(last) * float64(limit+1); n < maxTailBlock && float64(n) < need {
			t.Fatalf("tailBlock(%d, %d, %d) = %d < %.0f needed", size, last, limit, n, need)
		}
	})
	// A tail of 50 lines of 1.2 KB is one read: 51 × 1,201 bytes rounded
	// up to 60 KiB.
	if n := tailBlock(1000*1200, 1000, 50); n != 60<<10 {
		t.Fatalf("tailBlock for 50 lines of 1.2 KB = %d, want 60 KiB", n)
	}
}
