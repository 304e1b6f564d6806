package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// sliceStore serves sessions held in memory exactly as they were built,
// damaged entries and all, through the reads an export makes (Stat,
// Entries, List, Load), and counts them. Any other method is a nil
// interface call: the test panics.
type sliceStore struct {
	recall.Store
	sessions map[recall.Key]*export.Session
	entries  int // Entries calls
	longest  int // most entries one Entries call returned
	loads    int // Load calls
}

func newSliceStore(ss ...*export.Session) *sliceStore {
	st := &sliceStore{sessions: map[recall.Key]*export.Session{}}
	for _, s := range ss {
		st.sessions[s.Meta.Key] = s
		for _, sub := range s.Subagents {
			st.sessions[sub.Meta.Key] = sub
		}
	}
	return st
}

func (st *sliceStore) get(key recall.Key) (*export.Session, error) {
	s, ok := st.sessions[key]
	if !ok {
		return nil, fmt.Errorf("slice store: %s: %w", key, recall.ErrNotFound)
	}
	return s, nil
}

func (st *sliceStore) Stat(_ context.Context, key recall.Key) (recall.Meta, error) {
	s, err := st.get(key)
	if err != nil {
		return recall.Meta{}, err
	}
	return s.Meta, nil
}

func (st *sliceStore) Load(_ context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	st.loads++
	s, err := st.get(key)
	if err != nil {
		return recall.Meta{}, nil, err
	}
	return s.Meta, s.Entries, nil
}

func (st *sliceStore) Entries(_ context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	st.entries++
	s, err := st.get(key)
	if err != nil {
		return nil, err
	}
	i, _ := slices.BinarySearchFunc(s.Entries, after+1, func(e recall.Entry, seq int64) int { return int(e.Seq - seq) })
	es := s.Entries[i:]
	if limit > 0 && len(es) > limit {
		es = es[:limit]
	}
	st.longest = max(st.longest, len(es))
	return slices.Clone(es), nil
}

func (st *sliceStore) List(_ context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	var p recall.Page
	for k, s := range st.sessions {
		if k.Project == project && k.Session == opts.Parent && k.Subpath != "" {
			p.Sessions = append(p.Sessions, s.Meta)
		}
	}
	return p, nil
}

// exportBoth renders s in format f from memory (Write) and from st
// (Stream, reading page entries at a time), and fails the test unless
// both give the same bytes, or the same error. It returns the bytes.
func exportBoth(t *testing.T, st recall.Store, s *export.Session, f export.Format, page int) []byte {
	t.Helper()
	var want, got bytes.Buffer
	werr := export.Write(&want, f, s)
	gerr := export.StreamPaged(context.Background(), &got, f, st, s.Meta.Key, page)
	switch {
	case (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error():
		t.Fatalf("%s %s: Stream error %v, Write error %v", s.Meta.Key, f, gerr, werr)
	case werr != nil && got.Len() > 0:
		t.Fatalf("%s %s: Stream failed (%v) after writing %d bytes; it checks before writing", s.Meta.Key, f, gerr, got.Len())
	case !bytes.Equal(want.Bytes(), got.Bytes()):
		t.Fatalf("%s %s: Stream differs from Write:\n--- Stream\n%s\n--- Write\n%s", s.Meta.Key, f, got.Bytes(), want.Bytes())
	}
	return got.Bytes()
}

// streamCases are sessions of every shape: the fixture, hostile content,
// an empty one, and random logs of compactions, pops and removes (of
// items in the view, gone or not written yet), clears, damaged items and
// subagent records.
func streamCases() []*export.Session {
	ss := []*export.Session{
		fixture(),
		hostileSession(),
		newLog(recall.Key{Project: "p", Session: "empty"}).add(recall.KindCreate, "").session(),
	}
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		key := recall.Key{Project: "p", Session: fmt.Sprintf("r%d", seed)}
		ss = append(ss, randomSession(rng, key, 2+rng.IntN(90), seed%5 == 0))
	}
	return ss
}

// Stream writes the bytes Write writes for the same session, in every
// format, whatever the page size, reading the log only a page at a time.
func TestStreamMatchesWrite(t *testing.T) {
	cases := streamCases()
	st := newSliceStore(cases...)
	for _, size := range []int{1, 2, 7, 512} {
		t.Run(fmt.Sprint("page", size), func(t *testing.T) {
			st.longest = 0
			for _, s := range cases {
				for _, f := range export.Formats {
					exportBoth(t, st, s, f, size)
				}
			}
			if st.loads > 0 || st.longest > size {
				t.Errorf("Stream called Load %d times, and Entries returned up to %d entries at once; want none and at most %d", st.loads, st.longest, size)
			}
		})
	}
}

