package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/recallkit/recall/memstore"
)

// TestAdapterWritesErrorOnce checks the adapters of handlerFunc: an error
// returned before anything was written is answered in the route family's
// shape (OpenAI's JSON for api, a page for page), and one returned after
// the response began is never written into it: it is logged and the
// connection is cut.
func TestAdapterWritesErrorOnce(t *testing.T) {
	late := func(begin func(w http.ResponseWriter)) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			begin(w)
			return errors.New("late failure")
		}
	}
	written := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("half"))
	}
	flushed := func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }
	e := newEnv(t, memstore.New(memstore.Options{}), Options{Auth: AuthNone, RateLimit: -1}, func(s *Server) {
		s.mux.HandleFunc("GET /test/early", s.api(func(http.ResponseWriter, *http.Request) error {
			return invalidParam("x", "Invalid 'x'.")
		}))
		s.mux.HandleFunc("GET /test/internal", s.api(func(http.ResponseWriter, *http.Request) error {
			return errors.New("a detail of the server's own")
		}))
		s.mux.HandleFunc("GET /s/{session_id}/test-early", s.page(func(http.ResponseWriter, *http.Request) error {
			return pageError(http.StatusConflict, "Not now.")
		}))
		s.mux.HandleFunc("GET /test/written", s.api(late(written)))
		s.mux.HandleFunc("GET /test/flushed", s.api(late(flushed)))
		s.mux.HandleFunc("GET /s/{session_id}/test-written", s.page(late(written)))
	})

	ae := e.do("GET", "/test/early", "", nil).wantError(t, http.StatusBadRequest)
	if ae.Error.Message != "Invalid 'x'." || ae.Error.Param != "x" {
		t.Errorf("early error answered as %+v", ae)
	}
	r := e.do("GET", "/test/internal", "", nil)
	if ae := r.wantError(t, http.StatusInternalServerError); ae.Error.Message != "internal error" || strings.Contains(string(r.body), "detail") {
		t.Errorf("an error of the server's own answered as %s", r.body)
	}
	if !strings.Contains(e.log.String(), "a detail of the server's own") {
		t.Errorf("an error of the server's own is not logged:\n%s", e.log.String())
	}
	r = e.do("GET", "/s/x/test-early", "", nil).want(t, http.StatusConflict)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(r.body), "Not now.") {
		t.Errorf("a page's error answered as %s: %s", ct, r.body)
	}

	for _, c := range []struct{ path, route string }{
		{"/test/written", "GET /test/written"},
		{"/test/flushed", "GET /test/flushed"},
		{"/s/x/test-written", "GET /s/{session_id}/test-written"},
	} {
		req, _ := http.NewRequest("GET", e.ts.URL+c.path, nil)
		res, err := e.ts.Client().Do(req)
		var body []byte
		if err == nil {
			body, err = readAll(res)
		}
		if err == nil {
			t.Errorf("%s: an error after the response began ended it cleanly: %d %q", c.path, res.StatusCode, body)
		}
		if strings.Contains(string(body), "error") {
			t.Errorf("%s: an error was written into a response that had begun: %q", c.path, body)
		}
		// The client may send the request again on a new connection when
		// the first was cut before it read a byte: once or more is right.
		if !strings.Contains(e.log.String(), `"msg":"handler failed after its response began","route":"`+c.route+`","err":"late failure"`) {
			t.Errorf("%s: the error after the response began is not logged:\n%s", c.path, e.log.String())
		}
	}
	e.do("GET", "/api/v1/me", "", nil).want(t, http.StatusOK) // the server still serves
}
