package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recallkit/recall"
)

// User is who a request is served as.
type User struct {
	Name  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
	// ReadOnly is a reader's token's user: only GET and HEAD requests
	// are served (TokenOptions.ReadOnly).
	ReadOnly bool `json:"read_only,omitempty"`
	// Local is the one user of AuthNone, the person whose home the server
	// serves: they own every project of the store but the server's own
	// (ReservedPrefix).
	Local bool `json:"-"`
}

// A user's namespace holds projects, as a home does. Its store projects:
//
//   - "user.NAME" is the default project: the Conversations API's
//     conversations, and every session the server stored before users
//     had projects, read in place;
//   - "users.N.NAME.P" is the project P of the user NAME (see
//     UserProject), N being the length of NAME in bytes. A user name may
//     hold any byte of a project key, dots too, so the length says where
//     it ends: no two (NAME, P) pairs share a store project, and no
//     user's project starts with another's prefix.
//
// The local user (User.Local) owns every project of the store instead,
// named as the home names them (recall.ProjectKey).
const (
	userPrefix     = "user."  // the default projects
	projectsPrefix = "users." // the other projects (UserProject)
)

// Project is the user's default project: the store project that holds
// the user's conversations of the Conversations API.
func (u User) Project() string { return userPrefix + u.Name }

// UserProject returns the store project that holds the project named
// project (a project key, as recall.ProjectKey makes them) of the user
// named user: "users.N.NAME.PROJECT". An empty project is the user's
// default project, "user.NAME". A bad name, or a result longer than a
// project key may be, is an error wrapping recall.ErrInvalidKey.
func UserProject(user, project string) (string, error) {
	if err := ValidateUser(user); err != nil {
		return "", err
	}
	if project == "" {
		return userPrefix + user, nil
	}
	p := ownPrefix(user) + project
	if err := (recall.Key{Project: p, Session: "x"}).Validate(); err != nil {
		return "", fmt.Errorf("server: project %q of user %q: %w", project, user, err)
	}
	return p, nil
}

// ownPrefix starts every non-default store project of the user name.
func ownPrefix(name string) string {
	return projectsPrefix + strconv.Itoa(len(name)) + "." + name + "."
}

// ProjectOwner returns the user whose namespace holds the store project
// p, and the project's name there ("" for the default project); ok is
// false when p is no user's (the server's own projects, or any other).
func ProjectOwner(p string) (user, project string, ok bool) {
	if name, found := strings.CutPrefix(p, userPrefix); found {
		return name, "", ValidateUser(name) == nil
	}
	rest, found := strings.CutPrefix(p, projectsPrefix)
	digits, rest, dot := strings.Cut(rest, ".")
	n, err := strconv.Atoi(digits)
	if !found || !dot || err != nil || n < 1 || n > len(rest) || strconv.Itoa(n) != digits {
		return "", "", false
	}
	user, project, found = rest[:n], rest[n:], false
	if project, found = strings.CutPrefix(project, "."); !found || project == "" || ValidateUser(user) != nil {
		return "", "", false
	}
	return user, project, true
}

// isUserProject reports whether the store project p is in some user's
// namespace (what an admin may list).
func isUserProject(p string) bool {
	_, _, ok := ProjectOwner(p)
	return ok
}

// owns reports whether the store project p is one of u's: for the local
// user every project but the server's own; for any other, those of u's
// namespace.
func (u User) owns(p string) bool {
	if u.Local {
		return !strings.HasPrefix(p, ReservedPrefix) && (recall.Key{Project: p, Session: "x"}).Validate() == nil
	}
	name, _, ok := ProjectOwner(p)
	return ok && name == u.Name
}

// ownsMeta is owns of a session's project, as a listing filter.
func (u User) ownsMeta(m recall.Meta) bool { return u.owns(m.Key.Project) }

// projects lists the projects of u that hold sessions, sorted by name,
// with their session counts, from the server's recent reading of the
// store's projects (projectCache).
func (s *Server) projects(ctx context.Context, u User) ([]recall.ProjectInfo, error) {
	all, err := s.projectCache.get(ctx, s.store)
	if err != nil {
		return nil, err
	}
	return u.ownProjects(all), nil
}

// ownProjects returns the projects of all that are u's.
func (u User) ownProjects(all []recall.ProjectInfo) []recall.ProjectInfo {
	var out []recall.ProjectInfo
	for _, p := range all {
		if u.owns(p.Project) {
			out = append(out, p)
		}
	}
	return out
}

// projectsTTL is how long a server reuses its reading of the store's
// projects (recall.Projects, which costs about as much as the store has
// sessions: a count of each project's): the viewer's picker and the
// listings that span a user's projects may miss a project made, or
// count a session, up to that late. GET /api/v1/projects reads them
// afresh.
const projectsTTL = 2 * time.Second

// projectCache holds the last reading of the store's projects.
type projectCache struct {
	mu   sync.Mutex
	at   time.Time
	list []recall.ProjectInfo // shared: never changed once read
}

// get returns the store's projects as read within projectsTTL, reading
// them when they are older; concurrent callers wait for one reading.
func (c *projectCache) get(ctx context.Context, st recall.Store) ([]recall.ProjectInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list != nil && time.Since(c.at) < projectsTTL {
		return c.list, nil
	}
	list, err := recall.Projects(ctx, st)
	if err != nil {
		return nil, err
	}
	c.list, c.at = list, time.Now()
	return list, nil
}

// localUser is whom AuthNone serves every request as: DefaultUser, who
// owns every project of the store.
var localUser = User{Name: DefaultUser, Local: true}

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
