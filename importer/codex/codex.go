// Package codex imports OpenAI Codex CLI rollouts
// (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, and
// ~/.codex/archived_sessions) into a recall store.
//
// Each rollout becomes one recall session, in the project of the working
// directory its session_meta names (importer.ProjectKey), which it records
// (metadata "cwd", importer.MetaCwd), with the Codex session id as its ID
// and the session_meta time as its creation time. Its
// lines ({"timestamp","type","payload"}) map as follows:
//
//   - response_item: the payload is a Responses item already, and is kept
//     verbatim: the bytes of the rollout are the bytes of the item;
//   - compacted → a compaction entry whose items are the
//     replacement_history, verbatim, or else one assistant message with
//     the summary;
//   - turn_context → the model (metadata "model"), and the working
//     directory when session_meta names none;
//   - event_msg token_count → the token usage (last_token_usage) of the
//     item before it, counted once;
//   - other event_msg lines are events of Codex's interface; those that
//     carry conversation (user_message, agent_message, ...) repeat
//     response items, so they are skipped and counted by their kind;
//   - unknown and future line types, lines that do not decode and a torn
//     last line are skipped and counted, never fatal.
//
// A rollout is read a line at a time and written as it is read (see
// package importer); .jsonl.zst rollouts are decompressed as they are read
// (github.com/klauspost/compress/zstd). Where both a rollout and its .zst
// sibling exist, the plain one is read, as Codex does. Importing again is
// idempotent: the offset and digest are taken over the decompressed
// bytes, so a rollout that Codex compressed since it was imported is
// unchanged. An item and the compactions after it are one turn
// (importer.Record.Turn): a batch never ends between them, so a
// token_count line after a compaction still gives the item its usage.
package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// Tool is the name imported sessions carry in importer.MetaSource.
const Tool = "codex"

// DefaultPaths returns the folders Codex keeps rollouts in: sessions and
// archived_sessions under $CODEX_HOME, else ~/.codex.
func DefaultPaths() ([]string, error) {
	home, err := importer.HomeDir("CODEX_HOME", ".codex")
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(home, "sessions"), filepath.Join(home, "archived_sessions")}, nil
}

// Find returns the rollouts under path: path itself when it is a file,
// else every rollout-*.jsonl and rollout-*.jsonl.zst below it (a .zst
// file only when its plain sibling is missing), sorted.
func Find(path string) ([]string, error) {
	files, err := importer.Files(path, isRollout)
	sort.Strings(files)
	return files, err
}

// isRollout reports whether path is a rollout to read: a .jsonl.zst one
// only when its plain sibling is missing.
func isRollout(path string) bool {
	name := filepath.Base(path)
	switch {
	case !strings.HasPrefix(name, "rollout-"):
		return false
	case strings.HasSuffix(name, ".jsonl"):
		return true
	case strings.HasSuffix(name, ".jsonl.zst"):
		_, err := os.Stat(strings.TrimSuffix(path, ".zst"))
		return err != nil
	}
	return false
}

// ErrNoRollouts reports paths that hold no rollout.
var ErrNoRollouts = errors.New("codex: no rollouts found")

// Import imports every rollout under paths (see Find) into st; a path that
// does not exist is passed over when another one does. A file that cannot
// be read is listed in the summary's Failures and the others go on; the
// error reports paths that cannot be read at all, or hold no rollout
// (ErrNoRollouts), or ctx's end.
func Import(ctx context.Context, st recall.Store, paths []string, opts importer.Options) (importer.Summary, error) {
	var files []string
	var errs []error
	for _, p := range paths {
		f, err := Find(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, f...)
	}
	if len(files) == 0 {
		err := fmt.Errorf("%w in %s", ErrNoRollouts, strings.Join(paths, ", "))
		if len(errs) == len(paths) {
			err = fmt.Errorf("codex: %w", errors.Join(errs...))
		}
		return importer.Summary{Tool: Tool}, err
	}
	return importer.Run(ctx, st, Tool, files, NewMapper, opts)
}

