package server

import "net/http"

// handlerFunc is a route's handler. It answers the request itself, or
// returns the error to answer it with; the adapter the route is
// registered with (api or page) writes that error in its family's shape,
// once. A handler returns an error only before it has written anything:
// once its response has begun (a stream, an event stream, a redirect)
// it deals with what goes wrong itself and returns nil.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// api adapts h for the routes that answer errors in OpenAI's shape
// (writeError): the Conversations API, /api/v1, the Responses proxy, MCP
// and the probes.
func (s *Server) api(h handlerFunc) http.HandlerFunc { return s.adapt(h, s.writeError) }

// page adapts h for the web viewer's routes, which answer errors as
// pages (webError).
func (s *Server) page(h handlerFunc) http.HandlerFunc { return s.adapt(h, s.webError) }

// adapt returns h as an http.HandlerFunc that answers an error h returns
// with writeErr. It watches whether h began its response, so that an
// error can never be written after (or into) one: a handler that returns
// an error when it has begun breaks the contract of handlerFunc, and the
// error is logged and the connection cut (http.ErrAbortHandler), so the
// client sees a broken response rather than one that looks whole.
func (s *Server) adapt(h handlerFunc, writeErr func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		bw := &beganWriter{ResponseWriter: w}
		err := h(bw, r)
		switch {
		case err == nil:
		case !bw.began:
			writeErr(w, r, err)
		default:
			s.log.ErrorContext(r.Context(), "handler failed after its response began", "route", r.Pattern, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// beganWriter records whether a response has begun: a status or a byte
// written.
type beganWriter struct {
	http.ResponseWriter
	began bool
}

func (w *beganWriter) WriteHeader(code int) {
	w.began = w.began || code >= 200 // an informational status (1xx) begins nothing
	w.ResponseWriter.WriteHeader(code)
}

func (w *beganWriter) Write(b []byte) (int, error) {
	w.began = true
	return w.ResponseWriter.Write(b)
}

// FlushError passes a flush of http.ResponseController on, which begins
// the response too.
func (w *beganWriter) FlushError() error {
	w.began = true
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *beganWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
