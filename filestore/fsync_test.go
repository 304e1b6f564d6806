//go:build linux

package filestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// The promise of each fsync policy, tested against the two ways a machine
// drops a writer:
//
//   - SIGKILL (the process dies, the kernel lives): no policy loses an
//     acknowledged batch, since the kernel holds what write accepted. The
//     log is never torn in a way a reader sees. TestCrashSIGKILL checks
//     this for both policies (its odd rounds use SyncNever), and
//     TestSyncPolicies below once more.
//   - Power loss or a kernel crash: simulated on a loop-mounted ext4 with
//     the EXT4_IOC_SHUTDOWN ioctl and its NOLOGFLUSH flag, which stops the
//     file system at once and drops everything not yet on the disk (the
//     shutdown xfstests uses). After a remount the log loads, verifies,
//     holds no partial batch, and takes the next append cleanly, under
//     either policy; under SyncNever recent batches may be gone. The cut is
//     not a faithful disk (it was seen to drop a bare write+fdatasync
//     loop's last acknowledged write now and then), so durability under
//     SyncAlways is asserted on the SIGKILL rounds only.

const envSyncMode = "FILESTORE_SYNC_MODE" // "always" or "never"

var syncKey = recall.Key{Project: "sync", Session: "s"}

func init() { childRoles["sync"] = childSync }

// childSync is the child process of TestSyncPolicies (role "sync"): it
// appends batches of one to three items to syncKey in its home and prints
// "ack <batch>" after each Append returns.
func childSync() error {
	policy := filestore.SyncAlways
	if os.Getenv(envSyncMode) == "never" {
		policy = filestore.SyncNever
	}
	s, err := childStore(policy)
	if err != nil {
		return err
	}
	var salt uint64
	fmt.Sscan(os.Getenv(envArg), &salt)
	rng := testkit.ChildRand(salt)
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		n := 1 + rng.IntN(3)
		items := make([]recall.Item, n)
		for i := range items {
			items[i] = recall.Message("user", fmt.Sprintf("b%d-i%dof%d %s", b, i, n, strings.Repeat("y", rng.IntN(6000))))
		}
		if _, err := s.Append(context.Background(), syncKey, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
			return err // the file system was shut down under us
		}
		fmt.Fprintf(out, "ack %d\n", b)
		out.Flush()
	}
}

// ext4 is a loop-mounted ext4 image that a test can "power off".
type ext4 struct {
	t        *testing.T
	img, dir string
	mounted  bool
}

// newExt4 makes a 64 MiB ext4 image and mounts it; it skips the test
// without root, mkfs.ext4 or loop devices.
func newExt4(t *testing.T) *ext4 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to loop-mount an ext4 image; run as root (as CI does) to cover power loss")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4: the power-loss test needs e2fsprogs")
	}
	tmp := t.TempDir()
	e := &ext4{t: t, img: filepath.Join(tmp, "ext4.img"), dir: filepath.Join(tmp, "mnt")}
	if err := os.Mkdir(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := os.Create(e.img)
	if err == nil {
		err = img.Truncate(64 << 20)
		img.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", e.img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v\n%s", err, out)
	}
	if err := e.mount(); err != nil {
		t.Skipf("cannot loop-mount an ext4 image (no loop devices in this container?): %v", err)
	}
	t.Cleanup(func() {
		if e.mounted {
			e.unmount()
		}
	})
	return e
}

func (e *ext4) mount() error {
	out, err := exec.Command("mount", "-o", "loop", e.img, e.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount: %v: %s", err, out)
	}
	e.mounted = true
	return nil
}

func (e *ext4) unmount() {
	e.t.Helper()
	if out, err := exec.Command("umount", e.dir).CombinedOutput(); err != nil {
		e.t.Fatalf("umount: %v: %s", err, out)
	}
	e.mounted = false
}

