package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server/audit"
)

// OpenAI's Conversations API, over the store.
//
// A conversation is a session of the user's project (User.Project) whose
// ID is the conversation id, "conv_" and 48 hex digits for the ones this
// API creates; any valid recall session ID of the project is served, so
// sessions made by other means (a fork, the CLI) are conversations too.
// Another user's conversation lives in another project, so it is simply
// not found: a 404 on every route, never a 403.
//
// Items are served as conversations_items.go describes. Lists come newest first by
// default. Listing the newest page (order=desc without after) reads only
// limit+1 items; a page after a cursor reads the newest items until the
// cursor and the page are covered (growing the read fourfold each time),
// so it costs the distance from the newest item; order=asc without a
// cursor reads the whole view, as its first page is the oldest items.

// conversationRoutes registers OpenAI's Conversations API under /v1.
func (s *Server) conversationRoutes() {
	s.mux.HandleFunc("POST /v1/conversations", s.api(s.idempotent(s.createConversation)))
	s.mux.HandleFunc("GET /v1/conversations/{conversation_id}", s.api(s.getConversation))
	s.mux.HandleFunc("POST /v1/conversations/{conversation_id}", s.api(s.idempotent(s.updateConversation)))
	s.mux.HandleFunc("DELETE /v1/conversations/{conversation_id}", s.api(s.deleteConversation))
	s.mux.HandleFunc("POST /v1/conversations/{conversation_id}/items", s.api(s.idempotent(s.addItems)))
	s.mux.HandleFunc("GET /v1/conversations/{conversation_id}/items", s.api(s.listItems))
	s.mux.HandleFunc("GET /v1/conversations/{conversation_id}/items/{item_id}", s.api(s.getItem))
	s.mux.HandleFunc("DELETE /v1/conversations/{conversation_id}/items/{item_id}", s.api(s.deleteItem))
}

// conversation is OpenAI's Conversation object.
type conversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

func conversationOf(m recall.Meta) conversation {
	md := m.Metadata
	if md == nil {
		md = map[string]string{} // OpenAI sends {} rather than null
	}
	return conversation{ID: m.Key.Session, Object: "conversation", CreatedAt: m.Created.Unix(), Metadata: md}
}

// newConversationID returns "conv_" and 48 random hex digits.
func newConversationID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "conv_" + hex.EncodeToString(b)
}

// convKey returns the key of the conversation the request names, in the
// user's project. An id that is not a valid session ID (a "../", a NUL, a
// slash, too long) cannot name a conversation: it is a 404, and never
// reaches the store.
// A conversation in the trash (a DELETE put it there) is a 404 on every
// route, as a missing one.
func (s *Server) convKey(r *http.Request) (recall.Key, error) {
	key, err := s.userConvKey(r, r.PathValue("conversation_id"))
	if err != nil {
		return key, err
	}
	if _, err := s.stat(r.Context(), key); err != nil && !errors.Is(err, recall.ErrNotFound) || isTrashed(err) {
		return recall.Key{}, notFoundAs(err, key)
	}
	return key, nil
}

// userConvKey returns the key of the user's conversation id.
func (s *Server) userConvKey(r *http.Request, id string) (recall.Key, error) {
	u, ok := userFrom(r.Context())
	if !ok {
		return recall.Key{}, &APIError{Status: http.StatusUnauthorized, Message: "No user for this request.", Type: "invalid_request_error", Code: "invalid_api_key"}
	}
	if recall.ValidateID(id) != nil {
		return recall.Key{}, conversationNotFound(id)
	}
	return recall.Key{Project: u.Project(), Session: id}, nil
}

func conversationNotFound(id string) *APIError {
	return &APIError{
		Status:  http.StatusNotFound,
		Message: "Conversation with id '" + shorten(id) + "' not found.",
		Type:    "invalid_request_error",
		Param:   "conversation_id",
	}
}

func itemNotFound(id string) *APIError {
	return &APIError{
		Status:  http.StatusNotFound,
		Message: "Item with id '" + shorten(id) + "' not found.",
		Type:    "invalid_request_error",
		Param:   "item_id",
	}
}

// shorten keeps an id quoted in a message short.
func shorten(id string) string {
	if len(id) > 160 {
		return id[:160] + "..."
	}
	return id
}

