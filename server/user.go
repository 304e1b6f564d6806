package server

import "context"

// User is who a request is served as.
type User struct {
	Name  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
}

// Project is the store project that holds the user's sessions.
func (u User) Project() string { return "user." + u.Name }

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