// rolloutLine is one line of a rollout.
type rolloutLine struct {
	Timestamp string         `json:"timestamp"`
	Type      string         `json:"type"`
	Payload   jsontext.Value `json:"payload"`
}

type sessionMeta struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Cwd       string `json:"cwd"`
}

type compacted struct {
	Message            string           `json:"message"`
	ReplacementHistory []jsontext.Value `json:"replacement_history"`
}

// tokenUsage is a token_count event's usage. Codex counts cached input in
// input_tokens and reasoning in output_tokens, as recall.Usage does.
type tokenUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

func (u *tokenUsage) recall() *recall.Usage {
	return importer.Usage(recall.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens})
}

// rollout maps the lines of one rollout (.jsonl or .jsonl.zst).
type rollout struct {
	path     string
	meta     sessionMeta // the first session_meta line's
	cwd      string      // the working directory of the first turn_context that names one
	lastItem int         // the number (importer.Target.Add) of the newest item record, or -1
	// items counts the item records: each opens a turn that the
	// compactions after it share, so that a batch never ends between an
	// item and a later token_count that gives its usage.
	items int
}

// NewMapper returns the importer.Mapper of the rollout at path
// (importer.Run, recall import --watch).
func NewMapper(path string) importer.Mapper {
	return &rollout{path: path, lastItem: -1}
}

// Identity implements importer.Mapper: the session_meta line's id and
// working directory (else the first turn_context's); at the end of a
// rollout without one, the id at the end of the file's name.
func (r *rollout) Identity(eof bool) (importer.Identity, error) {
	id := importer.Identity{SessionID: r.meta.ID, Cwd: r.meta.Cwd}
	if id.SessionID == "" && !eof {
		return importer.Identity{}, nil // a session_meta line may come and name both
	}
	if id.Cwd == "" {
		id.Cwd = r.cwd
	}
	if id.SessionID == "" {
		id.SessionID = idFromName(r.path)
	}
	if id.SessionID == "" {
		return importer.Identity{}, errors.New("no session_meta line, and no id in the file name")
	}
	return id, nil
}

// Line implements importer.Mapper: it reads one line of the rollout, by
// its type; a line that does not decode is torn, and one of an unknown
// type is skipped.
func (r *rollout) Line(t *importer.Transcript, ln importer.Line) {
	var l rolloutLine
	if err := json.Unmarshal(ln.Bytes, &l, responses.DecodeOptions); err != nil {
		t.Torn(ln)
		return
	}
	at := importer.ParseTime(l.Timestamp)
	switch l.Type {
	case "response_item":
		r.addResponseItem(t, l, at)
	case "session_meta":
		r.readSessionMeta(t, l, at)
	case "turn_context":
		r.readTurnContext(t, l)
	case "compacted":
		r.addCompaction(t, l, at)
	case "event_msg":
		r.readEventMsg(t, l)
	case "":
		t.Skip("unknown")
	default:
		t.Skip("unknown:" + l.Type)
	}
}

// addResponseItem adds the item of a response_item line, verbatim, dated at;
// one that is not a JSON object is skipped.
func (r *rollout) addResponseItem(t *importer.Transcript, l rolloutLine, at time.Time) {
	if !isObject(l.Payload) {
		t.Skip("malformed")
		return
	}
	r.items++
	r.lastItem = t.Target("").Add(importer.Record{Turn: r.turn(), Entry: recall.Entry{Kind: recall.KindItem, Time: at, Data: []byte(l.Payload)}})
}

// turn names the turn of the newest item ("" before the first).
func (r *rollout) turn() string {
	if r.items == 0 {
		return ""
	}
	return strconv.Itoa(r.items)
}