// powerOff stops the file system as a power cut would: whatever is not on
// the disk yet (page cache, uncommitted journal) is gone. The mount stays
// until unmount, failing every call with EIO.
func (e *ext4) powerOff() {
	e.t.Helper()
	const ext4IocShutdown = 0x8004587d   // _IOR('X', 125, __u32)
	const ext4GoingFlagsNoLogFlush = 0x2 // do not flush the journal either
	d, err := os.Open(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	defer d.Close()
	if err := unix.IoctlSetPointerInt(int(d.Fd()), ext4IocShutdown, ext4GoingFlagsNoLogFlush); err != nil {
		e.t.Fatalf("EXT4_IOC_SHUTDOWN: %v", err)
	}
}

// TestSyncPolicies runs, for each policy, rounds of a child appending to a
// store on a loop-mounted ext4 that is stopped under it: by SIGKILL of the
// child in some rounds, by a simulated power loss in others. It checks each
// policy's promise (see the top of this file) and reports how many
// acknowledged batches each power loss took under SyncNever.
func TestSyncPolicies(t *testing.T) {
	fs := newExt4(t)
	rounds := testkit.Size(2, 6) // odd rounds cut the power, even ones SIGKILL
	for _, mode := range []string{"always", "never"} {
		t.Run(mode, func(t *testing.T) {
			rng := testkit.Rand(t)
			var lostTotal, lossRounds int
			for round := range rounds {
				power := round%2 == 1
				home := filepath.Join(fs.dir, fmt.Sprintf("%s-%d", mode, round))
				acked := runSyncChild(t, fs, home, mode, round, power, rng)
				if power {
					fs.unmount()
					if err := fs.mount(); err != nil {
						t.Fatal(err)
					}
				}
				present, verified := checkSyncLog(t, home, acked)
				lost := max(0, acked+1-present)
				switch {
				case !power:
					if lost > 0 {
						t.Fatalf("round %d (%s, SIGKILL): %d acknowledged batches lost (acked through b%d, the log ends at b%d)", round, mode, lost, acked, present-1)
					}
				case mode == "always":
					// The simulated power cut is not a faithful disk: on this
					// loop-mounted ext4 it was seen to drop the last
					// acknowledged write of a bare write+fdatasync loop in
					// 2-4 rounds of 30, so it cannot prove durability. The
					// rounds still prove the log loads and verifies after a
					// cut; the loss is reported, and SIGKILL rounds carry the
					// strict promise.
					if lost > 0 {
						t.Logf("round %d (always, power loss): %d acknowledged batches missing after the simulated cut", round, lost)
					}
				default:
					lostTotal += lost
					lossRounds++
				}
				if !verified {
					t.Fatalf("round %d: the log does not verify", round)
				}
			}
			if mode == "never" {
				t.Logf("SyncNever: %d power losses took %d acknowledged batches (allowed: the policy promises a loadable log, not durability)", lossRounds, lostTotal)
			}
		})
	}
}

// runSyncChild starts the child on home, lets it acknowledge a few batches,
// then stops it, by SIGKILL or by a power loss, and returns the highest
// batch it acknowledged (-1 for none).
func runSyncChild(t *testing.T, fs *ext4, home, mode string, round int, power bool, rng *rand.Rand) int {
	t.Helper()
	c := testkit.Start(t, testkit.Command("sync", envHome+"="+home, envSyncMode+"="+mode, envArg+"="+strconv.Itoa(round)))
	if wait := 5 + rng.IntN(40); !c.WaitLines(wait, time.Minute) {
		t.Fatalf("the child did not acknowledge %d batches: %q\n%s", wait, c.Lines(), c.Stderr())
	}
	time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // a random moment to stop
	if !power {
		return lastAck(c.Kill()) // acknowledged before the kill: its Append returned
	}
	fs.powerOff()
	// The child fails with EIO at its next call, as it should; it is
	// killed if it does not.
	c.WaitUntil(func([]string) bool { return false }, time.Minute)
	if !c.Exited() {
		return lastAck(c.Kill())
	}
	lines, _ := c.Wait()
	return lastAck(lines)
}

// checkSyncLog opens the store at home after a stop and returns how many
// batches its log holds (each whole, in order: a batch cut in part fails
// the test) and whether storekit.VerifySession passes. A further append must
// land right after them.
func checkSyncLog(t *testing.T, home string, acked int) (batches int, verified bool) {
	t.Helper()
	ctx := context.Background()
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, es, err := s.Load(ctx, syncKey)
	if errors.Is(err, recall.ErrNotFound) {
		return 0, true // not even the first batch reached the disk
	}
	if err != nil {
		t.Fatalf("Load after the stop: %v", err)
	}
	if m.Corrupt != 0 {
		t.Errorf("%d corrupt lines after the stop", m.Corrupt)
	}
	for i := 0; i < len(es); {
		var b, idx, n int
		if _, err := fmt.Sscanf(recall.Item(es[i].Data).Text(), "b%d-i%dof%d", &b, &idx, &n); err != nil || b != batches || idx != 0 {
			t.Fatalf("entry %d (%.30s) does not start batch b%d", es[i].Seq, recall.Item(es[i].Data).Text(), batches)
		}
		for j := range n {
			var b2, idx2 int
			if i+j >= len(es) {
				t.Fatalf("batch b%d cut after %d of %d items", b, j, n)
			}
			if _, err := fmt.Sscanf(recall.Item(es[i+j].Data).Text(), "b%d-i%d", &b2, &idx2); err != nil || b2 != b || idx2 != j {
				t.Fatalf("batch b%d interrupted at item %d", b, j)
			}
		}
		i += n
		batches++
	}
	verified = storekit.VerifySession(ctx, s, syncKey) == nil
	seq, err := s.Append(ctx, syncKey, recall.Guard{}, recall.Message("user", "after").Entry())
	if err != nil || seq != m.LastSeq+1 {
		t.Fatalf("Append after the stop = %d, %v; want seq %d", seq, err, m.LastSeq+1)
	}
	return batches, verified && storekit.VerifySession(ctx, s, syncKey) == nil
}
