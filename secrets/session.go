package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Redacted is what Session found in one stored session, and did.
type Redacted struct {
	Key recall.Key `json:"key"`
	// Report counts the secrets found, by rule.
	Report Report `json:"redacted"`
	// Entries counts the entries that held them.
	Entries int `json:"entries"`
	// Seq is the seq of the redaction entry appended, 0 when nothing was
	// written (a dry run, or nothing found).
	Seq int64 `json:"seq,omitempty"`
}

// Session finds the secrets stored in key's log, in every entry the
// write path redacts (items, titles, compactions' items and summaries;
// see Entries), and, unless dryRun, removes them: the entries that hold
// them are rewritten in place with storekit.Rewriter, and a
// recall.KindRedaction entry listing each one's seq and findings (rule and
// position, never the secret) is appended in the same atomic step. The
// rewrite is guarded by the LastSeq read: when the session moved
// meanwhile it is read again, a few times, before giving up with
// recall.ErrConflict. A store without the ability is recall.ErrUnsupported
// (nothing is written); a session with nothing to redact is left alone.
func (r *Redactor) Session(ctx context.Context, st recall.Store, key recall.Key, dryRun bool) (Redacted, error) {
	var err error
	for range 4 {
		var res Redacted
		if res, err = r.session(ctx, st, key, dryRun); !errors.Is(err, recall.ErrConflict) {
			return res, err
		}
	}
	return Redacted{Key: key}, err
}

func (r *Redactor) session(ctx context.Context, st recall.Store, key recall.Key, dryRun bool) (Redacted, error) {
	res := Redacted{Key: key, Report: Report{}}
	m, log, err := st.Load(ctx, key)
	if err != nil {
		return res, err
	}
	var note storekit.Redaction
	var replace []recall.Entry
	for _, e := range log {
		out, rep := r.Entries([]recall.Entry{e})
		if len(rep) == 0 {
			continue
		}
		res.Report.Add(rep)
		replace = append(replace, out[0])
		note.Entries = append(note.Entries, storekit.RedactedEntry{Seq: e.Seq, Findings: findings(e.Data, out[0].Data, rep)})
	}
	res.Entries = len(replace)
	if dryRun || len(replace) == 0 {
		return res, nil
	}
	rw, ok := recall.As[storekit.Rewriter](st)
	if !ok {
		return res, fmt.Errorf("secrets: redact %s: the store cannot rewrite its logs: %w", key, recall.ErrUnsupported)
	}
	after, err := rw.Rewrite(ctx, key, storekit.Rewrite{IfLastSeq: m.LastSeq, Replace: replace,
		Append: []recall.Entry{recall.NewEntry(recall.KindRedaction, note)}})
	if err != nil {
		return res, fmt.Errorf("secrets: redact %s: %w", key, err)
	}
	res.Seq = after.LastSeq
	return res, nil
}

// findings lists the markers a redaction put in data, the new payload,
// that old did not hold: each one's rule and byte offset in data. A marker
// already in old is recognised where the text before it, or the text
// after it, is unchanged; rep bounds the count of each rule.
func findings(old, data []byte, rep Report) []storekit.Finding {
	left := Report{}
	left.Add(rep)
	var out []storekit.Finding
	s, o := string(data), string(old)
	for i := 0; ; {
		j := strings.Index(s[i:], "[REDACTED:")
		if j < 0 {
			return out
		}
		at := i + j
		end := strings.IndexByte(s[at:], ']')
		if end < 0 {
			return out
		}
		marker := s[at : at+end+1]
		rule := marker[len("[REDACTED:") : len(marker)-1]
		i = at + len(marker)
		tail := len(s) - at
		kept := strings.HasPrefix(o, s[:at]) && strings.HasPrefix(o[at:], marker) ||
			tail <= len(o) && strings.HasSuffix(o, s[at:])
		if kept || left[rule] == 0 {
			continue
		}
		left[rule]--
		out = append(out, storekit.Finding{Rule: rule, At: at})
	}
}

// Tree is Session for key and each of its subagent records (listed with
// recall.ListOptions.Parent, archived ones too), key first. It stops at
// the first error, returning what was done before it.
func (r *Redactor) Tree(ctx context.Context, st recall.Store, key recall.Key, dryRun bool) ([]Redacted, error) {
	res, err := r.Session(ctx, st, key, dryRun)
	if err != nil {
		return nil, err
	}
	out := []Redacted{res}
	opts := recall.ListOptions{Parent: key.Session, IncludeArchived: true, Limit: 1000}
	for {
		page, err := st.List(ctx, key.Project, opts)
		if err != nil {
			return out, fmt.Errorf("secrets: redact %s: list its subagents: %w", key, err)
		}
		for _, m := range page.Sessions {
			res, err := r.Session(ctx, st, m.Key, dryRun)
			if err != nil {
				return out, err
			}
			out = append(out, res)
		}
		if page.Next == "" {
			return out, nil
		}
		opts.Cursor = page.Next
	}
}
