package sessionref

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// seed creates sessions with the given keys and titles ("" for none).
func seed(t *testing.T, sessions ...[3]string) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	for _, s := range sessions {
		key := recall.Key{Project: s[0], Session: s[1]}
		if err := recall.NewSession(st, key).AddItems(ctx, recall.Message("user", "hi")); err != nil {
			t.Fatal(err)
		}
		if s[2] != "" {
			if _, err := recall.NewSession(st, key).SetTitle(ctx, s[2], recall.TitleUser); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st
}

func TestResolve(t *testing.T) {
	st := seed(t,
		[3]string{"p1", "0199aaaa-1111", "Parser work"},
		[3]string{"p1", "0199aaaa-2222", "Docs"},
		[3]string{"p2", "0199bbbb-1111", "Docs"},
		[3]string{"p2", "0199aaaa-2222", "Same ID elsewhere"},
		[3]string{"p2", "cafe", "0199"},
	)
	ctx := context.Background()
	tests := []struct {
		name, project, ref string
		want               string // "project/session", or "" for an error
		wantErr            error
	}{
		{"full ID", "p1", "0199aaaa-1111", "p1/0199aaaa-1111", nil},
		{"full ID in two projects prefers the current one", "p2", "0199aaaa-2222", "p2/0199aaaa-2222", nil},
		{"full ID in two projects from a third is ambiguous", "p3", "0199aaaa-2222", "", ErrAmbiguous},
		{"project/ID", "p3", "p1/0199aaaa-2222", "p1/0199aaaa-2222", nil},
		{"unique prefix", "p3", "0199b", "p2/0199bbbb-1111", nil},
		{"prefix unique only in the current project", "p1", "0199aaaa-1", "p1/0199aaaa-1111", nil},
		{"ambiguous prefix", "p1", "0199aaaa", "", ErrAmbiguous},
		{"exact title", "p3", "Parser work", "p1/0199aaaa-1111", nil},
		{"title in two projects prefers the current one", "p2", "Docs", "p2/0199bbbb-1111", nil},
		{"title in two projects from a third is ambiguous", "p3", "Docs", "", ErrAmbiguous},
		{"a title beats an ID prefix", "p3", "0199", "p2/cafe", nil},
		{"title match is exact", "p3", "parser work", "", recall.ErrNotFound},
		{"no match", "p1", "zzz", "", recall.ErrNotFound},
		{"empty", "p1", " ", "", recall.ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Resolve(ctx, st, tt.project, tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%q) = %v, %v; want error %v", tt.ref, m.Key, err, tt.wantErr)
				}
				return
			}
			if err != nil || m.Key.String() != tt.want {
				t.Fatalf("Resolve(%q) = %v, %v; want %s", tt.ref, m.Key, err, tt.want)
			}
		})
	}
}

func TestResolveAmbiguousListsMatches(t *testing.T) {
	st := seed(t, [3]string{"p", "abc1", ""}, [3]string{"p", "abc2", ""})
	_, err := Resolve(context.Background(), st, "p", "abc")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Matches) != 2 {
		t.Fatalf("err = %v, want an AmbiguousError with 2 matches", err)
	}
}

// TestMatch checks Match among sessions the caller chose: only those are
// candidates, and an ambiguous reference lists its matches in their order.
func TestMatch(t *testing.T) {
	metas := []recall.Meta{
		{Key: recall.Key{Project: "p", Session: "abc2"}, Title: "Docs"},
		{Key: recall.Key{Project: "p", Session: "abc1"}},
	}
	if m, err := Match(metas, "p", "Docs"); err != nil || m.Key.Session != "abc2" {
		t.Errorf("Match of a title = %v, %v", m.Key, err)
	}
	if m, err := Match(metas, "p", "abc1"); err != nil || m.Key.Session != "abc1" {
		t.Errorf("Match of an ID = %v, %v", m.Key, err)
	}
	var amb *AmbiguousError
	if _, err := Match(metas, "p", "abc"); !errors.As(err, &amb) || !errors.Is(err, ErrAmbiguous) ||
		len(amb.Matches) != 2 || amb.Matches[0].Key.Session != "abc2" || amb.Matches[1].Key.Session != "abc1" {
		t.Errorf("Match of a shared prefix = %v, want an AmbiguousError listing abc2 then abc1", err)
	}
	if _, err := Match(metas, "p", "0199aaaa"); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("Match of a session not among metas = %v, want ErrNotFound", err)
	}
}

