package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/agent/workspace"
	"github.com/recallkit/recall/internal/sessionref"
)

// pickValue is what --resume holds when given without a value: open the
// picker.
const pickValue = "pick"

// chatFlags are the flags of recall chat.
type chatFlags struct {
	cont    bool
	resume  string
	fork    bool
	name    string
	dir     string
	prompt  string
	mirror  string
	model   modelFlags
	history int
	recap   int
	memory  bool
	compact int
	// output is -p's --output-format: text, json or stream-json.
	output string
}

func newChatCmd(a *app) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to the agent; the conversation is saved as it goes",
		Long: `Talk to the agent in a REPL. Every message and reply is saved as soon as it
exists, so quitting (or a crash) loses nothing; --continue picks up the most
recently updated session of the project, --resume any session by ID prefix or
exact title. On start, chat prints how many items it restored.

Without OPENAI_API_KEY the built-in offline model answers: it says it is
offline, counts the earlier items it sees and echoes you. Set OPENAI_API_KEY
(and OPENAI_BASE_URL for another server, RECALL_MODEL for the model) to talk
to a real model; --api chat speaks Chat Completions for Ollama, vLLM,
llama.cpp or LM Studio.

The agent can list, read and write files inside the project directory
(--project, default the working directory) and nowhere else.

--memory keeps the project's memory: after every exchange a cheap model
call may note decisions, rules and pitfalls in MEMORY.md next to the
project's sessions, and every session chat opens gets the notes in its
system prompt (see 'recall memory'). --compact-tokens N compacts the session
(see 'recall compact') before a reply once its history passes about N
tokens, estimated as a token per 4 bytes.

-p/--print sends one prompt, prints the reply and exits; text piped on stdin
is added to the prompt ('-p -' takes the whole prompt from stdin). Without
-p, piped stdin is read as REPL lines, slash commands included.

Commands inside the REPL:
  ` + indentLines(strings.TrimSuffix(replCommands, "\n"), "  "),
		Example: `  recall chat
  recall chat --continue
  recall chat --resume 0199a3f2-1b --fork --name "other approach"
  recall chat -p "summarize README.md"
  git diff | recall chat -p "review this diff"`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			// --resume takes an optional value, so "-r abc" arrives as the
			// flag without a value plus the argument "abc".
			if len(argv) == 1 {
				if f.resume != pickValue {
					return usageError(`send a prompt with -p "..." or resume with --resume ID`, "chat takes no argument, got %q", argv[0])
				}
				f.resume, argv = argv[0], nil
			}
			switch fl := cmd.Flags(); {
			case fl.Changed("print") && f.prompt == "":
				return usageError(`give the prompt: -p "..." (or -p - to read it from stdin)`, "-p got an empty prompt")
			case fl.Changed("resume") && f.resume == "":
				return usageError("give an ID or title, or no value to pick one", "--resume got an empty value")
			case f.output != outputText && f.output != outputJSON && f.output != outputStreamJSON:
				return usageError("--output-format takes text, json or stream-json", "unknown output format %q", f.output)
			case fl.Changed("output-format") && !fl.Changed("print"):
				return usageError(`use it with -p "..."`, "--output-format needs -p")
			}
			return a.chat(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recently updated session of the project")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume the session with this `ID|TITLE` (ID prefix or exact title; no value: pick one)")
	fl.Lookup("resume").NoOptDefVal = pickValue
	fl.BoolVar(&f.fork, "fork", false, "with --continue or --resume: continue in a fork, leaving the original as it is")
	fl.StringVar(&f.name, "name", "", "title the session")
	fl.StringVar(&f.dir, "project", "", "project directory: sessions are grouped by it and tools are confined to it (default: the working directory)")
	fl.StringVarP(&f.prompt, "print", "p", "", "send this `PROMPT`, print the reply and exit ('-': read it from stdin)")
	fl.StringVar(&f.output, "output-format", outputText, "with -p: text, json (one result object) or stream-json (one JSON event per line)")
	fl.StringVar(&f.mirror, "mirror", "", "also copy the sessions, in the background, to the store at this `URL` (default $RECALL_MIRROR; see 'recall mirror')")
	fl.IntVar(&f.history, "history", 0, "send at most the newest N stored items to the model (0: all)")
	fl.IntVar(&f.recap, "show-history", historyTurnsDefault, "on resuming, print the last `N` turns of the conversation (0: none)")
	fl.BoolVar(&f.memory, "memory", false, "keep the project's memory in MEMORY.md and give it to the sessions (see 'recall memory')")
	fl.IntVar(&f.compact, "compact-tokens", compactTokensDefault(), "compact the session once its history passes about `N` tokens (0: never; default $"+envCompactTokens+", else 0)")
	f.model.register(fl)
	return cmd
}

