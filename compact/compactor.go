package compact

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

// Compactor turns the older part of a conversation into something
// shorter that stands for it in the session's view.
type Compactor interface {
	// Compact returns the items that replace req.Items. It must not
	// modify req.Items. An error that wraps recall.ErrUnsupported means
	// this compactor cannot work here (a server without the compact
	// endpoint); Fallback then tries the next one.
	Compact(ctx context.Context, req *Request) (*Result, error)
}

// Request is what a Compactor is asked to compact.
type Request struct {
	// Items are the older items, oldest first. They never split a call
	// from its output, nor a reasoning item from the item after it (see
	// Cut). Read-only.
	Items []recall.Item
	// Instructions is extra guidance for the summary, from
	// agent.CompactionArgs.Instructions; "" for none.
	Instructions string
}

// Result is what a Compactor produced.
type Result struct {
	// Items replace Request.Items in the view: a summary message, or the
	// opaque items a server's compact endpoint returns.
	Items []recall.Item
	// Usage is the token usage of the model calls made.
	Usage recall.Usage
	// Strategy names the compactor ("summary", "openai"); it is recorded
	// in the compaction entry.
	Strategy string
}

// Endpoint is a server that compacts a conversation itself, such as the
// OpenAI Responses API's POST /v1/responses/compact. *openai.Model (in
// provider/openai) implements it.
type Endpoint interface {
	// CompactItems returns the items that stand for items, and the usage
	// of the call. It returns an error wrapping recall.ErrUnsupported when
	// the server has no such endpoint.
	CompactItems(ctx context.Context, instructions string, items []recall.Item) ([]recall.Item, recall.Usage, error)
}

// Server returns a Compactor that uses e, recording strategy "openai" (or
// the given name). Once e has answered recall.ErrUnsupported, the
// compactor answers it at once, without asking the server again.
func Server(e Endpoint, name ...string) Compactor {
	s := &server{e: e, name: "openai"}
	if len(name) > 0 && name[0] != "" {
		s.name = name[0]
	}
	return s
}

type server struct {
	e           Endpoint
	name        string
	unsupported atomic.Bool
}

func (s *server) Compact(ctx context.Context, req *Request) (*Result, error) {
	if s.unsupported.Load() {
		return nil, fmt.Errorf("compact: %s: %w", s.name, recall.ErrUnsupported)
	}
	// The endpoint is a model call: an output whose call it cannot see is
	// refused there, as anywhere. Cut never splits a pair, so only pairs
	// that were broken already are dropped.
	items, usage, err := s.e.CompactItems(ctx, req.Instructions, agent.TrimOrphans(req.Items))
	if errors.Is(err, recall.ErrUnsupported) {
		s.unsupported.Store(true)
	}
	if err != nil {
		return nil, fmt.Errorf("compact: %s: %w", s.name, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("compact: %s: the server returned no items", s.name)
	}
	if err := recall.ValidateItems(items, 0); err != nil {
		return nil, fmt.Errorf("compact: %s: %w", s.name, err)
	}
	return &Result{Items: items, Usage: usage, Strategy: s.name}, nil
}

// Fallback returns a Compactor that tries each of cs in turn and moves on
// when one fails with recall.ErrUnsupported, so that a server's compact
// endpoint is used where the server offers it and a summary is made
// elsewhere:
//
//	compact.Fallback(compact.Server(model), &compact.Summarizer{Model: model})
func Fallback(cs ...Compactor) Compactor { return fallback(cs) }

type fallback []Compactor

func (f fallback) Compact(ctx context.Context, req *Request) (*Result, error) {
	err := fmt.Errorf("compact: no compactor: %w", recall.ErrUnsupported)
	for _, c := range f {
		var res *Result
		if res, err = c.Compact(ctx, req); !errors.Is(err, recall.ErrUnsupported) {
			return res, err
		}
	}
	return nil, err
}
