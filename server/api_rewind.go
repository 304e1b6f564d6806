package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/recallkit/recall"
)

// rewindRequest is the body of POST …/rewind. To is the item the view goes
// back to, by its id as the Conversations API shows it (the view keeps it
// and every item before it); null empties the view. It is required, so
// that a body without it never empties a session by mistake.
type rewindRequest struct {
	To json.RawMessage `json:"to"`
}

// viewChange is the answer of …/rewind and …/redo: how many items left
// or came back to the view.
type viewChange struct {
	Object string `json:"object"` // "session.rewind" or "session.redo"
	ID     string `json:"id"`
	Items  int    `json:"items"`
}

// rewindSession sets a session's view back to just after an item, as
// `recall rewind` does; the log keeps every item (recall.StoreSession.Rewind).
func (s *Server) rewindSession(w http.ResponseWriter, r *http.Request) error {
	key, err := s.viewKey(r)
	if err != nil {
		return err
	}
	var body rewindRequest
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	ctx := r.Context()
	var to recall.ItemRef
	switch {
	case body.To == nil:
		return invalidParam("to", "Missing required parameter: 'to' (an item id, or null to empty the view).")
	case string(body.To) != "null":
		var id string
		if err := json.Unmarshal(body.To, &id); err != nil {
			return invalidParam("to", "Invalid 'to': an item id (a string), or null to empty the view.")
		}
		l, err := s.findItem(ctx, key, id)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Param == "item_id" {
			err = invalidParam("to", "No item with id %q in session %s.", shorten(id), key.Session)
		}
		if err != nil {
			return sessionErr(err, key)
		}
		to = l.Ref
	}
	n, err := recall.NewSession(s.store, key).Rewind(ctx, to)
	if err != nil {
		return viewChangeErr(err, key)
	}
	writeJSON(w, http.StatusOK, viewChange{"session.rewind", key.Session, n})
	return nil
}

// redoSession undoes the session's newest rewind not yet redone, as
// `recall redo` does (recall.StoreSession.Redo).
func (s *Server) redoSession(w http.ResponseWriter, r *http.Request) error {
	key, err := s.viewKey(r)
	if err != nil {
		return err
	}
	n, err := recall.NewSession(s.store, key).Redo(r.Context())
	if errors.Is(err, recall.ErrNothingToRedo) {
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "nothing_to_redo", NoRetry: true,
			Message: "Nothing to redo: the session has no rewind to undo, or its view changed since."}
	}
	if err != nil {
		return viewChangeErr(err, key)
	}
	writeJSON(w, http.StatusOK, viewChange{"session.redo", key.Session, n})
	return nil
}

// viewKey is the key of the session the path names (sessionKey), whose
// view a rewind or redo changes: a session in the trash is a 404; a
// missing one is left to the rewind or redo to find.
func (s *Server) viewKey(r *http.Request) (recall.Key, error) {
	key, err := s.sessionKey(r)
	if err != nil {
		return key, err
	}
	if _, err := s.stat(r.Context(), key); isTrashed(err) {
		return key, sessionErr(err, key)
	}
	return key, nil
}

// viewChangeErr answers a failed rewind or redo.
func viewChangeErr(err error, key recall.Key) error {
	if errors.Is(err, recall.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict",
			Message: "The session kept changing; try again."}
	}
	return sessionErr(err, key)
}
