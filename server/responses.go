package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/provider/openai"
)

// POST /v1/responses: OpenAI's Responses API, relayed to an upstream
// model server (Options.Upstream) that keeps no state of its own, with
// recall keeping the conversation.
//
// A request that names a conversation ("conversation": "conv_…" or
// {"id": "conv_…"}) of the caller is served as OpenAI serves it: the
// conversation's items (its view, compacted when Options.ContextTokens
// says it is too long) go upstream before the request's input, and when
// the model has answered, the input items and the output items are
// appended to the conversation in one batch, with the turn's usage on
// the last entry. The append is guarded by the conversation's last seq as
// read before the model was asked: when another request on the same
// conversation stored its turn meanwhile, this one stores nothing and
// answers 409 with x-should-retry: false (code "conversation_changed"),
// since its answer was made from a history that is no longer the
// conversation's; sent again, it is answered from the new history. So two
// turns never interleave and nothing is half-stored: each request's turn
// is stored whole or not at all, and the client is told which.
//
// A streamed request ("stream": true) relays the upstream's events as
// they arrive, and holds back the final response.completed event until
// the turn is stored; when the store refuses it, an "error" event goes
// out in its place. A client that goes away before then cancels the
// upstream request and stores nothing.
//
// A request without a conversation is relayed unchanged (translated for
// a Chat Completions upstream) and nothing is stored. "store": false
// stores nothing either. An upstream error is answered with the
// upstream's status and error body (OpenAI's shape); an upstream that
// cannot be reached is a 502. Idempotency-Key is not honoured on this
// route: a model's answer cannot be replayed from a record.

// responseRoutes registers POST /v1/responses when there is an upstream
// to relay to; a server without one does not serve the Responses API, and
// the route is unknown there (404), as any other.
func (s *Server) responseRoutes() {
	if s.up != nil {
		s.mux.HandleFunc("POST /v1/responses", s.api(s.createResponse))
	}
}

// responseRequest is what the proxy reads of a Responses request; the
// rest of the body goes upstream untouched.
type responseRequest struct {
	Conversation       json.RawMessage `json:"conversation"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             *bool           `json:"stream"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
}

// turn is one request on a conversation, between reading its history and
// storing its items.
type turn struct {
	key   recall.Key
	last  int64         // the conversation's last seq when read
	input []recall.Item // the request's input items
	store bool          // false: store nothing
	// ids waits for the own ids of the items of the conversation's view
	// when read, found in the background while the model answers
	// (viewIDs).
	ids func() map[string]bool
}

func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) error {
	var body map[string]json.RawMessage
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	raw, _ := json.Marshal(body)
	var req responseRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return invalidParam("", "Invalid request body: %v", err)
	}
	stream := req.Stream != nil && *req.Stream
	convID, err := conversationParam(req.Conversation)
	if err != nil {
		return err
	}
	var t *turn
	var upItems []recall.Item // the items sent upstream, with a conversation
	if convID != "" {
		if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
			return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "mutually_exclusive_parameters", NoRetry: true,
				Message: "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'."}
		}
		var history []recall.Item
		t, history, err = s.startTurn(r, convID, req)
		if err != nil {
			return err
		}
		upItems = append(history, t.input...)
	}
	res, err := s.up.send(r.Context(), body, t != nil, upItems, stream)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 300:
		return s.relayError(w, r, res)
	case stream && s.up.api == openai.APIChat:
		s.streamChat(w, r, res, body, t)
	case stream:
		s.streamResponses(w, r, res, t)
	default:
		return s.finishResponse(w, r, res, body, t)
	}
	return nil
}

// conversationParam returns the conversation id of a "conversation"
// field: a string, or an object with an "id"; "" when there is none.
func conversationParam(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		if id == "" {
			return "", invalidParam("conversation", "Invalid 'conversation': an empty string.")
		}
		return id, nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.ID == "" {
		return "", invalidParam("conversation", "Invalid 'conversation': expected a conversation id or an object with an 'id'.")
	}
	return obj.ID, nil
}

// inputItems returns the request's input as items: a string is one user
// message; a list is taken item by item, each a JSON object.
func inputItems(raw json.RawMessage) ([]recall.Item, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		b, _ := json.Marshal(map[string]any{
			"type": "message", "role": "user",
			"content": []any{map[string]string{"type": "input_text", "text": text}},
		})
		return []recall.Item{b}, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, invalidParam("input", "Invalid 'input': expected a string or a list of items.")
	}
	items := make([]recall.Item, len(list))
	for i, it := range list {
		t := bytes.TrimSpace(it)
		if len(t) == 0 || t[0] != '{' {
			return nil, invalidParam(fmt.Sprintf("input[%d]", i), "Invalid 'input[%d]': expected an object.", i)
		}
		items[i] = recall.Item(t)
	}
	return items, nil
}

