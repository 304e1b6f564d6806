package server

import (
	"context"
	"net/http"
)

// PLACEHOLDERS: still to write (auth, rate limits, logging, metrics,
// recovery, /healthz, /readyz, /metrics, and recall's /api/v1).

func (s *Server) init(ctx context.Context) error { return nil }

func (s *Server) apiRoutes() {}

func (s *Server) opsRoutes() {}

func (s *Server) middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(withUser(r.Context(), User{Name: DefaultUser})))
	})
}
