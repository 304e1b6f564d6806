package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/recallkit/recall"
)

// envelopeRoom is what a request body may hold beyond one item of the
// store's largest size: the JSON around it and a few small items more.
const envelopeRoom = 1 << 20

// maxBody returns the largest request body accepted: Options.MaxBodyBytes,
// or, by default, the store's default item limit plus envelopeRoom, so
// that any item the store would take fits in a request.
func (s *Server) maxBody() int64 {
	if s.opts.MaxBodyBytes > 0 {
		return s.opts.MaxBodyBytes
	}
	return recall.DefaultMaxItemSize + envelopeRoom
}

// readJSON decodes the request body, a single JSON value, into v. A body
// over maxBody is a 413; an empty, malformed or trailing-garbage body, or
// one whose fields have the wrong JSON types, is a 400. Every error it
// returns is an *APIError in OpenAI's shape, for the handler to return; the
// caller has written nothing yet, so a refused body changes nothing.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.maxBody())
	dec := json.NewDecoder(body)
	err := dec.Decode(v)
	if err == nil {
		// One value only: anything but white space after it is malformed.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON value")
			if terr != nil {
				err = terr
			}
		}
	}
	if err == nil {
		return nil
	}
	return bodyError(err, s.maxBody())
}

// bodyError turns a failure to read or decode a request body into an
// *APIError.
func bodyError(err error, limit int64) *APIError {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return &APIError{
			Status:  http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("The request body is larger than the limit of %d bytes.", limit),
			Type:    "invalid_request_error",
			Code:    "request_too_large",
		}
	case errors.Is(err, io.EOF):
		return &APIError{
			Status:  http.StatusBadRequest,
			Message: "The request body is empty; a JSON object was expected.",
			Type:    "invalid_request_error",
		}
	case errors.As(err, &typeErr):
		ae := &APIError{
			Status:  http.StatusBadRequest,
			Message: fmt.Sprintf("Invalid type for '%s': expected %s, got JSON %s.", typeErr.Field, typeErr.Type, typeErr.Value),
			Type:    "invalid_request_error",
			Code:    "invalid_type",
		}
		if typeErr.Field != "" {
			ae.Param = typeErr.Field
		} else {
			ae.Message = fmt.Sprintf("The request body must be a JSON object, not JSON %s.", typeErr.Value)
		}
		return ae
	default:
		return &APIError{
			Status: http.StatusBadRequest,
			Message: "We could not parse the JSON body of your request: " + err.Error() +
				". The body must be a single JSON object.",
			Type: "invalid_request_error",
		}
	}
}

// invalidParam returns the 400 of a request parameter that is missing or
// wrong, named as OpenAI names it ("items[3]", "metadata", "limit").
func invalidParam(param, format string, args ...any) *APIError {
	return &APIError{
		Status:  http.StatusBadRequest,
		Message: fmt.Sprintf(format, args...),
		Type:    "invalid_request_error",
		Param:   param,
	}
}