func TestResolveFindsArchived(t *testing.T) {
	st := seed(t, [3]string{"p", "abc1", "old"})
	key := recall.Key{Project: "p", Session: "abc1"}
	if _, err := recall.NewSession(st, key).ChangeMeta(context.Background(), recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	if m, err := Resolve(context.Background(), st, "p", "old"); err != nil || m.Key != key {
		t.Fatalf("Resolve of an archived session = %v, %v", m.Key, err)
	}
}

func TestAllFollowsPages(t *testing.T) {
	var ss [][3]string
	for range 2500 {
		ss = append(ss, [3]string{"p", recall.NewSessionID(), ""})
	}
	st := seed(t, ss...)
	all, err := All(context.Background(), st, "p", false)
	if err != nil || len(all) != len(ss) {
		t.Fatalf("All = %d sessions, %v; want %d", len(all), err, len(ss))
	}
}

func TestShortIDs(t *testing.T) {
	ids := []string{
		"0199aaaa-1111-7000",
		"0199aaaa-1112-7000",
		"0199bbbb-0000-7000",
		"0199aaaa-1111-7000", // listed twice: the same session
		"short",
		"0199aaaa-2000-7000",
	}
	got := ShortIDs(ids)
	want := []string{"0199aaaa-1111", "0199aaaa-1112", "0199bbbb", "0199aaaa-1111", "short", "0199aaaa-2"}
	for i := range ids {
		if got[i] != want[i] {
			t.Errorf("ShortIDs[%d] (%s) = %q, want %q", i, ids[i], got[i], want[i])
		}
	}
	// Every short ID resolves back to its own ID among the set.
	for i, s := range got {
		n := 0
		seen := map[string]bool{}
		for _, id := range ids {
			if strings.HasPrefix(id, s) && !seen[id] {
				seen[id] = true
				n++
			}
		}
		if n != 1 {
			t.Errorf("short ID %q of %s matches %d IDs", s, ids[i], n)
		}
	}
}

func TestShortIDsOfUUIDv7(t *testing.T) {
	// Sessions created in the same millisecond share a long prefix.
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = recall.NewSessionID()
	}
	for i, s := range ShortIDs(ids) {
		if len(s) < MinShortID || !strings.HasPrefix(ids[i], s) || strings.HasSuffix(s, "-") {
			t.Fatalf("short ID %q of %s", s, ids[i])
		}
		for j, id := range ids {
			if j != i && strings.HasPrefix(id, s) {
				t.Fatalf("short ID %q of %s also prefixes %s", s, ids[i], id)
			}
		}
	}
}

// TestShortIDsOfNewIDs: sessions created together (the same minute, the
// same millisecond even) have 8-character short IDs, and the first 8
// characters of each full ID resolve it, save where two IDs really share
// them: then the error lists both. Old UUIDv7 IDs of one minute, which
// share their first 8 characters, still resolve by their full ID and a
// longer prefix.
func TestShortIDsOfNewIDs(t *testing.T) {
	ctx := context.Background()
	var ss [][3]string
	for range 300 {
		ss = append(ss, [3]string{"p", recall.NewSessionID(), ""})
	}
	// A pair that really shares its first 8 characters, and two old IDs
	// of the same minute.
	twinA, twinB := "abcdef01-1111-4111-8111-111111111111", "abcdef01-2222-4222-8222-222222222222"
	oldA, oldB := "019ad1f2-3b4c-7d5e-8f60-718293a4b5c6", "019ad1f2-9e8d-7c6b-8a59-483726150f1e"
	ss = append(ss, [3]string{"p", twinA, ""}, [3]string{"q", twinB, ""}, [3]string{"p", oldA, ""}, [3]string{"p", oldB, ""})
	st := seed(t, ss...)
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s[1]
	}
	short := ShortIDs(ids)
	for i, s := range ss {
		id := s[1]
		switch id {
		case twinA, twinB, oldA, oldB:
			if len(short[i]) <= MinShortID {
				t.Errorf("short ID of %s = %q, shared with another ID", id, short[i])
			}
		default:
			if short[i] != id[:MinShortID] {
				t.Errorf("short ID of %s = %q, want its first 8 characters", id, short[i])
			}
		}
		if id == twinA || id == twinB || id == oldA || id == oldB {
			continue
		}
		m, err := Resolve(ctx, st, "", id[:8])
		if err != nil || m.Key.Session != id {
			t.Errorf("Resolve(%q) = %s, %v; want %s", id[:8], m.Key, err, id)
		}
	}
	for _, id := range []string{oldA, oldB} {
		for _, ref := range []string{id, ShortIDs(ids)[slices.Index(ids, id)]} {
			if m, err := Resolve(ctx, st, "p", ref); err != nil || m.Key.Session != id {
				t.Errorf("Resolve(%q) = %s, %v; want %s", ref, m.Key, err, id)
			}
		}
	}
	_, err := Resolve(ctx, st, "", "abcdef01")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Matches) != 2 || !strings.Contains(err.Error(), twinA) || !strings.Contains(err.Error(), twinB) {
		t.Errorf("Resolve of a shared prefix = %v; want an AmbiguousError naming %s and %s", err, twinA, twinB)
	}
}
