// Package recallmcp serves recall's sessions over the Model Context
// Protocol, so that any agent that takes MCP tools (Claude Code, Codex,
// Cursor, Gemini CLI, agents built on an SDK) can search and read its own
// past conversations.
//
// New builds an *mcp.Server (the official Go SDK's) over a store with the
// tools search_sessions, list_sessions and read_session, and, when
// Options.AllowWrite, title_session, pin_session, rewind_session and
// redo_session; every session is also a resource,
// recall://sessions/{project}/{id}, in Markdown. Serve it on stdio with
// mcp.StdioTransport (as "recall mcp" does), or over streamable HTTP with
// Handler, which builds one server per request from the request's user,
// so each user sees only the projects Options allows.
//
// Everything a session holds is returned as data: quoted line by line in
// the text a model reads, and as JSON strings in the structured result.
// Every tool result is capped (Options.MaxResultChars) and says how to
// read on; bad arguments are tool errors (IsError results) a model can
// correct, not protocol errors; nothing is written unless
// Options.AllowWrite.
package recallmcp
