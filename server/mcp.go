package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/recallkit/recall/recallmcp"
)

// mcpRoutes mounts the MCP server (streamable HTTP) at /mcp. It sits
// behind the same middleware as every route, so it needs the same token,
// and each request gets a server confined to its user's own projects
// (User.owns), read-only: a tool call that names no project reads the
// user's default one (the local user's: every project), "all" every one
// of theirs. An admin reads only their own sessions here too: an admin
// may list and remove other users' sessions but never read their items.
// Its body is bounded by maxBody, as every route's: a larger one is the
// API's 413, read before the MCP handler sees the request.
func (s *Server) mcpRoutes() {
	h := recallmcp.Handler(s.store, func(r *http.Request) (recallmcp.Options, bool) {
		u, ok := userFrom(r.Context())
		o := recallmcp.Options{Project: u.Project(), Projects: u.owns, MaxBodyBytes: s.maxBody()}
		if u.Local {
			o.Project = "" // the home's every project, as recall ls --all
		}
		return o, ok
	})
	s.mux.HandleFunc("POST /mcp", s.api(func(w http.ResponseWriter, r *http.Request) error {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody()))
		if err != nil {
			return bodyError(err, s.maxBody())
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
		return nil
	}))
}
