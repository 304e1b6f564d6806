// Command recall chats with an agent whose conversations persist, and
// manages the sessions of a recall store: list, show, fork, rename,
// archive, pin, remove, clean up and check them.
//
// Run "recall --help" for the commands; docs/CLI.md is the full reference.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// readOnlyCommands only read the store: they create neither the home, nor
// a database, nor a folder.
var readOnlyCommands = map[string]bool{
	"recall ls": true, "recall show": true, "recall search": true,
	"recall projects": true, "recall check": true, "recall export": true,
}

// run executes one command line and returns the exit code. Every error
// is reported here, on stderr, in one line.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.Version = version()
	root.SetVersionTemplate("recall {{.Version}}\n")
	setupCompletion(root, a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if c, _, err := root.Find(args); err == nil {
		a.readOnly = readOnlyCommands[c.CommandPath()]
	}
	err := root.ExecuteContext(ctx)
	if cerr := a.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, errNoChoice) { // leaving the picker says nothing
		fmt.Fprintln(stderr, errorLine(err))
	}
	return exitCode(err)
}
