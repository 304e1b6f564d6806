package server

import (
	"net/http"

	"github.com/recallkit/recall/recallmcp"
)

// mcpRoutes mounts the MCP server (streamable HTTP) at /mcp. It sits
// behind the same middleware as every route, so it needs the same token,
// and each request gets a server confined to its user's own sessions,
// read-only. An admin reads only their own sessions here too: an admin
// may list and remove other users' sessions but never read their items.
func (s *Server) mcpRoutes() {
	s.mux.Handle("POST /mcp", recallmcp.Handler(s.store, func(r *http.Request) (recallmcp.Options, bool) {
		u, ok := userFrom(r.Context())
		return recallmcp.Options{Project: u.Project(), OnlyProject: true}, ok
	}))
}
