package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/server/audit"
)

// redaction is the answer of POST …/redact: what was found in the
// session and its subagent records, and (unless dry_run) removed.
type redaction struct {
	Object   string         `json:"object"` // "session.redaction"
	ID       string         `json:"id"`
	DryRun   bool           `json:"dry_run"`
	Redacted secrets.Report `json:"redacted"` // by rule
	Entries  int            `json:"entries"`  // the entries that held them
	Records  []redacted     `json:"records"`  // the session, then its subagent records, those holding secrets
}

// redacted is one record of a redaction.
type redacted struct {
	Subpath  string         `json:"subpath,omitempty"`
	Redacted secrets.Report `json:"redacted"`
	Entries  int            `json:"entries"`
	Seq      int64          `json:"seq,omitempty"` // the redaction entry's, 0 on a dry run
}

// redactSession removes the secrets stored in a session and its subagent
// records, as `recall redact` does (secrets.Redactor.Tree): the entries
// that hold one are rewritten in place and a redaction entry is appended.
// ?dry_run=true only reports. An admin redacts another user's session
// with ?user=NAME. A redaction that wrote something is recorded in the
// audit log, with the counts (never a secret).
func (s *Server) redactSession(w http.ResponseWriter, r *http.Request) error {
	key, err := s.userSessionKey(r)
	if err != nil {
		return err
	}
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	ctx := r.Context()
	if _, err := s.store.Stat(ctx, key); err != nil {
		return sessionErr(err, key)
	}
	red, err := s.redactor()
	if err != nil {
		return err
	}
	done, err := red.Tree(ctx, s.store, key, dry)
	out := redaction{Object: "session.redaction", ID: key.Session, DryRun: dry, Redacted: secrets.Report{}, Records: []redacted{}}
	for _, d := range done {
		if d.Report.Total() > 0 {
			out.Redacted.Add(d.Report)
			out.Entries += d.Entries
			out.Records = append(out.Records, redacted{Subpath: d.Key.Subpath, Redacted: d.Report, Entries: d.Entries, Seq: d.Seq})
		}
	}
	if !dry && out.Entries > 0 {
		// recorded even when a subagent record failed after the session
		// was rewritten: what was rewritten is rewritten
		s.record(r, audit.ActionRedact, key, map[string]string{"secrets": strconv.Itoa(out.Redacted.Total()), "entries": strconv.Itoa(out.Entries)})
	}
	switch {
	case errors.Is(err, recall.ErrUnsupported):
		return &APIError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "unsupported", NoRetry: true,
			Message: "This server's store cannot rewrite its logs, so stored secrets cannot be redacted."}
	case errors.Is(err, recall.ErrConflict):
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict",
			Message: "The session kept changing; try again."}
	case err != nil:
		return sessionErr(err, key)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
