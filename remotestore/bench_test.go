package remotestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server"
)

// BenchmarkRemote measures a remote Append of one item and a List page of
// 50 sessions against the same operations on the server's store used
// directly, in the same run: the ratio is the cost of the HTTP round trip
// and the namespace (a loopback connection, so no network latency).
func BenchmarkRemote(b *testing.B) {
	for _, be := range backends {
		st := be.open(b)
		srv := serve(b, st, server.Options{Auth: server.AuthToken})
		rs := newUser(b, srv, st, server.TokenOptions{})
		ctx := context.Background()
		item := recall.Item(`{"type":"message","role":"user","content":"a remote append of one short message"}`)
		for i := range 60 {
			if _, err := rs.Append(ctx, recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}, recall.Guard{}, item.Entry()); err != nil {
				b.Fatal(err)
			}
		}
		me, err := rs.Me(ctx)
		if err != nil {
			b.Fatal(err)
		}
		project, err := server.UserProject(me.User, "p")
		if err != nil {
			b.Fatal(err)
		}
		stores := []struct {
			name    string
			st      recall.Store
			project string
		}{{"direct", st, project}, {"remote", rs, "p"}}
		for _, s := range stores {
			b.Run(be.name+"/Append/"+s.name, func(b *testing.B) {
				key := recall.Key{Project: s.project, Session: "append-" + s.name}
				for b.Loop() {
					if _, err := s.st.Append(ctx, key, recall.Guard{}, item.Entry()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(be.name+"/List50/"+s.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := s.st.List(ctx, s.project, recall.ListOptions{Limit: 50}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
