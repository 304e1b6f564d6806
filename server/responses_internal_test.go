package server

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"testing/iotest"

	"github.com/recallkit/recall"
)

// TestUpstreamBody checks the streamed body of a request on a
// conversation against the same body joined in one buffer, read in
// chunks of every small size (so that every boundary falls inside the
// head, an item, a comma and the tail), and that its size is its length.
func TestUpstreamBody(t *testing.T) {
	body := map[string]json.RawMessage{
		"model": json.RawMessage(`"m"`), "conversation": json.RawMessage(`"conv_1"`),
		"input": json.RawMessage(`[{"type":"message"}]`), "stream": json.RawMessage(`true`),
	}
	for _, items := range [][]recall.Item{
		nil,
		{recall.Item(`{"a":1}`)},
		{recall.Item(`{"a":1}`), recall.Item(`{"b":"two"}`), recall.Item(`{"c":[3]}`)},
	} {
		var want bytes.Buffer
		want.WriteString(`{"model":"m","stream":true,"input":[`)
		for i, it := range items {
			if i > 0 {
				want.WriteByte(',')
			}
			want.Write(it)
		}
		want.WriteString("]}")
		if !json.Valid(want.Bytes()) {
			t.Fatalf("bad want %s", want.Bytes())
		}
		if ub := newUpstreamBody(body, items); ub.size != int64(want.Len()) {
			t.Errorf("%d items: size %d, want %d", len(items), ub.size, want.Len())
		}
		for chunk := 1; chunk <= want.Len()+1; chunk++ {
			got, err := readChunks(newUpstreamBody(body, items), chunk)
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%d items, chunks of %d: %q, %v; want %q", len(items), chunk, got, err, want.Bytes())
			}
		}
		if err := iotest.TestReader(newUpstreamBody(body, items), want.Bytes()); err != nil {
			t.Errorf("%d items: %v", len(items), err)
		}
	}
}

// readChunks reads r to its end, at most chunk bytes a call.
func readChunks(r io.Reader, chunk int) ([]byte, error) {
	var out []byte
	p := make([]byte, chunk)
	for {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