// startTurn reads the conversation the request continues: its history
// (the view, compacted first when it and the input are estimated over
// Options.ContextTokens) and the last seq that guards the turn's append.
func (s *Server) startTurn(r *http.Request, convID string, req responseRequest) (*turn, []recall.Item, error) {
	key, err := s.userConvKey(r, convID)
	if err != nil {
		return nil, nil, asConversationParam(err)
	}
	input, err := inputItems(req.Input)
	if err != nil {
		return nil, nil, err
	}
	ctx := r.Context()
	live, last, err := s.store.Items(ctx, key, 0)
	if err != nil {
		return nil, nil, asConversationParam(notFoundAs(err, key))
	}
	if _, err := s.stat(ctx, key); last == 0 || errors.Is(err, recall.ErrNotFound) {
		return nil, nil, asConversationParam(conversationNotFound(convID))
	}
	if s.overContext(live, input, req.Instructions) && s.opts.Compactor != nil {
		_, err := compact.NewSession(s.store, key, s.opts.Compactor, compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{Force: true})
		if err != nil {
			s.log.ErrorContext(ctx, "compaction before a response failed", "session", key.Session, "err", err)
			return nil, nil, &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "model_error",
				Message: "The conversation is over the server's context limit and could not be compacted."}
		}
		if live, last, err = s.store.Items(ctx, key, 0); err != nil {
			return nil, nil, notFoundAs(err, key)
		}
	}
	ids := viewIDs(live)
	if err := checkInputIDs(ids, input); err != nil {
		return nil, nil, err
	}
	history := make([]recall.Item, len(live), len(live)+len(input)) // room for the input, appended to go upstream
	for i, l := range live {
		history[i] = l.Item
	}
	return &turn{key: key, last: last, input: input, store: req.Store == nil || *req.Store, ids: ids}, history, nil
}

// viewIDs finds the own ids of the items of live in the background and
// returns a func that waits for them. The proxy starts it before it asks
// the model, so that the check that the output's ids are new to the
// conversation costs a map lookup once the answer is in, not a search of
// a long conversation's bytes.
func viewIDs(live []recall.LiveItem) func() map[string]bool {
	found := make(chan map[string]bool, 1)
	go func() {
		ids := map[string]bool{}
		for _, l := range live {
			// Only an item with an "id" key can have one of its own; one
			// with an escape might spell the key with one.
			if !bytes.Contains(l.Item, []byte(`"id"`)) && bytes.IndexByte(l.Item, '\\') < 0 {
				continue
			}
			if id := headOf(l.Item).ownID(); id != "" {
				ids[id] = true
			}
		}
		found <- ids
	}()
	return sync.OnceValue(func() map[string]bool { return <-found })
}

// checkInputIDs keeps the item ids of a conversation unique, as the
// Conversations API does: an input item whose "id" is not a string,
// reserved, repeated, or already in the conversation (view waits for the
// conversation's own ids, see viewIDs) is a 400, before the model is asked.
func checkInputIDs(view func() map[string]bool, input []recall.Item) error {
	ids := map[string]int{}
	for i, it := range input {
		if k, dup := duplicateKey(it); dup {
			return duplicateKeyError(fmt.Sprintf("input[%d]", i), k)
		}
		h := headOf(it)
		if !h.hasID {
			continue
		}
		param := fmt.Sprintf("input[%d].id", i)
		id := h.ownID()
		if err := checkOwnID(param, id); err != nil {
			return err
		}
		if j, dup := ids[id]; dup {
			return invalidParam(param, "Duplicate item id %q: input[%d] has it too.", id, j)
		}
		ids[id] = i
	}
	for id, i := range ids {
		if view()[id] {
			ae := invalidParam(fmt.Sprintf("input[%d].id", i), "An item with id '%s' already exists in this conversation.", shorten(id))
			ae.Code = "duplicate_item_id"
			return ae
		}
	}
	return nil
}

// uniqueOutputIDs returns output with the "id" taken off any item whose
// id is already in the conversation or the turn (an upstream's ids are
// its own business; the conversation's must stay unique), so that the
// Conversations API gives those items derived ids. An item with a member
// named twice is written again first with the last of each, as readers
// take it (see duplicateKey). Other items are kept byte for byte.
func (t *turn) uniqueOutputIDs(output []recall.Item) []recall.Item {
	seen := map[string]bool{}
	for _, it := range t.input {
		if id := headOf(it).ownID(); id != "" {
			seen[id] = true
		}
	}
	out := make([]recall.Item, len(output))
	for i, it := range output {
		if _, dup := duplicateKey(it); dup {
			var m map[string]json.RawMessage
			if json.Unmarshal(it, &m) == nil {
				it, _ = json.Marshal(m)
			}
		}
		out[i] = it
		h := headOf(it)
		if !h.hasID {
			continue
		}
		id := h.ownID()
		if id != "" && !strings.HasPrefix(id, derivedPrefix) && len(id) <= maxItemIDLen && !seen[id] && !t.ids()[id] {
			seen[id] = true
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(it, &m) == nil {
			delete(m, "id")
			out[i], _ = json.Marshal(m)
		}
	}
	return out
}

// asConversationParam names the "conversation" parameter in a 404 of the
// conversation, as OpenAI's Responses API does.
func asConversationParam(err error) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		c := *ae
		c.Param = "conversation"
		return &c
	}
	return err
}

