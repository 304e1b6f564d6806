package filestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
)

// BenchmarkListAmongProjects: the List of a 4-session project by a newly
// opened store (as each "recall ls" is) costs the same in a home where it
// is alone (base) as in one with 24 other projects of 100 sessions each
// (op): listing one project reads only its directory. x-base near 1.
func BenchmarkListAmongProjects(b *testing.B) {
	ctx := context.Background()
	seed := func(others int) string {
		home := benchDir(b)
		s, err := filestore.Open(filestore.Options{Dir: home})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		create := func(project string, n int) {
			for i := range n {
				key := recall.Key{Project: project, Session: fmt.Sprintf("s%04d", i)}
				if _, err := recall.NewSession(s, key).Create(ctx, recall.CreateOptions{Items: []recall.Item{item500(i)}}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.List(ctx, project, recall.ListOptions{Limit: -1}); err != nil {
				b.Fatal(err)
			}
		}
		create("p", 4)
		for o := range others {
			create(fmt.Sprintf("other%02d", o), 100)
		}
		return home
	}
	list := func(home string) func() {
		return func() {
			s, err := filestore.Open(filestore.Options{Dir: home})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if page, err := s.List(ctx, "p", recall.ListOptions{}); err != nil || len(page.Sessions) != 4 {
				b.Fatalf("List = %d sessions, %v; want 4", len(page.Sessions), err)
			}
		}
	}
	alone, crowded := seed(0), seed(24)
	defer reportCPU(b)()
	testkit.Paired(b, list(alone), list(crowded))
}
