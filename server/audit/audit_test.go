package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
)

// readAll follows Next to the end and returns every event read and the
// number of calls.
func readAll(t *testing.T, st recall.Store, q Query) ([]Event, int) {
	t.Helper()
	var all []Event
	calls := 0
	for {
		p, err := Read(context.Background(), st, q)
		if err != nil {
			t.Fatalf("Read(%+v): %v", q, err)
		}
		calls++
		if len(p.Events) > max(q.Limit, DefaultLimit) {
			t.Fatalf("a page of %d events, limit %d", len(p.Events), q.Limit)
		}
		all = append(all, p.Events...)
		if p.Next == "" {
			return all, calls
		}
		q.Cursor = p.Next
	}
}

func TestRecordRead(t *testing.T) {
	for name, st := range map[string]recall.Store{
		"mem":  memstore.New(memstore.Options{}),
		"file": mustFile(t),
	} {
		t.Run(name, func(t *testing.T) {
			defer st.Close()
			ctx := context.Background()
			day0 := time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)
			var want []Event // oldest first
			for i := range 30 {
				ev := Event{Time: day0.Add(time.Duration(i) * 7 * time.Hour), Actor: []string{"alice", "bob", "root"}[i%3], Admin: i%3 == 2,
					Action: []string{ActionDelete, ActionExport}[i%2], Session: fmt.Sprintf("conv_%d", i), RequestID: fmt.Sprintf("req_%d", i), Client: "10.0.0.1"}
				if err := Record(ctx, st, ev); err != nil {
					t.Fatal(err)
				}
				ev.Time = ev.Time.UTC()
				want = append(want, ev)
			}
			slices.Reverse(want) // Read is newest first
			days, err := Days(ctx, st)
			if err != nil || len(days) != 10 || days[0] != "2026-12-10" || days[9] != "2026-12-01" {
				t.Fatalf("Days = %v, %v", days, err)
			}

			for _, limit := range []int{1, 4, 50} {
				got, calls := readAll(t, st, Query{Limit: limit})
				if !eventsEqual(got, want) {
					t.Fatalf("limit %d: read %d events %v\nwant %d", limit, len(got), got, len(want))
				}
				if wantCalls := (len(want) + limit - 1) / limit; calls != wantCalls && !(limit == 50 && calls == 1) {
					t.Errorf("limit %d: %d calls, want %d", limit, calls, wantCalls)
				}
			}
			filter := func(keep func(Event) bool) []Event {
				var out []Event
				for _, ev := range want {
					if keep(ev) {
						out = append(out, ev)
					}
				}
				return out
			}
			since, until := day0.Add(40*time.Hour), day0.Add(150*time.Hour)
			for _, tc := range []struct {
				q    Query
				keep func(Event) bool
			}{
				{Query{Actor: "bob", Limit: 2}, func(ev Event) bool { return ev.Actor == "bob" }},
				{Query{Action: ActionExport, Limit: 3}, func(ev Event) bool { return ev.Action == ActionExport }},
				{Query{Session: "conv_7"}, func(ev Event) bool { return ev.Session == "conv_7" }},
				{Query{Since: since, Until: until, Limit: 2}, func(ev Event) bool { return !ev.Time.Before(since) && ev.Time.Before(until) }},
				{Query{Actor: "nobody"}, func(Event) bool { return false }},
			} {
				if got, _ := readAll(t, st, tc.q); !eventsEqual(got, filter(tc.keep)) {
					t.Errorf("%+v: got %v, want %v", tc.q, got, filter(tc.keep))
				}
			}

			// An item that is not an event is skipped.
			if _, err := st.Append(ctx, recall.Key{Project: Project, Session: "2026-12-10"}, recall.Guard{}, recall.ItemEntries(recall.Message("user", "not an event"))...); err != nil {
				t.Fatal(err)
			}
			if got, _ := readAll(t, st, Query{}); !eventsEqual(got, want) {
				t.Errorf("with a foreign item: %d events", len(got))
			}

			n, err := Prune(ctx, st, time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			if err != nil || n != 3 {
				t.Fatalf("Prune = %d, %v; want the 3 days before Dec 4", n, err)
			}
			cut := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
			if got, _ := readAll(t, st, Query{}); !eventsEqual(got, filter(func(ev Event) bool { return !ev.Time.Before(cut) })) {
				t.Errorf("after Prune: %d events", len(got))
			}
		})
	}
}

// TestReadBounded: a filter that matches nothing answers in pages of at
// most MaxScan events examined, each with a cursor, until the end.
func TestReadBounded(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ctx := context.Background()
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	items := make([]recall.Entry, 0, MaxScan+10)
	for i := range MaxScan + 10 {
		b := fmt.Sprintf(`{"type":%q,"time":%q,"actor":"alice","action":"session.export","session":"s%d"}`, itemType, at.Format(time.RFC3339), i)
		items = append(items, recall.ItemEntries(recall.Item(b))...)
	}
	if _, err := st.Append(ctx, recall.Key{Project: Project, Session: "2026-12-06"}, recall.Guard{}, items...); err != nil {
		t.Fatal(err)
	}
	p, err := Read(ctx, st, Query{Actor: "bob"})
	if err != nil || len(p.Events) != 0 || p.Next == "" {
		t.Fatalf("first call: %d events, next %q, %v; want none and a cursor", len(p.Events), p.Next, err)
	}
	p, err = Read(ctx, st, Query{Actor: "bob", Cursor: p.Next})
	if err != nil || len(p.Events) != 0 || p.Next != "" {
		t.Fatalf("second call: %d events, next %q, %v; want none and the end", len(p.Events), p.Next, err)
	}
	// An event past the scan bound is found by the call that goes on.
	if err := Record(ctx, st, Event{Time: at.Add(-time.Hour), Actor: "bob", Action: ActionDelete}); err != nil {
		t.Fatal(err)
	}
	if got, _ := readAll(t, st, Query{Actor: "bob"}); len(got) != 1 || got[0].Action != ActionDelete {
		t.Errorf("bob's events: %v", got)
	}
}

func TestBadInput(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ctx := context.Background()
	if err := Record(ctx, st, Event{Action: ActionDelete}); !errors.Is(err, recall.ErrInvalidItem) {
		t.Errorf("an event without an actor: %v", err)
	}
	for _, c := range []string{"x", "2026-12-06", "2026-13-01@1", "2026-12-06@x", "../x@1"} {
		if _, err := Read(ctx, st, Query{Cursor: c}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
	for _, l := range []int{-1, MaxLimit + 1} {
		if _, err := Read(ctx, st, Query{Limit: l}); !errors.Is(err, recall.ErrInvalidQuery) {
			t.Errorf("limit %d: %v", l, err)
		}
	}
	if p, err := Read(ctx, st, Query{}); err != nil || len(p.Events) != 0 || p.Next != "" {
		t.Errorf("an empty log: %+v, %v", p, err)
	}
}

func mustFile(t *testing.T) recall.Store {
	st, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func eventsEqual(a, b []Event) bool {
	return slices.EqualFunc(a, b, func(x, y Event) bool {
		return x.Time.Equal(y.Time) && x.Actor == y.Actor && x.Admin == y.Admin && x.Action == y.Action &&
			x.User == y.User && x.Session == y.Session && x.RequestID == y.RequestID && x.Client == y.Client
	})
}
