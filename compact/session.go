package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

// DefaultKeepLast is how many of the newest items a compaction keeps
// verbatim when neither agent.CompactionArgs.KeepLast nor
// Options.KeepLast says.
const DefaultKeepLast = 10

// DefaultMaxRetries is how many times a compaction is planned again after
// losing a race with a concurrent write, when Options.MaxRetries is 0.
const DefaultMaxRetries = 5

// Options configure a Session. The zero value works.
type Options struct {
	// KeepLast is the default of agent.CompactionArgs.KeepLast.
	// Default (0): DefaultKeepLast.
	KeepLast int
	// TriggerTokens is the default of agent.CompactionArgs.TriggerTokens:
	// RunCompaction without Force compacts only when the view's estimated
	// tokens (agent.EstimateTokens) exceed it. Default (0): whenever
	// there is anything older than the items kept.
	TriggerTokens int
	// MaxRetries bounds how many times a compaction that lost a race with
	// a concurrent write is planned again. Default (0): DefaultMaxRetries.
	MaxRetries int
}

// Session is a recall.Session of one key in a store that can compact
// itself: it implements agent.CompactionAware with a Compactor. Reads
// and writes go to the store as with recall.NewSession; GetItems returns
// the compacted view.
//
// It has the methods Store and Key, so agent.Run writes through the store
// (recording token usage and titling the session) and can trigger
// compaction (agent.RunOptions.CompactTokens).
type Session struct {
	*recall.StoreSession
	compactor Compactor
	opts      Options
}

var (
	_ recall.Session        = (*Session)(nil)
	_ agent.CompactionAware = (*Session)(nil)
)

// NewSession returns the session of key in store, compacted by c.
func NewSession(store recall.Store, key recall.Key, c Compactor, opts Options) *Session {
	return &Session{StoreSession: recall.NewSession(store, key), compactor: c, opts: opts}
}

// plan is one reading of the session and what to do with it.
type plan struct {
	through int64             // LastSeq the view was read at
	view    []recall.LiveItem // the view at through
	cut     int               // view[:cut] are summarized
}

// RunCompaction implements agent.CompactionAware.
//
// It reads the session's LastSeq, then its view, and plans the cut (see
// Cut). It asks the Compactor for what replaces the older items, and
// appends one compaction entry holding those items and the kept ones,
// guarded by the LastSeq it read. When a write came in between, the store
// refuses the entry (recall.ErrConflict): RunCompaction reads the session
// again and, when the older items are still the same (the usual case: new
// items were appended), keeps the summary and only takes the new items
// in; otherwise it compacts anew. After Options.MaxRetries lost races it
// returns an error wrapping recall.ErrConflict.
//
// A compaction only shrinks: when the compacted view would not take fewer
// estimated tokens (agent.EstimateTokens) than the view, nothing is
// written, and the result says so (NoGain).
func (s *Session) RunCompaction(ctx context.Context, args agent.CompactionArgs) (agent.CompactionResult, error) {
	if s.compactor == nil {
		return agent.CompactionResult{}, fmt.Errorf("compact %s: no compactor", s.Key())
	}
	keep := args.KeepLast
	if keep == 0 {
		keep = s.opts.KeepLast
	}
	if keep == 0 {
		keep = DefaultKeepLast
	}
	trigger := args.TriggerTokens
	if trigger <= 0 {
		trigger = s.opts.TriggerTokens
	}
	retries := s.opts.MaxRetries
	if retries <= 0 {
		retries = DefaultMaxRetries
	}

	var (
		res     agent.CompactionResult
		summary *Result
		older   []recall.LiveItem // what summary stands for
	)
	for attempt := 0; ; attempt++ {
		p, err := s.read(ctx)
		if err != nil {
			return res, err
		}
		items := recall.PlainItems(p.view)
		res = agent.CompactionResult{Before: len(items), After: len(items), Retries: attempt,
			TokensBefore: agent.EstimateTokens(items...), Usage: res.Usage}
		res.TokensAfter = res.TokensBefore
		if !args.Force && trigger > 0 && res.TokensBefore <= trigger {
			return res, nil
		}
		if summary != nil && startsWith(p.view, older) && validCut(items, len(older)) {
			// Only newer items changed: the summary still stands for the
			// same older items.
			p.cut = len(older)
		} else {
			p.cut = Cut(items, keep)
			if p.cut == 0 {
				return res, nil
			}
			older = slices.Clone(p.view[:p.cut])
			summary, err = s.compactor.Compact(ctx, &Request{Items: recall.CloneItems(items[:p.cut]), Instructions: args.Instructions})
			if err != nil {
				return res, fmt.Errorf("compact %s: %w", s.Key(), err)
			}
			res.Usage.Add(summary.Usage)
		}

		kept := items[p.cut:]
		c := recall.Compaction{
			Through:  p.through,
			Replaced: len(items),
			Items:    append(recall.CloneItems(summary.Items), recall.CloneItems(kept)...),
			Strategy: summary.Strategy,
		}
		if t := agent.EstimateTokens(c.Items...); t >= res.TokensBefore {
			// Compaction only shrinks: a summary as long as what it
			// replaces (a third compaction of a short session) is not
			// written.
			res.NoGain, res.TokensWouldBe = true, t
			res.Summarized, res.Kept = p.cut, len(kept)
			res.Strategy = summary.Strategy
			return res, nil
		}
		e := recall.NewEntry(recall.KindCompaction, c)
		if u := summary.Usage; !u.IsZero() {
			e.Usage = &u
		}
		// The guard is the compare-and-swap: the entry is written only if
		// nothing was appended since the view was read.
		seq, err := s.Store().Append(ctx, s.Key(), recall.IfLastSeq(p.through), e)
		if errors.Is(err, recall.ErrConflict) && attempt < retries {
			// A write came in after the read: read again. The usage of a
			// summary made for nothing is still reported.
			continue
		}
		if err != nil {
			return res, fmt.Errorf("compact %s: %w", s.Key(), err)
		}
		res.Compacted, res.Seq = true, seq
		res.Summarized, res.Kept = p.cut, len(kept)
		res.After = len(c.Items)
		res.TokensAfter = agent.EstimateTokens(c.Items...)
		res.Strategy = summary.Strategy
		return res, nil
	}
}

// read returns the session's view together with the LastSeq it was read
// at (Store.Items reads both as one snapshot), which guards the
// compaction entry.
func (s *Session) read(ctx context.Context) (plan, error) {
	view, last, err := s.Store().Items(ctx, s.Key(), 0)
	if err != nil {
		return plan{}, fmt.Errorf("compact %s: %w", s.Key(), err)
	}
	return plan{through: last, view: view}, nil
}

// startsWith reports whether view begins with exactly the items of
// prefix, refs included.
func startsWith(view, prefix []recall.LiveItem) bool {
	return len(view) >= len(prefix) && slices.EqualFunc(view[:len(prefix)], prefix, func(a, b recall.LiveItem) bool {
		return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item)
	})
}

// validCut reports whether cutting items at cut keeps pairs together, as
// Cut would.
func validCut(items []recall.Item, cut int) bool {
	return cut > 0 && Cut(items, len(items)-cut) == cut
}