// notFoundAs turns the store's ErrNotFound into the conversation's 404.
func notFoundAs(err error, key recall.Key) error {
	if errors.Is(err, recall.ErrNotFound) {
		return conversationNotFound(key.Session)
	}
	return err
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Items    []json.RawMessage `json:"items"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	items, _, err := checkNewItems(body.Items)
	if err != nil {
		return err
	}
	if err := validMetadata(body.Metadata); err != nil {
		return err
	}
	key, err := s.userConvKey(r, newConversationID())
	if err != nil {
		return err
	}
	m, err := recall.NewSession(s.store, key).Create(r.Context(), recall.CreateOptions{Metadata: body.Metadata, Items: items})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, conversationOf(m))
	return nil
}

// validMetadata checks the metadata of a request as the store would,
// before anything is written.
func validMetadata(md map[string]string) error {
	if err := recall.ValidateMetadata(md); err != nil {
		return invalidParam("metadata", "%s", withDetail("Invalid 'metadata'", err, recall.ErrInvalidMetadata))
	}
	return nil
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	return s.writeConversation(w, r, key)
}

// writeConversation answers the conversation at key, as it is now.
func (s *Server) writeConversation(w http.ResponseWriter, r *http.Request, key recall.Key) error {
	m, err := s.stat(r.Context(), key)
	if err != nil {
		return notFoundAs(err, key)
	}
	writeJSON(w, http.StatusOK, conversationOf(m))
	return nil
}

// updateConversation replaces the conversation's metadata with the one
// sent, as OpenAI does: keys left out are removed.
func (s *Server) updateConversation(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	var body struct {
		Metadata *map[string]string `json:"metadata"`
	}
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	if body.Metadata == nil || *body.Metadata == nil {
		return invalidParam("metadata", "Missing required parameter: 'metadata'.")
	}
	if err := validMetadata(*body.Metadata); err != nil {
		return err
	}
	change := recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{}}
	for k, v := range *body.Metadata {
		change.Metadata[k] = &v
	}
	m, err := recall.NewSession(s.store, key).ChangeMeta(r.Context(), change)
	if err != nil {
		return notFoundAs(err, key)
	}
	writeJSON(w, http.StatusOK, conversationOf(m))
	return nil
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	// Gone for the API's clients (a 404 from now on), kept in the trash.
	if err := s.deleteOrTrash(r.Context(), key, false); err != nil {
		return notFoundAs(err, key)
	}
	s.record(r, audit.ActionDelete, key, map[string]string{"api": "conversations"})
	writeDeleted(w, key.Session, "conversation.deleted")
	return nil
}

// writeDeleted answers the removal of the object id: {"id", "object":
// object, "deleted": true}.
func writeDeleted(w http.ResponseWriter, id, object string) {
	writeJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, object, true})
}

// addItems appends the items as one batch and returns them as a list. The
// append requires the conversation to exist, so a deleted conversation
// stays deleted. When items carry ids of their own, the ids are checked
// against the view and the batch is written only if the view is still
// the one checked (a compare-and-swap on its last seq).
func (s *Server) addItems(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	var body struct {
		Items *[]json.RawMessage `json:"items"`
	}
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	if body.Items == nil || len(*body.Items) == 0 {
		return invalidParam("items", "Missing required parameter: 'items' (1 to %d items).", maxItemsPerCall)
	}
	items, ids, err := checkNewItems(*body.Items)
	if err != nil {
		return err
	}
	last, err := s.appendItems(r.Context(), key, items, ids)
	if err != nil {
		return notFoundAs(err, key)
	}
	added := make([]recall.LiveItem, len(items))
	first := last - int64(len(items)) + 1
	for i, it := range items {
		added[i] = recall.LiveItem{Ref: recall.ItemRef{Seq: first + int64(i)}, Item: it}
	}
	s.ids.note(key, added)
	writeList(w, added, false)
	return nil
}

// maxIDRetries bounds how often addItems checks ids again after another
// write moved the conversation between its check and its write.
const maxIDRetries = 16

func (s *Server) appendItems(ctx context.Context, key recall.Key, items []recall.Item, ids []string) (int64, error) {
	entries := recall.ItemEntries(items...)
	if !slices.ContainsFunc(ids, func(id string) bool { return id != "" }) {
		// Derived ids cannot collide: nothing to check.
		return s.store.Append(ctx, key, recall.IfExists(), entries...)
	}
	// The view's own ids are kept between requests (takenIDs): a request
	// reads the entries written since the last one, and after a conflict
	// those written since its check.
	v := s.taken.get(key)
	v.mu.Lock()
	defer v.mu.Unlock()
	for range maxIDRetries {
		if err := s.taken.catchUp(ctx, s.store, key, v); err != nil {
			if errors.Is(err, recall.ErrNotFound) {
				s.taken.drop(key)
			}
			return 0, err
		}
		for i, id := range ids {
			if id != "" && v.ids[id] {
				return 0, &APIError{
					Status:  http.StatusBadRequest,
					Message: "An item with id '" + shorten(id) + "' already exists in this conversation.",
					Type:    "invalid_request_error",
					Param:   "items[" + strconv.Itoa(i) + "].id",
					Code:    "duplicate_item_id",
				}
			}
		}
		before := v.last
		n, err := s.store.Append(ctx, key, recall.IfLastSeq(before), entries...)
		switch {
		case err == nil:
			for _, id := range ids {
				s.taken.add(v, id)
			}
			v.last = n
			return n, nil
		case !errors.Is(err, recall.ErrConflict):
			if errors.Is(err, recall.ErrNotFound) {
				s.taken.drop(key)
			}
			return 0, err
		}
		// Written meanwhile: the next round reads what was. When nothing
		// was written after before, the conversation was replaced by one
		// with fewer entries: it is read whole.
		if err := s.taken.catchUp(ctx, s.store, key, v); err != nil {
			return 0, err
		}
		if v.last == before {
			v.ids = nil
		}
	}
	return 0, &APIError{Status: http.StatusConflict, Message: "The conversation kept changing while the item ids were checked; try again.", Type: "invalid_request_error", Code: "conflict"}
}

// listQuery is a parsed list request.
type listQuery struct {
	after string
	limit int
	asc   bool
}

func parseListQuery(r *http.Request) (listQuery, error) {
	q := r.URL.Query()
	lq := listQuery{after: q.Get("after"), limit: 20}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return lq, invalidParam("limit", "Invalid 'limit': expected an integer between 1 and 100, got '%s'.", shorten(v))
		}
		lq.limit = n
	}
	switch v := q.Get("order"); v {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return lq, invalidParam("order", "Invalid 'order': expected 'asc' or 'desc', got '%s'.", shorten(v))
	}
	// include and include[] ask for optional output fields; the items are
	// stored whole, so there is nothing to add and both are accepted.
	return lq, nil
}

func (s *Server) listItems(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	lq, err := parseListQuery(r)
	if err != nil {
		return err
	}
	page, more, err := s.listPage(r.Context(), key, lq)
	if err != nil {
		return err
	}
	writeList(w, page, more)
	return nil
}

// listPage returns one page of items in the order asked, and whether more
// follow it. The store reads the page alone (recall.StoreSession.ReadItems); only a
// cursor that is an item's own id, not one derived from its place, is
// looked for first.
func (s *Server) listPage(ctx context.Context, key recall.Key, lq listQuery) ([]recall.LiveItem, bool, error) {
	opts := recall.ItemPageOptions{Limit: lq.limit, Oldest: lq.asc}
	if lq.after != "" {
		ref, derived := parseDerivedID(lq.after)
		if !derived {
			l, err := s.findOwnID(ctx, key, lq.after)
			if err != nil {
				return nil, false, err
			}
			if l == nil {
				return nil, false, invalidParam("after", "Invalid 'after': no item with id '%s' in this conversation.", shorten(lq.after))
			}
			ref = l.Ref
		}
		opts.After = ref
	}
	page, err := recall.NewSession(s.store, key).ReadItems(ctx, opts)
	if err != nil || page.LastSeq == 0 {
		return nil, false, notFound(err, key)
	}
	s.ids.note(key, page.Items)
	return page.Items, page.More, nil
}

func notFound(err error, key recall.Key) error {
	if err != nil {
		return notFoundAs(err, key)
	}
	return conversationNotFound(key.Session)
}

// findItem returns the item of the view the id names. An id derived from
// the item's place is read as a page of one item; an item's own id is
// looked for at the place this process last saw it (idPlaces), then page
// by page from the newest item back (findOwnID).
func (s *Server) findItem(ctx context.Context, key recall.Key, id string) (recall.LiveItem, error) {
	ref, derived := parseDerivedID(id)
	if !derived {
		l, err := s.findOwnID(ctx, key, id)
		if err != nil {
			return recall.LiveItem{}, err
		}
		if l == nil {
			return recall.LiveItem{}, itemNotFound(id)
		}
		return *l, nil
	}
	l, err := s.itemAt(ctx, key, ref)
	if err != nil {
		return recall.LiveItem{}, err
	}
	if l == nil || itemID(*l) != id {
		return recall.LiveItem{}, itemNotFound(id)
	}
	return *l, nil
}

// itemAt reads the item at ref, a page of one item; nil when the view has
// none there.
func (s *Server) itemAt(ctx context.Context, key recall.Key, ref recall.ItemRef) (*recall.LiveItem, error) {
	page, err := recall.NewSession(s.store, key).ReadItems(ctx, recall.ItemPageOptions{
		Limit: 1, After: recall.ItemRef{Seq: ref.Seq, Index: ref.Index + 1},
	})

	if err != nil || page.LastSeq == 0 {
		return nil, notFound(err, key)
	}
	if len(page.Items) == 0 || page.Items[0].Ref != ref {
		return nil, nil
	}
	return &page.Items[0], nil
}

// findOwnID looks for the item whose own id is id, reading the view page
// by page from the newest item back, each page four times the last (up to
// maxIDPage): the work is proportional to how far back the item is, and
// a client paging with the last id of the page it was just sent finds it
// in the first pages. It returns nil when no item has the id.
func (s *Server) findOwnID(ctx context.Context, key recall.Key, id string) (*recall.LiveItem, error) {
	if ref, ok := s.ids.place(key, id); ok {
		l, err := s.itemAt(ctx, key, ref)
		if err != nil || l != nil && itemID(*l) == id {
			return l, err
		}
	}
	opts := recall.ItemPageOptions{Limit: 64}
	for {
		page, err := recall.NewSession(s.store, key).ReadItems(ctx, opts)
		if err != nil || page.LastSeq == 0 {
			return nil, notFound(err, key)
		}
		s.ids.note(key, page.Items)
		for i, l := range page.Items {
			if itemID(l) == id {
				return &page.Items[i], nil
			}
		}
		if !page.More {
			return nil, nil
		}
		opts.After = page.Items[len(page.Items)-1].Ref
		opts.Limit = min(4*opts.Limit, maxIDPage)
	}
}

// maxIDPage is the largest page findOwnID reads at once.
const maxIDPage = 4096

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	l, err := s.findItem(r.Context(), key, r.PathValue("item_id"))
	if err != nil {
		return err
	}
	writeRawJSON(w, http.StatusOK, show(l).json)
	return nil
}

// deleteItem removes the item from the conversation's view (the log keeps
// it) and returns the conversation, as OpenAI does.
func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) error {
	key, err := s.convKey(r)
	if err != nil {
		return err
	}
	id := r.PathValue("item_id")
	l, err := s.findItem(r.Context(), key, id)
	if err != nil {
		return err
	}
	if _, err := recall.NewSession(s.store, key).RemoveItem(r.Context(), l.Ref); err != nil {
		if errors.Is(err, recall.ErrNotFound) {
			err = itemNotFound(id) // removed meanwhile, or the conversation was
		}
		return err
	}
	return s.writeConversation(w, r, key)
}

// writeList sends OpenAI's list envelope around items, each as show
// shows it, written straight into the one buffer of the answer: an
// item's bytes are the stored ones (not re-encoded), with only what show
// adds.
func writeList(w http.ResponseWriter, items []recall.LiveItem, more bool) {
	size := 128 // the envelope, but for the ids
	for _, l := range items {
		size += len(l.Item) + 64 // the item, a comma, an id and a type added
	}
	bp := listBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledList {
			listBufs.Put(bp)
		}
	}()
	b := slices.Grow((*bp)[:0], size) // one buffer for the whole answer
	b = append(b, `{"object":"list","data":[`...)
	var first, last itemHead
	for i, l := range items {
		if i > 0 {
			b = append(b, ',')
		}
		h := headOf(l.Item)
		if i == 0 {
			first = h
		}
		last = h
		b = appendShown(b, l, h)
	}
	b = append(b, `],"first_id":`...)
	if len(items) > 0 {
		b = appendItemID(b, first, items[0].Ref)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"last_id":`...)
	if len(items) > 0 {
		b = appendItemID(b, last, items[len(items)-1].Ref)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	b = append(b, "}\n"...)
	writeRawJSON(w, http.StatusOK, b)
	*bp = b
}

// listBufs holds the buffers writeList builds its answers in: a list
// answer is written whole before writeList returns (writeRawJSON sets its
// Content-Length, so the server copies or sends it and keeps no
// reference), and each list's buffer would otherwise be garbage.
var listBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledList is the largest buffer listBufs keeps, so that one page of
// big items does not stay in memory for good.
const maxPooledList = 256 << 10

// writeRawJSON sends b, already JSON, with status.
func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
