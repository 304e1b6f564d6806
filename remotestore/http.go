package remotestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/storewire"
)

// maxAnswer bounds an answer's body: a page of entries of the largest
// items a store takes.
const maxAnswer = 256 << 20

// readAttempts is how many times a read is sent when the connection
// fails before an answer.
const readAttempts = 2

// get sends GET route?q and decodes the answer into out.
func (s *Store) get(ctx context.Context, op, route string, q url.Values, out any) error {
	return s.do(ctx, op, http.MethodGet, route, q, nil, out)
}

// post sends body as JSON to POST route and decodes the answer into out.
func (s *Store) post(ctx context.Context, op, route string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("remotestore: %s: %w", op, err)
	}
	return s.do(ctx, op, http.MethodPost, route, nil, b, out)
}

// do sends one request of a store operation op and decodes its answer.
// Its errors wrap recall's sentinels as the server named them, the
// context's error when ctx ended, and recall.ErrUnavailable when the
// server could not be reached or its store is down. They name the
// server, never the token.
func (s *Store) do(ctx context.Context, op, method, route string, q url.Values, body []byte, out any) error {
	if s.closed.Load() {
		return fmt.Errorf("remotestore: %s: %w", op, recall.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remotestore: %s: %w", op, err)
	}
	u := *s.base
	if strings.HasPrefix(route, "/") {
		u.Path += route // a route of the API's beside the store's
	} else {
		u.Path += storewire.Prefix + route
	}
	u.RawQuery = q.Encode()
	idem, tries := "", readAttempts
	if method == http.MethodPost {
		tries = 1 + s.retries
		if s.retries > 0 {
			idem = newIdempotencyKey()
		}
	}
	var res *http.Response
	var err error
	for range tries {
		res, err = s.send(ctx, method, u.String(), body, idem)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("remotestore: %s: %w", op, cerr)
		}
		if method == http.MethodPost {
			return fmt.Errorf("remotestore: %s: %w: %s: %v (the write may or may not have been applied)", op, recall.ErrUnavailable, s.base, scrub(err))
		}
		return fmt.Errorf("remotestore: %s: %w: %s: %v", op, recall.ErrUnavailable, s.base, scrub(err))
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("remotestore: %s: %w", op, cerr)
		}
		return fmt.Errorf("remotestore: %s: %w: %s: reading the answer: %v", op, recall.ErrUnavailable, s.base, scrub(err))
	}
	if res.StatusCode >= 300 {
		err := answerError(res.StatusCode, data)
		if errors.Is(err, ErrUnauthorized) {
			return fmt.Errorf("remotestore: %s: %w (run `recall login %s`)", op, err, s.base)
		}
		return fmt.Errorf("remotestore: %s: %w", op, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("remotestore: %s: %w: the server's answer: %v", op, recall.ErrCorrupt, err)
	}
	return nil
}

// send makes one attempt of a request.
func (s *Store) send(ctx context.Context, method, u string, body []byte, idem string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	return s.client.Do(req)
}

// scrub returns err's text without the URL a *url.Error repeats (the
// caller names the server itself).
func scrub(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// newIdempotencyKey returns a fresh key for one write and its retries.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "rs_" + hex.EncodeToString(b)
}

// answerError is the error of an answer with status, whose body is
// OpenAI's error shape with a code of storewire's when the store route
// answered it.
func answerError(status int, data []byte) error {
	var eb storewire.ErrorBody
	_ = json.Unmarshal(data, &eb) // a body of another shape has no code
	var code string
	_ = json.Unmarshal(eb.Error.Code, &code)
	msg := eb.Error.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	if sentinel := storewire.Sentinel(code); sentinel != nil {
		return fmt.Errorf("%w: %s", sentinel, msg)
	}
	switch {
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", ErrUnauthorized, msg)
	case status == http.StatusForbidden:
		return fmt.Errorf("%w: %s", ErrForbidden, msg)
	case status == http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%w: %s", recall.ErrTooLarge, msg)
	case status == http.StatusTooManyRequests || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		return fmt.Errorf("%w: the server answered %d: %s", recall.ErrUnavailable, status, msg)
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		return fmt.Errorf("%w: the server has no store routes (a recall serve older than remote stores, or not a recall serve)", recall.ErrUnsupported)
	}
	return fmt.Errorf("the server answered %s: %s", strconv.Itoa(status), msg)
}
