package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
	"github.com/tmc/langchaingo/llms"
	lcsqlite "github.com/tmc/langchaingo/memory/sqlite3"
)

// langChain is LangChainGo's chat message history on SQLite
// (memory/sqlite3, over the cgo driver mattn/go-sqlite3 with its default
// settings: rollback journal, synchronous=FULL, so every save is durable).
//
// It stores a message's text and its type (human, ai, system) and nothing
// else, so each item's whole JSON goes in as the text: user items as human
// messages, every other item as an ai message (tool messages are stored but
// never read back). What it lacks is done the way a user of it would:
//
//   - a batch is one AddMessage per item, not atomic;
//   - Messages has no "newest n": it reads all and keeps the last n;
//   - fork is Messages of the source plus SetMessages on the new session;
//   - pop is Messages plus SetMessages of all but the last;
//   - it cannot list sessions.
//
// Messages returns at most Limit rows (default 1,000, the oldest), so the
// histories are opened with a limit above any session of the workloads.
type langChain struct {
	db *sql.DB

	mu        sync.Mutex
	histories map[string]*lcsqlite.SqliteChatMessageHistory
}

// langChainLimit is the row limit given to Messages.
const langChainLimit = 1 << 30

func openLangChain(_ context.Context, path string) (subject, error) {
	// The busy timeout is the one setting a user must add: without it the
	// concurrent writers of W5 fail with "database is locked".
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000")
	if err != nil {
		return nil, err
	}
	return &langChain{db: db, histories: map[string]*lcsqlite.SqliteChatMessageHistory{}}, nil
}

// history returns the history object of session; like an application, the
// harness makes one per session and keeps it.
func (l *langChain) history(session string) (h *lcsqlite.SqliteChatMessageHistory, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.histories[session]; h != nil {
		return h, nil
	}
	// The constructor panics when its schema statement fails.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("langchaingo: open history %s: %v", session, r)
		}
	}()
	h = lcsqlite.NewSqliteChatMessageHistory(
		lcsqlite.WithDB(l.db),
		lcsqlite.WithSession(session),
		lcsqlite.WithLimit(langChainLimit),
		lcsqlite.WithOverwrite(),
	)
	l.histories[session] = h
	return h, nil
}

func toMessage(it recall.Item) llms.ChatMessage {
	if it.Role() == "user" {
		return llms.HumanChatMessage{Content: string(it)}
	}
	return llms.AIChatMessage{Content: string(it)}
}

func (l *langChain) append(ctx context.Context, session string, items []recall.Item) error {
	h, err := l.history(session)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := h.AddMessage(ctx, toMessage(it)); err != nil {
			return err
		}
	}
	return nil
}

func (l *langChain) messages(ctx context.Context, session string) ([]llms.ChatMessage, error) {
	h, err := l.history(session)
	if err != nil {
		return nil, err
	}
	return h.Messages(ctx)
}

func (l *langChain) load(ctx context.Context, session string, limit int) ([]recall.Item, error) {
	msgs, err := l.messages(ctx, session)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	items := make([]recall.Item, len(msgs))
	for i, m := range msgs {
		items[i] = recall.Item(m.GetContent())
	}
	return items, nil
}

func (l *langChain) fork(ctx context.Context, src, dst string) error {
	msgs, err := l.messages(ctx, src)
	if err != nil {
		return err
	}
	h, err := l.history(dst)
	if err != nil {
		return err
	}
	return h.SetMessages(ctx, msgs)
}

func (l *langChain) pop(ctx context.Context, session string) (recall.Item, error) {
	msgs, err := l.messages(ctx, session)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	h, err := l.history(session)
	if err != nil {
		return nil, err
	}
	// SetMessages of nothing is an INSERT without rows, a syntax error.
	set := func() error { return h.SetMessages(ctx, msgs[:len(msgs)-1]) }
	if len(msgs) == 1 {
		set = func() error { return h.Clear(ctx) }
	}
	if err := set(); err != nil {
		return nil, err
	}
	return recall.Item(msgs[len(msgs)-1].GetContent()), nil
}

// seed writes a whole session with one SetMessages: one statement binding
// three variables a message, so it works up to 10,922 messages (SQLite's
// limit of 32,766 variables).
func (l *langChain) seed(ctx context.Context, session string, items []recall.Item) error {
	h, err := l.history(session)
	if err != nil {
		return err
	}
	msgs := make([]llms.ChatMessage, len(items))
	for i, it := range items {
		msgs[i] = toMessage(it)
	}
	return h.SetMessages(ctx, msgs)
}

func (l *langChain) list(context.Context, int) ([]string, error) {
	return nil, notAvailable("no API lists sessions")
}

func (l *langChain) close() error { return l.db.Close() }
