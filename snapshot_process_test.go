//go:build linux

package sketch

// Snapshots taken while two other processes, of both backends where both
// can be built, keep adding: every add that returned before a snapshot
// began is in it.

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	envSnapKind     = "SKETCH_TEST_SNAP_KIND"     // snapadd: the kind (snapKinds)
	envSnapProgress = "SKETCH_TEST_SNAP_PROGRESS" // snapadd: the progress file
)

// The progress file is a few words shared by the parent and the
// children: word 0 is the parent's stop flag, word 1+i how many of child
// i's adds have returned. A child stores it after each add returns, so
// that a parent that loads it before a snapshot knows which adds the
// snapshot must hold.
func mapProgress(path string, create bool) ([]uint64, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if create {
		if err := f.Truncate(pageSize); err != nil {
			return nil, err
		}
	}
	b, err := unix.Mmap(int(f.Fd()), 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), pageSize/8), nil
}

// snapChildKey is child c's i-th key.
func snapChildKey(c int, i uint64) []byte { return []byte(fmt.Sprintf("c%d-%d", c, i)) }

// snapMaxAdds bounds a child's adds, so that the parent's checks stay
// short under the race detector.
const snapMaxAdds = 300_000

var _ = role("snapadd", childSnapAdd)

// childSnapAdd adds its keys, each once, and "hot" once with each, until
// the parent says stop, publishing how many returned; a counting
// filter's child also adds and removes a key of its own every fourth
// time, so that snapshots run beside removes.
func childSnapAdd() error {
	k := snapKindNamed(os.Getenv(envSnapKind))
	if k == nil {
		return fmt.Errorf("no kind %q", os.Getenv(envSnapKind))
	}
	s, err := k.open(Path(os.Getenv(envPath)), true)
	if err != nil {
		return err
	}
	defer s.Close()
	prog, err := mapProgress(os.Getenv(envSnapProgress), false)
	if err != nil {
		return err
	}
	child := envInt(envChild)
	cbf, isCBF := s.(snapCBFs)
	if err := childBarrier(); err != nil {
		return err
	}
	for i := uint64(0); atomic.LoadUint64(&prog[0]) == 0; i++ {
		if i == snapMaxAdds {
			// Enough: wait for the parent's word.
			for atomic.LoadUint64(&prog[0]) == 0 {
				time.Sleep(time.Millisecond)
			}
			break
		}
		if err := s.add(snapChildKey(child, i)); err != nil {
			return err
		}
		if err := s.add([]byte("hot")); err != nil {
			return err
		}
		if isCBF && i%4 == 0 {
			tmp := []byte(fmt.Sprintf("tmp%d-%d", child, i))
			if _, err := cbf.Add(tmp); err != nil {
				return err
			}
			if removed, err := cbf.Remove(tmp); err != nil || !removed {
				return fmt.Errorf("remove %s: %v, %v", tmp, removed, err)
			}
		}
		atomic.StoreUint64(&prog[1+child], i+1)
	}
	return nil
}

// TestSnapshot_WhileTwoProcessesAdd takes three snapshots of each kind
// while two processes keep adding, and checks each against what the
// children had published before it began: every key they had added is
// in it, and a Count-Min snapshot counts "hot" at least once for each.
func TestSnapshot_WhileTwoProcessesAdd(t *testing.T) {
	requireReexec(t)
	exe := bothBackends(t)
	for i := range snapKinds {
		k := &snapKinds[i]
		t.Run(k.name, func(t *testing.T) {
			path := tempPath(t, "src")
			src := mustSnapOpen(t, k, Path(path), false)
			progPath := tempPath(t, "progress")
			prog, err := mapProgress(progPath, true)
			if err != nil {
				t.Fatal(err)
			}
			var specs []childSpec
			for c := range 2 {
				specs = append(specs, childSpec{exe: exe(c), name: fmt.Sprintf("adder %d", c), role: "snapadd",
					env: envs(envPath, path, envChild, c, envSnapKind, k.name, envSnapProgress, progPath)})
			}
			hs := startGroup(t, childContext(t), specs)
			stopped := false
			stop := func() {
				if !stopped {
					atomic.StoreUint64(&prog[0], 1)
					stopped = true
					waitAll(t, hs)
				}
			}
			defer stop()
			type taken struct {
				cp       snapStructure
				n, after [2]uint64
			}
			var snaps []taken
			deadline := time.Now().Add(patience)
			for round := range 3 {
				// Let both children get going, then snapshot mid-stream.
				for atomic.LoadUint64(&prog[1]) < uint64(round+1)*5000 || atomic.LoadUint64(&prog[2]) < uint64(round+1)*5000 {
					if time.Now().After(deadline) {
						t.Fatalf("the children added %d and %d keys in 30 s", atomic.LoadUint64(&prog[1]), atomic.LoadUint64(&prog[2]))
					}
					time.Sleep(time.Millisecond)
				}
				n := [2]uint64{atomic.LoadUint64(&prog[1]), atomic.LoadUint64(&prog[2])}
				cp, err := src.snapshot(Memory())
				if err != nil {
					t.Fatal(err)
				}
				after := [2]uint64{atomic.LoadUint64(&prog[1]), atomic.LoadUint64(&prog[2])}
				snaps = append(snaps, taken{cp, n, after})
			}
			// The children stop before the checks, which would otherwise
			// race them for the machine.
			stop()
			for round, sn := range snaps {
				cp, n, after := sn.cp, sn.n, sn.after
				missing := 0
				for c := range 2 {
					for i := range n[c] {
						if cp.answer(snapChildKey(c, i)) == 0 {
							if missing++; missing <= 5 {
								t.Errorf("round %d: the snapshot lacks %s, whose add returned before it began", round, snapChildKey(c, i))
							}
						}
					}
				}
				if missing > 5 {
					t.Errorf("round %d: %d keys missing in all", round, missing)
				}
				if got := cp.answer([]byte("hot")); k.counts && got < n[0]+n[1] {
					t.Errorf("round %d: the snapshot estimates hot at %d, want >= %d", round, got, n[0]+n[1])
				}
				// Adds cut by the copy are in some rows only: that is
				// ErrInconsistent at most, never damage.
				if err := cp.handle().Check(); err != nil && !errors.Is(err, ErrInconsistent) {
					t.Errorf("round %d: Check of the snapshot: %v", round, err)
				}
				t.Logf("round %d: %d keys added before the snapshot, %d by its end", round, n[0]+n[1], after[0]+after[1])
				cp.Close()
			}
		})
	}
}
