package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/provider/openai"
)

// The upstream of the Responses proxy: where POST /v1/responses goes, and
// how a request body is sent there.

// upstream is where POST /v1/responses goes.
type upstream struct {
	base   string // the base URL, without a trailing "/"
	api    openai.API
	key    string
	client *http.Client
	log    *slog.Logger
}

// maxUpstreamError is how much of an upstream error body is relayed.
const maxUpstreamError = 64 << 10

// newUpstream checks the upstream options.
func newUpstream(opts Options) (*upstream, error) {
	if opts.Upstream == "" {
		return nil, nil
	}
	api, err := openai.ResolveAPI(opts.Upstream, opts.UpstreamAPI)
	if err != nil {
		return nil, errors.Join(ErrBadOptions, err)
	}
	c := &http.Client{}
	if opts.UpstreamClient != nil {
		cc := *opts.UpstreamClient
		c = &cc
	}
	// A redirect is never followed: following it would post the
	// conversation (and, to the same host on another port, the key)
	// wherever the upstream points; it is answered as a 502 (relayError).
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &upstream{base: strings.TrimSuffix(opts.Upstream, "/"), api: api, key: opts.UpstreamKey, client: c, log: opts.Logger}, nil
}

// send posts the request upstream, translated for a Chat Completions
// upstream: the body as received, or, for a request on a conversation
// (withConv), with items as its input and without "conversation". An
// upstream that cannot be reached is a 502.
func (u *upstream) send(ctx context.Context, body map[string]json.RawMessage, withConv bool, items []recall.Item, stream bool) (*http.Response, error) {
	path := "/responses"
	var out io.Reader
	var size int64
	var getBody func() (io.ReadCloser, error)
	switch {
	case u.api == openai.APIChat:
		path = "/chat/completions"
		if !withConv {
			var err error
			if items, err = inputItems(body["input"]); err != nil {
				return nil, err
			}
		}
		b, err := chatRequest(body, items, stream)
		if err != nil {
			return nil, err
		}
		out, size = bytes.NewReader(b), int64(len(b))
	case withConv:
		ub := newUpstreamBody(body, items)
		out, size = ub, ub.size
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(newUpstreamBody(body, items)), nil }
	default:
		b, _ := json.Marshal(body)
		out, size = bytes.NewReader(b), int64(len(b))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+path, out)
	if err != nil {
		return nil, err
	}
	if getBody != nil {
		// A body the transport can make again, so that a request on a
		// kept-alive connection the upstream had closed is retried, as
		// one with a bytes.Reader body is.
		req.ContentLength, req.GetBody = size, getBody
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if u.key != "" {
		req.Header.Set("Authorization", "Bearer "+u.key)
	}
	res, err := u.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Its address and why are the operator's to read, not the client's.
		u.log.WarnContext(ctx, "upstream: could not be reached", "err", err)
		return nil, &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_unreachable",
			Message: "The upstream model server could not be reached."}
	}
	return res, nil
}

// upstreamBody is the body of a request on a conversation as it goes
// upstream, read as the transport sends it: the client's fields as
// received, but "conversation", and items as "input". The items are
// written as stored, byte for byte (the store keeps only valid JSON), not
// encoded again, and straight from the view read from the store, not
// joined first: a long conversation costs neither a parse nor a copy of
// its megabytes into one buffer before the first byte goes out.
type upstreamBody struct {
	head  []byte        // "{" and the client's fields, then `"input":[`
	items []recall.Item // then the items, comma-separated
	size  int64         // the whole body's length
	i     int           // the item being read; len(items): the tail
	off   int           // how much of head (i < 0) or items[i] is read
	comma bool          // items[i] still owes its leading comma
}

// upstreamTail closes the input list and the body.
const upstreamTail = "]}"

func newUpstreamBody(body map[string]json.RawMessage, items []recall.Item) *upstreamBody {
	var head bytes.Buffer
	head.WriteByte('{')
	for _, k := range slices.Sorted(maps.Keys(body)) {
		if k == "conversation" || k == "input" {
			continue
		}
		kb, _ := json.Marshal(k)
		head.Write(kb)
		head.WriteByte(':')
		head.Write(body[k])
		head.WriteByte(',')
	}
	head.WriteString(`"input":[`)
	size := int64(head.Len() + len(upstreamTail))
	for i, it := range items {
		if i > 0 {
			size++
		}
		size += int64(len(it))
	}
	return &upstreamBody{head: head.Bytes(), items: items, size: size, i: -1}
}

// Read implements io.Reader.
func (b *upstreamBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case b.i < 0:
			c := copy(p[n:], b.head[b.off:])
			n, b.off = n+c, b.off+c
			if b.off == len(b.head) {
				b.i, b.off = 0, 0
			}
		case b.i < len(b.items):
			if b.comma {
				p[n] = ','
				n, b.comma = n+1, false
				continue
			}
			it := b.items[b.i]
			c := copy(p[n:], it[b.off:])
			n, b.off = n+c, b.off+c
			if b.off == len(it) {
				b.i, b.off = b.i+1, 0
				b.comma = b.i < len(b.items)
			}
		default:
			c := copy(p[n:], upstreamTail[b.off:])
			n, b.off = n+c, b.off+c
			if b.off == len(upstreamTail) {
				return n, io.EOF
			}
		}
	}
	return n, nil
}
