package main

import (
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionjson"
	"github.com/recallkit/recall/server"
)

// sessionJSON is a session as every --json output shows it. Unlike
// recall.Meta it leaves nothing out: false, zero and empty fields are
// present, so a script can rely on each one (docs/CLI.md lists them).
// The fields from created to source are the ones /api/v1 shows too
// (sessionjson.Fields).
type sessionJSON struct {
	Key         keyJSON `json:"key"`
	Title       string  `json:"title"`
	TitleSource string  `json:"title_source"`
	FirstPrompt string  `json:"first_prompt"`
	sessionjson.Fields
	ForkedFrom *recall.ForkOrigin `json:"forked_from"`
	Usage      recall.Usage       `json:"usage"`
	Corrupt    int                `json:"corrupt"`
}

// keyJSON is a session's key in JSON output.
type keyJSON struct {
	Project string `json:"project"`
	Session string `json:"session"`
}

// sessionsJSON is the shape of every --json output that lists sessions
// (ls, gc, rm, archive, pin, rename, fork): the sessions and, for a page
// of a longer list, the cursor of the next page ("" at the end).
type sessionsJSON struct {
	Sessions []sessionJSON `json:"sessions"`
	Next     string        `json:"next"`
}

// toJSON returns m as --json shows it.
func toJSON(m recall.Meta) sessionJSON {
	return sessionJSON{
		Key:         keyJSON{Project: m.Key.Project, Session: m.Key.Session},
		Title:       m.Title,
		TitleSource: string(m.TitleSource),
		FirstPrompt: m.FirstPrompt,
		Fields:      sessionjson.Of(m),
		ForkedFrom:  m.ForkedFrom,
		Usage:       m.Usage,
		Corrupt:     m.Corrupt,
	}
}

// listJSON returns metas in the listing shape, with next as the cursor.
func listJSON(metas []recall.Meta, next string) sessionsJSON {
	out := sessionsJSON{Sessions: make([]sessionJSON, 0, len(metas)), Next: next}
	for _, m := range metas {
		out.Sessions = append(out.Sessions, toJSON(m))
	}
	return out
}

// reservedProject reports whether project belongs to the service (recall
// serve keeps its tokens and idempotency records in "_server." projects):
// listings of every project leave them out, and gc --all keeps them.
func reservedProject(project string) bool {
	return strings.HasPrefix(project, server.ReservedPrefix)
}

// projectJSON is a project as projects --json shows it.
type projectJSON struct {
	Project  string    `json:"project"`
	Sessions int       `json:"sessions"`
	Updated  time.Time `json:"updated"`
}

// projectsListJSON is the shape of projects --json: like every listing,
// one object that names what it lists. next is always "": projects are
// listed whole.
type projectsListJSON struct {
	Projects []projectJSON `json:"projects"`
	Next     string        `json:"next"`
}

// projectsJSON returns ps in the listing shape.
func projectsJSON(ps []recall.ProjectInfo) projectsListJSON {
	out := projectsListJSON{Projects: make([]projectJSON, 0, len(ps))}
	for _, p := range ps {
		out.Projects = append(out.Projects, projectJSON(p))
	}
	return out
}
