package testkit_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{
		// counter prints four lines, then waits to be killed.
		"counter": func() error {
			for i := 0; ; i++ {
				fmt.Printf("ack %d\n", i)
				if i == 3 {
					select {} // wait for the kill
				}
			}
		},
		"fails": func() error { return fmt.Errorf("planted %s", os.Getenv("WHAT")) },
	})
}

func TestChildKilled(t *testing.T) {
	c := testkit.Start(t, testkit.Command("counter"))
	if !c.WaitLines(4, time.Minute) {
		t.Fatalf("the child printed %q", c.Lines())
	}
	lines := c.Kill()
	if strings.Join(lines, ",") != "ack 0,ack 1,ack 2,ack 3" {
		t.Fatalf("lines %q", lines)
	}
}

func TestChildFails(t *testing.T) {
	c := testkit.Start(t, testkit.Command("fails", "WHAT=bug"))
	_, err := c.Wait()
	if err == nil || !strings.Contains(err.Error(), "planted bug") || !c.Exited() {
		t.Fatalf("err %v", err)
	}
	if c.WaitLines(1, time.Minute) {
		t.Fatal("a child that printed nothing has a line")
	}
}

func TestSeedReplays(t *testing.T) {
	a, b := testkit.Rand(t).Uint64(), testkit.Rand(t).Uint64()
	if a != b {
		t.Fatal("two generators of one run differ")
	}
	if testkit.Size(1, 2) != map[bool]int{true: 1, false: 2}[testing.Short()] {
		t.Fatal("Size ignores -short")
	}
}

// fatalRecorder is a TB that records the failure instead of stopping.
type fatalRecorder struct{ msg string }

func (*fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	testkit.Eventually(t, time.Minute, "three increments", func() bool { return n.Load() == 3 })

	var f fatalRecorder
	start := time.Now()
	testkit.Eventually(&f, 20*time.Millisecond, "the impossible", func() bool { return false })
	if !strings.Contains(f.msg, "the impossible") || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("gave up after %v with %q", time.Since(start), f.msg)
	}
}