// readSessionMeta takes the session's id, working directory and creation time
// (its own timestamp, else at) from the first session_meta line; a
// repeated one (a resumed or forked rollout) is skipped.
func (r *rollout) readSessionMeta(t *importer.Transcript, l rolloutLine, at time.Time) {
	if r.meta.ID != "" {
		t.Skip("session_meta") // a resumed or forked rollout repeats it
		return
	}
	if json.Unmarshal(l.Payload, &r.meta, responses.DecodeOptions) != nil || r.meta.ID == "" {
		t.Skip("malformed")
		return
	}
	if ts := importer.ParseTime(r.meta.Timestamp); !ts.IsZero() {
		at = ts
	}
	t.Target("").Created = at
}

// readTurnContext takes the model of a turn_context line, and its working
// directory when none came before; one that gives neither is skipped.
func (r *rollout) readTurnContext(t *importer.Transcript, l rolloutLine) {
	var tc struct {
		Model string `json:"model"`
		Cwd   string `json:"cwd"`
	}
	if json.Unmarshal(l.Payload, &tc, responses.DecodeOptions) != nil {
		t.Skip("malformed")
		return
	}
	if tc.Model == "" && tc.Cwd == "" {
		t.Skip("turn_context") // it gives nothing
		return
	}
	if tc.Model != "" {
		t.Target("").Model = tc.Model
	}
	if r.cwd == "" {
		r.cwd = tc.Cwd
	}
}

// addCompaction adds the compaction of a compacted line, dated at, counting
// the entries of its history that are not JSON objects as skipped.
func (r *rollout) addCompaction(t *importer.Transcript, l rolloutLine, at time.Time) {
	var c compacted
	if json.Unmarshal(l.Payload, &c, responses.DecodeOptions) != nil {
		t.Skip("malformed")
		return
	}
	items, dropped := c.items()
	for range dropped {
		t.Skip("compacted:not-an-object")
	}
	t.Target("").Add(importer.Record{
		Turn:       r.turn(),
		Entry:      recall.Entry{Kind: recall.KindCompaction, Time: at},
		Compaction: &recall.Compaction{Items: items, Strategy: "codex"},
	})
}

// readEventMsg reads an event_msg line: a token_count gives the usage of the
// model call that wrote the items before it, and a repeated one (no item
// since) is not counted twice; every other event is skipped, counted by
// its type.
func (r *rollout) readEventMsg(t *importer.Transcript, l rolloutLine) {
	var ev struct {
		Type string `json:"type"`
		Info *struct {
			Last *tokenUsage `json:"last_token_usage"`
		} `json:"info"`
	}
	err := json.Unmarshal(l.Payload, &ev, responses.DecodeOptions)
	if err == nil && ev.Type == "token_count" && ev.Info != nil && ev.Info.Last != nil && r.lastItem >= 0 {
		// The item is still unwritten: its turn lasts until the next item.
		if it := t.Target("").Record(r.lastItem); it != nil && it.Entry.Usage == nil {
			it.Entry.Usage = ev.Info.Last.recall()
			return
		}
	}
	t.Skip("event_msg:" + ev.Type)
}

// items returns what a compaction leaves in the view: the replacement
// history Codex recorded, verbatim, or else the summary as one assistant
// message (what Codex itself turns a compacted line into). It counts the
// entries of the history it dropped for not being JSON objects.
func (c compacted) items() (items []recall.Item, dropped int) {
	items = []recall.Item{}
	for _, raw := range c.ReplacementHistory {
		if isObject(raw) {
			items = append(items, recall.Item(raw))
		} else {
			dropped++
		}
	}
	if len(c.ReplacementHistory) == 0 {
		items = append(items, recall.Message("assistant", c.Message))
	}
	return items, dropped
}

// isObject reports whether raw is a JSON object (it decoded as JSON).
func isObject(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

// idFromName returns the id at the end of a rollout's name
// (rollout-2025-05-07T17-24-21-<uuid>.jsonl), or "".
func idFromName(path string) string {
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".zst"), ".jsonl")
	if len(name) < 36 {
		return ""
	}
	id := name[len(name)-36:]
	if recall.ValidateID(id) != nil || strings.Count(id, "-") != 4 {
		return ""
	}
	return id
}
