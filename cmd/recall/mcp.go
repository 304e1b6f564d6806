package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/recallkit/recall/recallmcp"
)

// mcpFlags are the flags of recall mcp.
type mcpFlags struct {
	dir        string
	all        bool
	allowWrite bool
	maxChars   int
}

func newMcpCmd(a *app) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the sessions to agents over MCP (stdio)",
		Long: `Run a Model Context Protocol server on stdin and stdout, the way agents
(Claude Code, Codex, Cursor, Gemini CLI, ...) start local tools, so that an
agent can search and read its past sessions:

  search_sessions  find messages, tool calls and titles that mention something
  list_sessions    recent sessions, with titles, sources and first prompts
  read_session     one session's conversation, a page at a time
  title_session    set a title        (only with --allow-write)
  pin_session      pin or unpin       (only with --allow-write)
  rewind_session   go back to an item (only with --allow-write; redo_session undoes it)

Every session is also a resource, recall://sessions/{project}/{id}, in
Markdown. The tools look at this project's sessions (the working
directory's, or --project's) unless a call asks for project "all"; --all
makes every project the default. Every session and hit names its source
(recall, claude-code, codex, ...), and a call's source argument keeps one
tool's sessions, as 'recall ls --source' does. The server never writes unless
--allow-write. Every result is capped at --max-chars characters and says
how to read on.

Add it to Claude Code with:  claude mcp add recall -- recall mcp`,
		Example: `  recall mcp
  recall mcp --project ~/src/parser --allow-write
  recall --store sqlite:///srv/recall.db mcp --all`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.mcp(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "project", "", "default to the sessions of this project `DIR` (default: the working directory)")
	fl.BoolVarP(&f.all, "all", "a", false, "default to every project")
	fl.BoolVar(&f.allowWrite, "allow-write", false, "add the tools that change sessions: title_session, pin_session, rewind_session, redo_session")
	fl.IntVar(&f.maxChars, "max-chars", recallmcp.DefaultMaxResultChars, fmt.Sprintf("cap every result at `N` characters (at least %d)", recallmcp.MinMaxResultChars))
	return cmd
}

// mcp runs recall mcp: an MCP server on the command's stdin and stdout
// until the client closes them or the process is told to stop.
func (a *app) mcp(cmd *cobra.Command, f mcpFlags) error {
	ctx := cmd.Context()
	switch {
	case f.all && f.dir != "":
		return usageError("use one of them", "--all and --project both choose the default project")
	case f.maxChars < recallmcp.MinMaxResultChars:
		return usageError(fmt.Sprintf("--max-chars takes %d or more", recallmcp.MinMaxResultChars), "--max-chars %d is too small", f.maxChars)
	}
	opts := recallmcp.Options{AllowWrite: f.allowWrite, MaxResultChars: f.maxChars}
	if !f.all {
		p, err := project(f.dir)
		if err != nil {
			return err
		}
		opts.Project = p
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	srv := recallmcp.New(st, opts)
	out := &lockedWriter{w: a.stdout}
	t := &mcp.IOTransport{Reader: jsonLines(a.stdin, out), Writer: nopWriteCloser{out}}
	err = srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
		return nil // the client hung up, or we were told to stop
	}
	return fmt.Errorf("mcp: %w", err)
}

// nopWriteCloser is a writer the transport may close without closing the
// process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// lockedWriter writes one whole message at a time: the transport writes
// each of its messages in one Write, and jsonLines its answers to lines
// it keeps from the transport.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// The JSON-RPC errors jsonLines answers with itself.
const (
	rpcParseError     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}` + "\n"
	rpcInvalidRequest = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message is a JSON object (or an array of them)"}}` + "\n"
)

// jsonLines passes on to the MCP transport the lines of in that are JSON
// objects or arrays, and answers any other line itself on out with
// JSON-RPC's parse error (-32700) or invalid request (-32600), as
// JSON-RPC asks of a server: one bad line from a client must not end the
// session, as it would if the transport read it. Blank lines are skipped.
func jsonLines(in io.Reader, out io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadBytes('\n')
			switch trimmed := bytes.TrimSpace(line); {
			case len(trimmed) == 0:
			case !json.Valid(trimmed):
				_, _ = io.WriteString(out, rpcParseError)
			case trimmed[0] != '{' && trimmed[0] != '[':
				_, _ = io.WriteString(out, rpcInvalidRequest)
			default:
				if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
					return // the transport is gone
				}
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				pw.CloseWithError(err) // nil: EOF for the transport
				return
			}
		}
	}()
	return pr
}