// overContext reports whether the history and input are estimated over
// Options.ContextTokens, at 4 bytes of JSON a token.
func (s *Server) overContext(live []recall.LiveItem, input []recall.Item, instructions *string) bool {
	limit := s.opts.ContextTokens
	if limit <= 0 {
		return false
	}
	n := 0
	for _, l := range live {
		n += len(l.Item)
	}
	for _, it := range input {
		n += len(it)
	}
	if instructions != nil {
		n += len(*instructions)
	}
	return n/4 > limit
}

// commit stores the turn: its input and output items in one batch,
// guarded by the last seq its history was read at, with usage on the last
// entry. It stores nothing for store: false or an empty turn.
func (s *Server) commit(ctx context.Context, t *turn, output []recall.Item, usage recall.Usage) error {
	if t == nil || !t.store {
		return nil
	}
	items := append(append([]recall.Item(nil), t.input...), t.uniqueOutputIDs(output)...)
	if len(items) == 0 {
		return nil
	}
	entries := recall.ItemEntries(items...)
	if !usage.IsZero() {
		entries[len(entries)-1].Usage = &usage
	}
	_, err := s.store.Append(ctx, t.key, recall.IfLastSeq(t.last), entries...)
	switch {
	case errors.Is(err, recall.ErrConflict):
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conversation_changed", Param: "conversation", NoRetry: true,
			Message: "The conversation changed while the model answered (another request on it was stored first), so this turn was not stored; send it again to be answered from the new history."}
	case err != nil:
		return notFoundAs(err, t.key)
	}
	return nil
}

// relayError answers with the upstream's error: its status, and its body
// when that is OpenAI's error shape; otherwise the body's text wrapped in
// that shape. A redirect, which is not followed (see newUpstream), is a
// 502, returned for the caller to answer.
func (s *Server) relayError(w http.ResponseWriter, r *http.Request, res *http.Response) error {
	if res.StatusCode < 400 {
		s.log.WarnContext(r.Context(), "upstream: answered with a redirect, not followed",
			"status", res.StatusCode, "location", res.Header.Get("Location"))
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_redirect",
			Message: "The upstream model server answered with a redirect, which is not followed; the server's upstream address should be its final one."}
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxUpstreamError))
	var shape struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, h := range []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry"} {
		if v := res.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	if json.Unmarshal(b, &shape) == nil && shape.Error != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(b)
		return nil
	}
	typ := "invalid_request_error"
	if res.StatusCode >= 500 {
		typ = "server_error"
	}
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	writeJSON(w, res.StatusCode, map[string]any{"error": map[string]any{
		"message": "upstream: " + msg, "type": typ, "param": nil, "code": "upstream_error",
	}})
	return nil
}

// finishResponse answers a request that was not streamed: it reads the
// upstream's answer, stores the turn and sends the response with the
// conversation echoed.
func (s *Server) finishResponse(w http.ResponseWriter, r *http.Request, res *http.Response, body map[string]json.RawMessage, t *turn) error {
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return s.badUpstream(r, err)
	}
	var resp map[string]json.RawMessage
	var output []recall.Item
	var usage recall.Usage
	storable := true
	if s.up.api == openai.APIChat {
		items, u, err := openai.ChatCompletionItems(b)
		if err != nil {
			return s.badUpstream(r, err)
		}
		output, usage = items, u
		resp = responseObject(body, "completed", items, &usage, newObjectID("resp_"))
	} else {
		if err := json.Unmarshal(b, &resp); err != nil {
			return s.badUpstream(r, err)
		}
		output, usage, storable = readResponse(resp)
	}
	if t != nil && storable {
		if err := s.commit(r.Context(), t, output, usage); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, withConversation(resp, t))
	return nil
}

// readResponse returns the output items and usage of a Responses API
// response object, and whether the turn is to be stored: a response that
// failed or was cancelled is not.
func readResponse(resp map[string]json.RawMessage) ([]recall.Item, recall.Usage, bool) {
	var w struct {
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
		Usage  *recall.Usage     `json:"usage"`
	}
	b, _ := json.Marshal(resp)
	_ = json.Unmarshal(b, &w)
	items := make([]recall.Item, 0, len(w.Output))
	for _, o := range w.Output {
		items = append(items, recall.Item(o))
	}
	var u recall.Usage
	if w.Usage != nil {
		u = *w.Usage
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return items, u, w.Status != "failed" && w.Status != "cancelled"
}

// badUpstream logs why the upstream's answer could not be read (a read
// error may name its address) and returns the client's 502, which does
// not say.
func (s *Server) badUpstream(r *http.Request, err error) *APIError {
	s.log.WarnContext(r.Context(), "upstream: its answer could not be read", "err", err)
	return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "The upstream model server sent an answer that could not be read."}
}
