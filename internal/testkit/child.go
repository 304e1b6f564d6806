package testkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RoleEnv is the environment variable that makes the test binary a child
// process playing the named role (see Main).
const RoleEnv = "RECALL_TEST_CHILD"

// Main is a package's TestMain when its tests start children: in a child
// it runs the role's function and exits (0 when it returns nil; 2, with
// the error on stderr, when it fails; 3 for a role it does not know);
// otherwise it runs the tests.
func Main(m *testing.M, roles map[string]func() error) {
	role := os.Getenv(RoleEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	fn, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "testkit: unknown child role %q\n", role)
		os.Exit(3)
	}
	if err := fn(); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Command returns the command that runs the test binary as a child in
// role, with env added to this process's environment and the run's seed
// passed on. Set its Stdin (or take a pipe) before Start.
func Command(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), RoleEnv+"="+role, SeedEnv+"="+strconv.FormatUint(base(), 10))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// Child is a running child process. It collects the lines the child
// prints on stdout (its acknowledgements); its stderr is kept for the
// test's messages.
type Child struct {
	t      testing.TB
	cmd    *exec.Cmd
	stderr SyncBuffer

	mu     sync.Mutex
	lines  []string
	signal chan struct{} // a buffered wake-up: a line came, or the child ended
	done   chan struct{} // closed once the child has exited and its stdout is read
	err    error         // cmd.Wait's result, set before done closes
}

// Start starts cmd (from Command) and collects its output. The child is
// killed, if it still runs, when the test ends.
func Start(t testing.TB, cmd *exec.Cmd) *Child {
	t.Helper()
	c := &Child{t: t, cmd: cmd, signal: make(chan struct{}, 1), done: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("testkit: start child: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
			c.wake()
		}
		c.err = cmd.Wait()
		close(c.done)
		c.wake()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

func (c *Child) wake() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// Lines returns a copy of the lines the child has printed so far.
func (c *Child) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// Stderr returns what the child has written to stderr so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// WaitLines waits until the child has printed n lines, and reports whether
// it has; it gives up when the child exits or after timeout.
func (c *Child) WaitLines(n int, timeout time.Duration) bool {
	return c.WaitUntil(func(lines []string) bool { return len(lines) >= n }, timeout)
}

// WaitUntil waits until cond holds for the lines printed so far, and
// reports whether it does; it gives up when the child exits or after
// timeout.
func (c *Child) WaitUntil(cond func(lines []string) bool, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		if cond(c.Lines()) {
			return true
		}
		select {
		case <-c.signal:
		case <-c.done:
			return cond(c.Lines())
		case <-deadline:
			return false
		}
	}
}

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Kill kills the child with SIGKILL, waits until it is gone and its output
// read, and returns every line it printed. The test fails if the child had
// exited by itself before the kill.
func (c *Child) Kill() []string {
	c.t.Helper()
	if c.Exited() {
		c.t.Fatalf("testkit: the child exited before the kill (%v)\n%s", c.err, c.Stderr())
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("testkit: kill child: %v", err)
	}
	<-c.done
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.t.Fatalf("testkit: the child did not die of SIGKILL (%v)\n%s", c.err, c.Stderr())
	}
	return c.Lines()
}

// Wait waits for the child to exit by itself and returns its lines and
// cmd.Wait's error (with its stderr in the message when it failed).
func (c *Child) Wait() ([]string, error) {
	<-c.done
	if c.err != nil {
		return c.Lines(), fmt.Errorf("%w\n%s", c.err, c.Stderr())
	}
	return c.Lines(), nil
}

// SyncBuffer is a bytes.Buffer safe for writers and a reader at once: a
// child process's output, a server's log.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
