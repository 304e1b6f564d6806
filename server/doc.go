// Package server serves a recall.Store over HTTP to many users: OpenAI's
// Conversations API under /v1 (so the official OpenAI SDKs are clients),
// recall's own API under /api/v1, a web viewer, MCP, a Responses proxy,
// and /healthz, /readyz and /metrics.
//
// The server keeps nothing of its own between requests: users' tokens,
// idempotency records and sessions all live in the store, so any number
// of servers over one shared store (PostgreSQL, Redis) serve the same
// users as one.
//
// Where each surface lives, by file name:
//
//   - server.go: Options and New, which mounts each surface's routes
//     (api.go, web_pages.go, ...); handler.go the handlers' type, which
//     returns an error for its route's adapter to write once;
//     middleware.go the chain every request passes (request ids, metrics,
//     recovery); request_body.go reads a request's JSON; apierror.go
//     writes errors in OpenAI's shape; user.go maps a user to their
//     project.
//   - conversations*.go: the Conversations API (/v1/conversations): the
//     conversations, their items and the items' ids (conversations_items,
//     conversations_idplaces, conversations_idtaken).
//   - api*.go: recall's own API (/api/v1): sessions, their log and
//     compaction (api_log), lists (api_list), search (api_search).
//   - web*.go: the web viewer, one file per page (web_signin, web_list,
//     web_session, web_live, web_watch) beside its assets and routes
//     (web_pages), rendering (web_render), and its sign-in cookie and
//     headers (web.go).
//   - responses*.go: the Responses proxy (/v1/responses) with stored
//     conversations: the route, its upstream, streaming, and Chat
//     Completions upstreams (responses_chat).
//   - mcp.go: MCP over HTTP, per user (package recallmcp does the work).
//   - auth*.go: who a request is: tokens (auth_tokens), the cache of
//     verified ones (auth_tokencache), and the loopback guard of
//     --auth none (auth_local).
//   - idempotency.go: Idempotency-Key, kept in the store.
//   - metrics.go and probes.go: /metrics, /healthz and /readyz.
package server
