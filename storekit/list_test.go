package storekit_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

func TestCursorRoundTrip(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		la = time.FixedZone("PST", -8*3600)
	}
	for _, m := range []recall.Meta{
		{Key: recall.Key{Project: "p", Session: "s"}, Updated: time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)},
		{Key: recall.Key{Project: "p", Session: "s", Subpath: "subagents/x"}, Updated: time.Date(2024, 1, 2, 3, 4, 5, 999999999, la)},
		{Key: recall.Key{Project: "-", Session: "..."}},
	} {
		c := storekit.CursorAt(m)
		s := c.String()
		got, err := storekit.ParseCursor(s)
		if err != nil {
			t.Fatalf("ParseCursor(%q): %v", s, err)
		}
		if !got.Updated.Equal(c.Updated) || got.Project != c.Project || got.Session != c.Session || got.Subpath != c.Subpath {
			t.Errorf("cursor round trip: %+v became %+v", c, got)
		}
		// A cursor is positioned at its meta: that meta is on an earlier page.
		if !got.Before(m) {
			t.Errorf("cursor at %s does not count it as before", m.Key)
		}
	}
	for _, bad := range []string{"!!!", "bm90IGpzb24", "e30=", "%%"} {
		if _, err := storekit.ParseCursor(bad); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("ParseCursor(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestCursorBefore(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(p, s string, d time.Duration) recall.Meta {
		return recall.Meta{Key: recall.Key{Project: p, Session: s}, Updated: t0.Add(d)}
	}
	c := storekit.CursorAt(at("p", "m", 0))
	cases := []struct {
		m      recall.Meta
		before bool
	}{
		{at("p", "m", 0), true},                // itself
		{at("p", "a", 0), true},                // same time, earlier ID
		{at("p", "z", 0), false},               // same time, later ID
		{at("a", "z", 0), true},                // same time, earlier project
		{at("q", "a", 0), false},               // same time, later project
		{at("p", "m", time.Microsecond), true}, // newer: earlier page
		{at("p", "m", -time.Microsecond), false},
	}
	for _, tc := range cases {
		if got := c.Before(tc.m); got != tc.before {
			t.Errorf("cursor at p/m: Before(%s at %v) = %t", tc.m.Key, tc.m.Updated.Sub(t0), got)
		}
	}
}

// Walking Paginate's pages visits every meta exactly once in List order,
// for any page size, with many ties on Updated.
func TestPaginateProperty(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "n")
		seen := map[recall.Key]bool{}
		var metas []recall.Meta
		for range n {
			k := recall.Key{
				Project: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "project"),
				Session: rapid.SampledFrom([]string{"1", "2", "3", "4", "5", "6", "7", "8"}).Draw(t, "session"),
				Subpath: rapid.SampledFrom([]string{"", "", "x"}).Draw(t, "subpath"),
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			metas = append(metas, recall.Meta{Key: k, Updated: t0.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "minute")) * time.Minute)})
		}
		limit := rapid.IntRange(-1, 7).Draw(t, "limit")
		want := slices.Clone(metas)
		storekit.SortList(want)

		var got []recall.Meta
		opts := recall.ListOptions{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > n+1 {
				t.Fatalf("more than %d pages", n+1)
			}
			p, err := storekit.Paginate(slices.Clone(metas), opts)
			if err != nil {
				t.Fatal(err)
			}
			eff := limit
			if eff == 0 {
				eff = recall.DefaultListLimit
			}
			if eff > 0 && len(p.Sessions) > eff || p.Next != "" && len(p.Sessions) != eff {
				t.Fatalf("page of %d with limit %d, next %q", len(p.Sessions), limit, p.Next)
			}
			got = append(got, p.Sessions...)
			if p.Next == "" {
				break
			}
			opts.Cursor = p.Next
		}
		if !slices.EqualFunc(got, want, func(a, b recall.Meta) bool { return a.Key == b.Key }) {
			t.Fatalf("pages visit %v, want %v", keys(got), keys(want))
		}
	})
}

func keys(metas []recall.Meta) []recall.Key {
	out := make([]recall.Key, len(metas))
	for i, m := range metas {
		out[i] = m.Key
	}
	return out
}

func TestPaginateCopies(t *testing.T) {
	metas := []recall.Meta{{Key: recall.Key{Project: "p", Session: "s"}, Labels: []string{"a"}, ForkedFrom: &recall.ForkOrigin{Seq: 1}}}
	p, err := storekit.Paginate(metas, recall.ListOptions{})
	if err != nil || len(p.Sessions) != 1 {
		t.Fatal(p, err)
	}
	p.Sessions[0].Labels[0] = "changed"
	p.Sessions[0].ForkedFrom.Seq = 2
	if metas[0].Labels[0] != "a" || metas[0].ForkedFrom.Seq != 1 {
		t.Errorf("Paginate's page shares memory with its input")
	}
	if _, err := storekit.Paginate(metas, recall.ListOptions{Cursor: "garbage!"}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("Paginate with a bad cursor = %v", err)
	}
}

func TestMatch(t *testing.T) {
	main := recall.Meta{Key: recall.Key{Project: "p", Session: "s"}}
	archived := recall.Meta{Key: recall.Key{Project: "p", Session: "a"}, Archived: true}
	sub := recall.Meta{Key: recall.Key{Project: "p", Session: "s", Subpath: "subagents/x"}}
	other := recall.Meta{Key: recall.Key{Project: "q", Session: "s"}}
	cases := []struct {
		m       recall.Meta
		project string
		opts    recall.ListOptions
		want    bool
	}{
		{main, "p", recall.ListOptions{}, true},
		{main, "", recall.ListOptions{}, true},
		{main, "q", recall.ListOptions{}, false},
		{other, "", recall.ListOptions{}, true},
		{archived, "p", recall.ListOptions{}, false},
		{archived, "p", recall.ListOptions{IncludeArchived: true}, true},
		{sub, "p", recall.ListOptions{}, false},
		{sub, "p", recall.ListOptions{Parent: "s"}, true},
		{sub, "p", recall.ListOptions{Parent: "t"}, false},
		{main, "p", recall.ListOptions{Parent: "s"}, false},
	}
	for _, c := range cases {
		if got := storekit.Matches(c.m, c.project, c.opts); got != c.want {
			t.Errorf("Match(%s, %q, %+v) = %t", c.m.Key, c.project, c.opts, got)
		}
	}
}

func TestCheckListOptions(t *testing.T) {
	for _, c := range []struct {
		project string
		opts    recall.ListOptions
		ok      bool
	}{
		{"", recall.ListOptions{}, true},
		{"p", recall.ListOptions{Parent: "s"}, true},
		{"", recall.ListOptions{Parent: "s"}, false},
		{"../p", recall.ListOptions{}, false},
		{"p", recall.ListOptions{Parent: ".."}, false},
		{"p", recall.ListOptions{Parent: "a/b"}, false},
		{"p\x00", recall.ListOptions{}, false},
	} {
		err := storekit.CheckListOptions(c.project, c.opts)
		if c.ok && err != nil || !c.ok && !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("CheckListOptions(%q, %+v) = %v", c.project, c.opts, err)
		}
	}
}

func ExampleParseCursor() {
	m := recall.Meta{Key: recall.Key{Project: "p", Session: "s"}, Updated: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	c, err := storekit.ParseCursor(storekit.CursorAt(m).String())
	fmt.Println(c.Project, c.Session, c.Updated.Format(time.RFC3339), err)
	// Output: p s 2024-01-02T03:04:05Z <nil>
}
