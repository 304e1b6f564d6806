package importtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBinary returns the running test binary, to run again as a child
// (internal/testkit.Command) whose memory is measured; under the race
// detector, whose shadow memory and slowness are not the import's, a copy
// of the package's tests built without it (the test runs in its package's
// folder).
func TestBinary(t testing.TB) string {
	t.Helper()
	if !raceEnabled {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), "plain.test")
	out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	return bin
}

// Run runs cmd (a child of the binary TestBinary returns) to its end and
// returns what it printed and its peak resident memory in bytes, which
// only Linux reports (elsewhere 0).
func Run(t testing.TB, cmd *exec.Cmd, bin string) ([]byte, int64) {
	t.Helper()
	cmd.Path, cmd.Args[0] = bin, bin
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("child: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("child: %v", err)
	}
	return out, peakRSS(cmd.ProcessState)
}

// Bounded checks that an import's memory does not grow with its input:
// measure generates an input of a size, imports it in a child process
// (Run) and returns the child's peak resident memory. Bounded measures a
// small and a large size and fails when the large one's peak is more
// than 24 MB over the small one's (the collector's noise). In the long
// tier (RECALL_LONG=1) the large size is 1 GB, and its peak must stay
// under 200 MB. Only Linux reports a child's peak: elsewhere it skips.
func Bounded(t *testing.T, small, large int64, measure func(size int64) int64) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak resident memory of a child from Linux's rusage")
	}
	long := os.Getenv("RECALL_LONG") == "1"
	if long {
		large = 1 << 30
	}
	lo, hi := measure(small), measure(large)
	if hi > lo+24<<20 {
		t.Errorf("the peak grew with the input: %.1f MB for %d MB, %.1f MB for %d MB", mb(lo), small>>20, mb(hi), large>>20)
	}
	if long && hi >= 200<<20 {
		t.Errorf("importing 1 GB peaked at %.1f MB, want < 200 MB", mb(hi))
	}
}

// mb is n bytes in MB.
func mb(n int64) float64 { return float64(n) / (1 << 20) }
