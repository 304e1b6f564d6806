package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/recallkit/recall"
)

// sessionKey is the context key of the session a Run serves.
type sessionKey struct{}

// withSession returns ctx carrying sess as the session of the run, which
// tools read with SessionFromContext. A nil sess hides the session of an
// enclosing run, so a subagent's tools never see its parent's session.
func withSession(ctx context.Context, sess recall.Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, sessionBox{sess})
}

type sessionBox struct{ s recall.Session }

// SessionFromContext returns the session of the Run whose tool is being
// called, or nil when the run has none. Tools that keep records next to
// the conversation (SubagentTool) use it.
func SessionFromContext(ctx context.Context) recall.Session {
	b, _ := ctx.Value(sessionKey{}).(sessionBox)
	return b.s
}

// SubagentOptions configure SubagentTool. The zero value works: the
// subagent runs without a session and leaves no record.
type SubagentOptions struct {
	// Name is the tool's name, and the name of the subagent's records.
	// Bytes outside [A-Za-z0-9_-] become '-'. Default: the agent's Name,
	// else "subagent".
	Name string
	// Description tells the parent's model what the subagent is for.
	// Default: a sentence naming it that says it sees only the task.
	Description string
	// Record keeps the transcript of each call as a subagent record of
	// the parent's session: a new record per call, at the parent's key
	// with Subpath "subagents/<name>-<n>" (n counts from 1 per parent). A
	// record is not a main session: List skips it, `recall show ID
	// --subagents` prints it, and removing the parent removes it. It needs
	// the parent run's session to have the methods Store and Key, as
	// *recall.StoreSession does; otherwise nothing is recorded. Default:
	// false.
	Record bool
	// Session, when set, is the subagent's own session, kept across calls,
	// so it remembers earlier tasks: the "one session per agent" team
	// mode, for long-lived specialists. It takes precedence over Record.
	// Default: nil.
	Session recall.Session
	// Run configures the subagent's runs (MaxTurns, Titler, OnPersist,
	// CompactTokens, ...). Its Session is set by the tool.
	Run RunOptions
}

// SubagentTool returns a Tool that runs sub on a task the parent's model
// writes, and answers with sub's final text. The subagent gets its own
// conversation: the task string only, never the parent's history (with
// SubagentOptions.Session, its own history and the task). It may itself
// have tools, subagents included.
//
// The tool's arguments are {"task": "..."}. A failed run is reported to
// the parent's model as the tool's error; what the subagent recorded
// before it failed stays recorded.
func SubagentTool(sub *Agent, opts SubagentOptions) Tool {
	name := opts.Name
	if name == "" && sub != nil {
		name = sub.Name
	}
	if name == "" {
		name = "subagent"
	}
	name = toolName(name)
	desc := opts.Description
	if desc == "" {
		desc = "Delegate a task to the " + name + " agent and get its answer. It does not see this conversation: " +
			"put everything it needs in the task."
	}
	return &subagentTool{sub: sub, name: name, desc: desc, opts: opts, next: map[recall.Key]int{}}
}

type subagentTool struct {
	sub        *Agent
	name, desc string
	opts       SubagentOptions

	mu   sync.Mutex
	next map[recall.Key]int // parent key -> next record number to try
}

func (t *subagentTool) Name() string        { return t.name }
func (t *subagentTool) Description() string { return t.desc }
func (t *subagentTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"task":{"type":"string",` +
		`"description":"The whole task: what to do, and every fact the agent needs, since it sees nothing else."}},` +
		`"required":["task"]}`)
}

func (t *subagentTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if strings.TrimSpace(a.Task) == "" {
		return "", errors.New(`a task is required: {"task": "..."}`)
	}
	ro := t.opts.Run
	ro.Session = t.opts.Session
	if ro.Session == nil && t.opts.Record {
		sess, err := t.record(ctx)
		if err != nil {
			return "", fmt.Errorf("record subagent %s: %w", t.name, err)
		}
		ro.Session = sess
	}
	res, err := Run(ctx, t.sub, UserText(a.Task), ro)
	if err != nil {
		return "", err
	}
	return res.Output, nil
}

// record returns the session of a new record under the parent's session,
// or nil when the parent's session is not store-backed.
func (t *subagentTool) record(ctx context.Context) (recall.Session, error) {
	parent, ok := SessionFromContext(ctx).(StoreBacked)
	if !ok {
		return nil, nil
	}
	store, pk := parent.Store(), parent.Key()
	prefix := "subagents/" + t.name + "-"
	if pk.Subpath != "" {
		prefix = pk.Subpath + "/" + prefix // a subagent's subagent
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n, seeded := t.next[pk]
	if !seeded {
		// Number on from the records a previous process left.
		page, err := store.List(ctx, pk.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: pk.Session})
		if err != nil {
			return nil, err
		}
		n = 1
		for _, m := range page.Sessions {
			if rest, ok := strings.CutPrefix(m.Key.Subpath, prefix); ok {
				if k, err := strconv.Atoi(rest); err == nil && k >= n {
					n = k + 1
				}
			}
		}
	}
	for ; ; n++ {
		key := recall.Key{Project: pk.Project, Session: pk.Session, Subpath: prefix + strconv.Itoa(n)}
		_, err := store.Stat(ctx, key)
		if errors.Is(err, recall.ErrNotFound) {
			t.next[pk] = n + 1
			return recall.NewSession(store, key), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// toolName makes s a valid function name: bytes outside [A-Za-z0-9_-]
// become '-', and it is cut to 64 bytes.
func toolName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
