package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// APIError is an error in OpenAI's shape:
// {"error":{"message","type","param","code"}}, sent with Status.
type APIError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // a string, or null
	Code    any    `json:"code"`  // a string, or null
	// NoRetry sends x-should-retry: false, for a 409 (or other status
	// the SDKs retry) that a retry cannot fix.
	NoRetry bool `json:"-"`
	// RetryAfter, when positive, is sent as Retry-After (whole seconds,
	// at least 1), for a 429.
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string { return e.Message }

// setRetryAfter sends d, when positive, as Retry-After in whole seconds,
// at least 1.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(d, time.Second).Seconds()))))
	}
}

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError sends err in OpenAI's error shape: as apiErrorOf words it,
// or, for an error of the server's own, a logged 500 whose message says
// nothing of the internals.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := apiErrorOf(err)
	if ae == nil {
		s.log.ErrorContext(r.Context(), "request failed", "route", r.Pattern, "err", err)
		ae = &APIError{Status: http.StatusInternalServerError, Message: "internal error", Type: "server_error"}
	}
	s.logStoreDown(r, err)
	if ae.NoRetry {
		w.Header().Set("x-should-retry", "false")
	}
	setRetryAfter(w, ae.RetryAfter)
	writeJSON(w, ae.Status, struct {
		Error *APIError `json:"error"`
	}{ae})
}

// withDetail returns msg, followed by what a validation error of the
// recall package says after its sentinel ("recall: item too large: 2000
// bytes, limit 1000" gives ": 2000 bytes, limit 1000"), wherever a store
// wrapped it, and a full stop. The detail of these sentinels (ErrTooLarge,
// ErrInvalidItem, ErrInvalidMetadata) is the recall package's: sizes, a
// JSON syntax error, the client's own metadata key; whatever a store put
// before it (its name, a path, a project) is left out.
func withDetail(msg string, err, sentinel error) string {
	text := err.Error()
	if i := strings.LastIndex(text, sentinel.Error()+": "); i >= 0 {
		msg += ": " + text[i+len(sentinel.Error())+2:]
	}
	return msg + "."
}

// apiErrorOf returns err as a client is told it: an *APIError as it is;
// recall's sentinel errors with their statuses, in the API's own words (a
// store's text, its name, a file path, a project, never reaches a
// client); nil for any other error, which is the server's own.
func apiErrorOf(err error) *APIError {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, recall.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Message: "not found", Type: "invalid_request_error"}
	case errors.Is(err, recall.ErrConflict):
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", NoRetry: true,
			Message: "The session changed while the request was served, or what it would create exists already; read it again before you retry."}
	case errors.Is(err, recall.ErrTooLarge):
		return &APIError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: withDetail("An item is larger than the store accepts", err, recall.ErrTooLarge)}
	case errors.Is(err, recall.ErrInvalidItem):
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: withDetail("An item is not a valid JSON object", err, recall.ErrInvalidItem)}
	case errors.Is(err, recall.ErrInvalidMetadata):
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "metadata",
			Message: withDetail("Invalid 'metadata'", err, recall.ErrInvalidMetadata)}
	case errors.Is(err, recall.ErrInvalidKey):
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "The request names a session, subpath or cursor that is not valid."}
	case storeDown(err):
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "store_unavailable",
			RetryAfter: storeRetryAfter, Message: "The store is unavailable; retry shortly."}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &APIError{Status: http.StatusServiceUnavailable, Message: "request canceled or timed out", Type: "server_error"}
	}
	return nil
}

// storeRetryAfter is the Retry-After of a 503 of a store that could not
// be reached.
const storeRetryAfter = 2 * time.Second

// storeDown reports an error of a store that cannot serve now: its
// backend could not be reached (recall.ErrUnavailable), or it has been
// closed (recall.ErrClosed: the server is shutting down).
func storeDown(err error) bool {
	return errors.Is(err, recall.ErrUnavailable) || errors.Is(err, recall.ErrClosed)
}

// logStoreDown logs why a request was answered 503 when its store could
// not serve it: the client is told only that (apiErrorOf).
func (s *Server) logStoreDown(r *http.Request, err error) {
	var ae *APIError
	if storeDown(err) && !errors.As(err, &ae) {
		s.log.WarnContext(r.Context(), "store unavailable", "route", r.Pattern, "err", err)
	}
}