// chat runs recall chat: it picks the session, then runs one prompt or the
// REPL.
func (a *app) chat(cmd *cobra.Command, f chatFlags) error {
	ctx := cmd.Context()
	switch {
	case f.cont && f.resume != "":
		return usageError("use one of them", "--continue and --resume both choose the session")
	case f.fork && !f.cont && f.resume == "":
		return usageError("fork what: add --continue or --resume ID", "--fork needs --continue or --resume")
	case f.history < 0:
		return usageError("--history 0 sends everything", "--history must not be negative")
	case f.recap < 0:
		return usageError("--show-history 0 prints none", "--show-history must not be negative")
	case f.compact < 0:
		return usageError("--compact-tokens 0 never compacts", "--compact-tokens must not be negative")
	}
	dir := f.dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("project directory: %w", err)
	}
	proj, err := project(dir)
	if err != nil {
		return err
	}
	interactive := f.prompt == "" && isTerminal(a.stdin) && isTerminal(a.stdout)
	var prompt string
	if f.prompt != "" {
		if prompt, err = a.readPrompt(f.prompt); err != nil {
			return err
		}
	}
	model, err := f.model.build()
	if err != nil {
		return err
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		return withHint(err, "--project takes a directory you can read")
	}
	defer ws.Close()
	if err := a.useMirror(ctx, f.mirror); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(errInterrupted) } // only Ctrl-C calls it before the end
	defer cancel()
	c := &chatSession{
		cancelAll:   cancel,
		app:         a,
		st:          st,
		project:     proj,
		interactive: interactive,
		model:       model,
		history:     f.history,
		recapTurns:  f.recap,
		agent: &agent.Agent{
			Name:         "recall",
			Instructions: instructions(dir),
			Model:        model.model,
			Tools:        ws.Tools(),
		},
		workspaces: newChatWorkspaces(dir, proj, ws),
	}
	defer c.workspaces.close()
	if c.extras, err = newChatExtras(ctx, c, f.memory, f.compact, model.cheap); err != nil {
		return err
	}
	defer c.catchInterrupts()()
	key, err := c.choose(ctx, f)
	if err != nil {
		return err // errNoChoice too: exit 130
	}
	if err := c.switchTo(ctx, key, f.name); err != nil {
		return err
	}
	if f.prompt != "" && f.output != outputText {
		return interrupted(ctx, c.sendStructured(ctx, prompt, f.output, dir))
	}
	if f.prompt != "" {
		return interrupted(ctx, c.send(ctx, prompt))
	}
	return c.repl(ctx)
}

// readPrompt returns the -p prompt: the flag's text, followed by what is
// piped on stdin; "-" takes the prompt from stdin alone.
func (a *app) readPrompt(flag string) (string, error) {
	if flag != "-" && !hasPipedInput(a.stdin) {
		return flag, nil
	}
	b, err := io.ReadAll(a.stdin)
	if err != nil {
		return "", fmt.Errorf("read prompt from stdin: %w", err)
	}
	in := strings.TrimRight(string(b), "\n")
	switch {
	case flag == "-" && strings.TrimSpace(in) == "":
		return "", usageError(`pipe the prompt in, or pass it: -p "..."`, "-p - read an empty prompt from stdin")
	case flag == "-":
		return in, nil
	case strings.TrimSpace(in) == "":
		return flag, nil
	}
	return flag + "\n\n" + in, nil
}

// hasPipedInput reports whether r is a pipe or a file, whose contents
// belong to the prompt; a terminal or /dev/null is not.
func hasPipedInput(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular()
}

// choose returns the key of the session to open: the newest of the
// project (--continue), the one --resume names or the user picks, or a
// new one; forked when --fork.
func (c *chatSession) choose(ctx context.Context, f chatFlags) (recall.Key, error) {
	var src *recall.Meta
	switch {
	case f.cont:
		page, err := c.st.List(ctx, c.project, recall.ListOptions{Limit: 1})
		if err != nil {
			return recall.Key{}, err
		}
		if len(page.Sessions) == 0 {
			c.app.notef("no earlier session in this project to continue; starting a new one\n")
		} else {
			src = &page.Sessions[0]
		}
	case f.resume == pickValue:
		m, err := c.pick(ctx)
		if err != nil {
			return recall.Key{}, err
		}
		src = &m
	case f.resume != "":
		m, err := sessionref.Resolve(ctx, c.st, c.project, f.resume)
		if err != nil {
			return recall.Key{}, err
		}
		src = &m
	}
	if src == nil {
		return c.newKey(), nil
	}
	if !f.fork {
		return src.Key, nil
	}
	m, err := forkSession(ctx, c.st, *src, 0, "")
	if err != nil {
		return recall.Key{}, err
	}
	c.app.notef("forked %s into %s\n", src.Key.Session, m.Key.Session)
	return m.Key, nil
}

// pick lets the user choose a session of the project (of every project
// when this one has none) in the picker. Outside a terminal it prints the
// list and fails with a usage error, since nothing can be picked.
func (c *chatSession) pick(ctx context.Context) (recall.Meta, error) {
	terminal := isTerminal(c.app.stdin) && isTerminal(c.app.stdout)
	first, err := firstSessions(ctx, c.st, c.project, terminal)
	if err != nil {
		return recall.Meta{}, err
	}
	if len(first.metas) == 0 {
		return recall.Meta{}, withHint(errors.New("no sessions to resume"), "start one with 'recall chat'")
	}
	if !terminal {
		if err := writeSessions(c.app.stdout, first.metas, nil, columns{project: first.all}); err != nil {
			return recall.Meta{}, err
		}
		return recall.Meta{}, usageError("pass one of the IDs above: recall chat --resume ID", "--resume without an ID needs a terminal to pick in")
	}
	return pickFromStore(ctx, c.app.stdin, c.app.stdout, c.st, c.project, first)
}

// newKey returns the key of a new session in the project.
func (c *chatSession) newKey() recall.Key {
	return recall.Key{Project: c.project, Session: recall.NewSessionID()}
}
