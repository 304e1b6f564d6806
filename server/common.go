package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/recallkit/recall"
)

// User is who a request is served as.
type User struct {
	Name  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
}

// Project is the store project that holds the user's sessions.
func (u User) Project() string { return "user." + u.Name }

type userKey struct{}

// withUser returns ctx carrying u; the auth middleware sets it.
func withUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// userFrom returns the user the auth middleware put in ctx.
func userFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

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

// writeError sends err in OpenAI's error shape. An *APIError goes as is;
// recall's sentinel errors map to their statuses; anything else is a
// logged 500 whose message says nothing of the internals.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, recall.ErrNotFound):
		ae = &APIError{Status: http.StatusNotFound, Message: "not found", Type: "invalid_request_error"}
	case errors.Is(err, recall.ErrConflict):
		ae = &APIError{Status: http.StatusConflict, Message: err.Error(), Type: "invalid_request_error", NoRetry: true}
	case errors.Is(err, recall.ErrTooLarge):
		ae = &APIError{Status: http.StatusRequestEntityTooLarge, Message: err.Error(), Type: "invalid_request_error"}
	case errors.Is(err, recall.ErrInvalidItem), errors.Is(err, recall.ErrInvalidKey),
		errors.Is(err, recall.ErrInvalidMetadata):
		ae = &APIError{Status: http.StatusBadRequest, Message: err.Error(), Type: "invalid_request_error"}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		ae = &APIError{Status: http.StatusServiceUnavailable, Message: "request canceled or timed out", Type: "server_error"}
	default:
		s.log.ErrorContext(r.Context(), "request failed", "route", r.Pattern, "err", err)
		ae = &APIError{Status: http.StatusInternalServerError, Message: "internal error", Type: "server_error"}
	}
	if ae.NoRetry {
		w.Header().Set("x-should-retry", "false")
	}
	setRetryAfter(w, ae.RetryAfter)
	writeJSON(w, ae.Status, struct {
		Error *APIError `json:"error"`
	}{ae})
}