// The history read a page at a time, from marks, is the history defined
// on the whole log; the JSON written from marks is the view Replay gives.
func TestHistoryMatchesModel(t *testing.T) {
	for seed := range 400 {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		s := randomLog(rng, recall.Key{Project: "p", Session: "m"}, 2+rng.IntN(150), seed%3 == 0)
		got, err := export.History(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := export.HistoryModel(s); !slices.Equal(got, want) {
			t.Fatalf("seed %d: history differs from the model:\n got %s\nwant %s", seed, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
		var b bytes.Buffer
		err = export.JSON(&b, s)
		want, werr := export.JSONModel(s)
		if fmt.Sprint(err) != fmt.Sprint(werr) || err == nil && !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("seed %d: JSON %s (%v), the model %s (%v)", seed, b.Bytes(), err, want, werr)
		}
	}
}

// Every store streams what export.Load reads from it, a few entries at a
// time.
func TestStreamEveryStore(t *testing.T) {
	ctx := context.Background()
	sessions := []*export.Session{fixture()}
	for seed := range 4 {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		sessions = append(sessions, randomSession(rng, recall.Key{Project: "p", Session: fmt.Sprintf("s%d", seed)}, 40, false))
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			st := tg.open(t)
			for _, s := range sessions {
				for _, rec := range append([]*export.Session{s}, s.Subagents...) {
					if _, err := export.Import(ctx, st, rec, export.ImportOptions{}); err != nil {
						t.Fatalf("import %s: %v", rec.Meta.Key, err)
					}
				}
				loaded, err := export.Load(ctx, st, s.Meta.Key)
				if err != nil {
					t.Fatal(err)
				}
				if len(loaded.Subagents) != len(s.Subagents) {
					t.Fatalf("%s: %d subagent records loaded, %d imported", s.Meta.Key, len(loaded.Subagents), len(s.Subagents))
				}
				for _, f := range export.Formats {
					exportBoth(t, st, loaded, f, 3)
				}
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// What Stream reads first fails before anything is written; a writer
// that fails stops the reading.
func TestStreamErrors(t *testing.T) {
	ctx := context.Background()
	s := benchSession(3000)
	st := newSliceStore(s)
	for _, f := range export.Formats {
		var out bytes.Buffer
		err := export.Stream(ctx, &out, f, st, recall.Key{Project: "bench", Session: "missing"})
		if !errors.Is(err, recall.ErrNotFound) || out.Len() > 0 {
			t.Errorf("%s of a missing session: %v after %d bytes, want recall.ErrNotFound before any", f, err, out.Len())
		}
	}
	if err := export.Stream(ctx, &bytes.Buffer{}, "md", st, s.Meta.Key); !errors.Is(err, export.ErrUnknownFormat) {
		t.Errorf("format md: %v, want ErrUnknownFormat", err)
	}
	gone := errors.New("the reader went away")
	for _, f := range export.Formats {
		st.entries = 0
		err := export.StreamPaged(ctx, failWriter{gone}, f, st, s.Meta.Key, 10)
		if !errors.Is(err, gone) {
			t.Errorf("%s to a failing writer: %v, want its error", f, err)
		}
		// The log is 300 pages; all but JSONL read it once before they
		// write. The writer fails at the first 64 KB, some 7 pages in.
		limit := 300 + 20
		if f == export.FormatJSONL {
			limit = 20
		}
		if st.entries > limit {
			t.Errorf("%s read %d pages; its writer failed after some 7 of the second reading", f, st.entries)
		}
	}
}

// Entries appended after Stream read the metadata are left out: the
// header and the history describe the same log.
func TestStreamStopsAtLastSeq(t *testing.T) {
	s := fixture()
	cut := s.Meta.LastSeq - 6
	before := newLog(s.Meta.Key)
	before.entries = s.Entries[:cut]
	early := before.session()
	early.Subagents = s.Subagents
	st := newSliceStore(s)
	st.sessions[s.Meta.Key] = &export.Session{Meta: early.Meta, Entries: s.Entries}
	for _, f := range export.Formats {
		exportBoth(t, st, early, f, 4)
	}
}

// StreamRecord writes what Stream writes for a session, less the
// subagent records that follow it.
func TestStreamRecord(t *testing.T) {
	ctx := context.Background()
	for _, s := range streamCases() {
		st := newSliceStore(s)
		for _, f := range export.Formats {
			var all, alone bytes.Buffer // Stream's, StreamRecord's
			if err := export.Stream(ctx, &all, f, st, s.Meta.Key); err != nil {
				continue // JSON refuses a view with an invalid item; TestStreamMatchesWrite checks that
			}
			if err := export.StreamRecord(ctx, &alone, f, st, s.Meta.Key); err != nil {
				t.Fatalf("%s %s: %v", s.Meta.Key, f, err)
			}
			want := all.Bytes()
			if len(s.Subagents) > 0 {
				var sub bytes.Buffer
				if err := export.Write(&sub, f, &export.Session{Meta: s.Meta, Entries: s.Entries}); err != nil {
					t.Fatal(err)
				}
				want = sub.Bytes()
			}
			if !bytes.Equal(alone.Bytes(), want) {
				t.Fatalf("%s %s: StreamRecord wrote\n%s\nwant\n%s", s.Meta.Key, f, alone.Bytes(), want)
			}
		}
	}
}
