package testkit

import "time"

// TB is the part of testing.TB that Eventually needs; rapid's *T has it
// too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond every few milliseconds until it holds, failing
// the test, with what it waited for, after timeout. A test waits for a
// state this way, never by sleeping for a fixed time.
func Eventually(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
			return
		}
		time.Sleep(2 * time.Millisecond) // the polling interval
	}
}
