package server_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// A token is made once, printed once, and kept only as its hash: every
// server over the same store accepts it until it is revoked.
func ExampleCreateToken() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	token, info, err := server.CreateToken(ctx, store, "ada", false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(token, server.TokenPrefix), info.User, len(info.ID))

	u, err := server.Authenticate(ctx, store, token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.Name, u.Project())

	if _, err := server.RevokeToken(ctx, store, info.ID); err != nil {
		log.Fatal(err)
	}
	_, err = server.Authenticate(ctx, store, token)
	fmt.Println(errors.Is(err, server.ErrUnauthorized))
	// Output:
	// true ada 12
	// ada user.ada
	// true
}

// The store projects of a user's namespace: the default one, which holds
// the Conversations API's conversations, and the project a session synced
// from a home keeps, which ProjectOwner reads back.
func ExampleUserProject() {
	def, _ := server.UserProject("alice", "")
	src, _ := server.UserProject("alice", "-home-alice-src")
	fmt.Println(def)
	fmt.Println(src)
	fmt.Println(server.ProjectOwner(src))
	_, _, ok := server.ProjectOwner(server.TokenProject)
	fmt.Println(ok)
	// Output:
	// user.alice
	// users.5.alice.-home-alice-src
	// alice -home-alice-src true
	// false
}
