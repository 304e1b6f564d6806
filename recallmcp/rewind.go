package recallmcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
)

// RewindInput is the arguments of rewind_session.
type RewindInput struct {
	ID string `json:"id" jsonschema:"the session: its ID or a unique prefix of it"`
	To string `json:"to" jsonschema:"the item to go back to, by the ref read_session shows (the view keeps it and every item before it); \"0\" empties the view"`
}

// RedoInput is the arguments of redo_session.
type RedoInput struct {
	ID string `json:"id" jsonschema:"the session: its ID or a unique prefix of it"`
}

// ViewChangeOutput is the result of rewind_session and redo_session.
type ViewChangeOutput struct {
	Session SessionInfo `json:"session" jsonschema:"the session as it is now"`
	Items   int         `json:"items" jsonschema:"how many items left the view (rewind) or came back (redo)"`
}

func (s *server) rewind(ctx context.Context, _ *mcp.CallToolRequest, in RewindInput) (*mcp.CallToolResult, ViewChangeOutput, error) {
	var to recall.ItemRef
	if t := strings.TrimSpace(in.To); t != "0" {
		ref, _, ok := parseRef(t)
		if !ok {
			return nil, ViewChangeOutput{}, badArg(`to: %q is not an item ref; read_session shows each item's ref ("12", or "12.3" in a compaction), and "0" empties the view`, in.To)
		}
		to = ref
	}
	m, err := s.resolve(ctx, in.ID)
	if err != nil {
		return nil, ViewChangeOutput{}, err
	}
	n, err := recall.NewSession(s.st, m.Key).Rewind(ctx, to)
	if errors.Is(err, recall.ErrNotFound) {
		return nil, ViewChangeOutput{}, badArg("to: item %s is not in session %s's view; read_session shows the items and their refs", to, m.Key.Session)
	}
	if err != nil {
		return nil, ViewChangeOutput{}, err
	}
	return s.viewChanged(ctx, m.Key, n, fmt.Sprintf("Session %s is rewound: %d items left the view (redo_session brings them back).\n", m.Key.Session, n))
}

func (s *server) redo(ctx context.Context, _ *mcp.CallToolRequest, in RedoInput) (*mcp.CallToolResult, ViewChangeOutput, error) {
	m, err := s.resolve(ctx, in.ID)
	if err != nil {
		return nil, ViewChangeOutput{}, err
	}
	n, err := recall.NewSession(s.st, m.Key).Redo(ctx)
	if errors.Is(err, recall.ErrNothingToRedo) {
		return nil, ViewChangeOutput{}, badArg("session %s has nothing to redo: it was not rewound, or it changed since", m.Key.Session)
	}
	if err != nil {
		return nil, ViewChangeOutput{}, err
	}
	return s.viewChanged(ctx, m.Key, n, fmt.Sprintf("Session %s: %d items are back in the view.\n", m.Key.Session, n))
}

// viewChanged answers a rewind or redo of key with the session as it is
// now.
func (s *server) viewChanged(ctx context.Context, key recall.Key, n int, text string) (*mcp.CallToolResult, ViewChangeOutput, error) {
	m, err := s.st.Stat(ctx, key)
	if err != nil {
		return nil, ViewChangeOutput{}, err
	}
	return textResult(text), ViewChangeOutput{Session: info(m, time.Now()), Items: n}, nil
}
