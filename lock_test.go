//go:build linux

package sketch

// Tests of the file's reader/writer lock (lock_linux.go): exclusion within
// a process and across processes, recovery from holders and readers killed
// with SIGKILL, PID namespaces, lost locks and damaged lock words. The
// lock lives in every file's header, so a Count-Min file carries it here.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Environment of a lock helper process.
const (
	envLockMode  = "SKETCH_TEST_LOCKMODE"  // lockhold: "w" or "r"
	envLockIters = "SKETCH_TEST_LOCKITERS" // lockcount: increments to make
)

// lockHandle opens the Count-Min file at path and joins its lock.
func lockHandle(t testing.TB, path string) (*CountMin, *fileLock) {
	t.Helper()
	c, err := OpenCountMin(Path(path), lockCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.m.joinLock(); err != nil {
		t.Fatal(err)
	}
	return c, c.m.lk
}

var lockCfg = CountMinConfig{Rows: 1, Width: 64}

// scratch returns word i of the file's counters, used by the tests as
// data the lock guards.
func scratch(c *CountMin, i int) *uint64 { return (*uint64)(unsafe.Add(c.l.Cells, i*8)) }

// guardedIncrement adds one to words 0 and 1 in two steps: lost updates or
// words that differ show two writers inside at once.
func guardedIncrement(c *CountMin) {
	a, b := scratch(c, 0), scratch(c, 1)
	v := atomic.LoadUint64(a)
	runtime.Gosched() // widen the window another writer or a reader would need
	atomic.StoreUint64(a, v+1)
	atomic.StoreUint64(b, atomic.LoadUint64(b)+1)
}

// TestLock_ExclusionInProcess: goroutines on two handles of one file,
// writers and readers: no lost update, and no reader sees a write half
// done.
func TestLock_ExclusionInProcess(t *testing.T) {
	path := tempPath(t, "cms")
	c1, l1 := lockHandle(t, path)
	_, l2 := lockHandle(t, path)
	if l1.id == l2.id {
		t.Fatalf("two handles got the same token id %d", l1.id)
	}
	const writers, iters = 4, 2000
	var wg sync.WaitGroup
	var torn atomic.Int64
	for w := range writers {
		l := []*fileLock{l1, l2}[w%2]
		wg.Go(func() {
			for range iters {
				l.lock()
				guardedIncrement(c1)
				if err := l.unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range iters {
				l.rlock()
				if atomic.LoadUint64(scratch(c1, 0)) != atomic.LoadUint64(scratch(c1, 1)) {
					torn.Add(1)
				}
				l.runlock()
			}
		})
	}
	wg.Wait()
	if got := atomic.LoadUint64(scratch(c1, 0)); got != writers*iters {
		t.Errorf("guarded counter = %d, want %d: writers overlapped", got, writers*iters)
	}
	if n := torn.Load(); n != 0 {
		t.Errorf("readers saw %d half-done writes", n)
	}
}

// lockChild is a helper process holding or using the lock.
type lockChild struct {
	*helper
	out   *bufio.Reader
	stdin io.WriteCloser
}

// startLockChild starts a child in role with the file at path; argv
// prefixes the test binary (to run it under unshare, say).
func startLockChild(t *testing.T, ctx context.Context, role, path string, env []string, argv ...string) *lockChild {
	t.Helper()
	args := append(argv, selfExe(t), "-test.run=^TestHelperProcess$")
	return startLockChildCmd(t, ctx, role, role, path, env, args)
}

// startLockChildCmd runs args as a helper process in role. Its stdout is a
// pipe of our own rather than StdoutPipe's, which Wait closes when the
// child exits, losing lines not yet read ("released").
func startLockChildCmd(t *testing.T, ctx context.Context, name, role, path string, env, args []string) *lockChild {
	t.Helper()
	h := &helper{name: name, done: make(chan struct{})}
	h.cmd = exec.CommandContext(ctx, args[0], args[1:]...)
	h.cmd.Env = append(os.Environ(), envRole+"="+role, envPath+"="+path, "GORACE=atexit_sleep_ms=0")
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stderr = &h.stderr
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close() })
	h.cmd.Stdout = w
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.WaitDelay = 5 * time.Second
	err = h.cmd.Start()
	w.Close() // the child's now
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	lc := &lockChild{helper: h, out: bufio.NewReader(stdout), stdin: stdin}
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("%s exited with %v\n--- stderr:\n%s", h.name, h.err, h.stderr.String())
		}
	})
	return lc
}

// expect reads the child's next line and fails unless it is want.
func (lc *lockChild) expect(t *testing.T, want string) {
	t.Helper()
	line, err := lc.out.ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("%s said %q (%v), want %q", lc.name, line, err, want)
	}
}

var _ = role("lockhold", childLockHold)

// childLockHold joins the lock of the file at envPath, takes it (write or
// read, envLockMode; through the core envLockCore picks), says "held", and
// keeps it until stdin closes; then it releases it and says "released".
func childLockHold() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), lockCfg)
	if err != nil {
		return err
	}
	if err := c.m.joinLock(); err != nil {
		return err
	}
	l := c.m.lk
	ops := childLockOps(l)
	write := os.Getenv(envLockMode) == "w"
	take := ops.rlock
	if write {
		take = ops.lock
	}
	if err := take(); err != nil {
		return err
	}
	fmt.Printf("held %d\n", l.id)
	io.Copy(io.Discard, os.Stdin)
	if write {
		if err := ops.unlock(); err != nil {
			return err
		}
	} else {
		ops.runlock()
	}
	fmt.Println("released")
	return nil
}

var _ = role("lockcount", childLockCount)

// childLockCount makes envLockIters guarded increments under the write
// lock, with read-locked checks between them, through the core envLockCore
// picks.
func childLockCount() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), lockCfg)
	if err != nil {
		return err
	}
	if err := c.m.joinLock(); err != nil {
		return err
	}
	ops := childLockOps(c.m.lk)
	if err := childBarrier(); err != nil {
		return err
	}
	for range envInt(envLockIters) {
		if err := ops.lock(); err != nil {
			return err
		}
		guardedIncrement(c)
		if err := ops.unlock(); err != nil {
			return err
		}
		if err := ops.rlock(); err != nil {
			return err
		}
		a, b := atomic.LoadUint64(scratch(c, 0)), atomic.LoadUint64(scratch(c, 1))
		ops.runlock()
		if a != b {
			return fmt.Errorf("a reader saw a write half done: %d, %d", a, b)
		}
	}
	return nil
}

// TestLock_Processes: four processes each make guarded increments under
// the write lock and check them under the read lock; none is lost.
func TestLock_Processes(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "cms")
	c, _ := lockHandle(t, path)
	const children, iters = 4, 3000
	var specs []childSpec
	for i := range children {
		specs = append(specs, childSpec{name: fmt.Sprintf("counter %d", i), role: "lockcount",
			env: envs(envLockIters, iters)})
	}
	for i := range specs {
		specs[i].env = append(specs[i].env, envPath+"="+path)
	}
	for _, h := range startGroup(t, childContext(t), specs) {
		h.wait(t)
	}
	if got := atomic.LoadUint64(scratch(c, 0)); got != children*iters {
		t.Errorf("guarded counter = %d, want %d", got, children*iters)
	}
}

// TestLock_KillHolder: a holder killed with SIGKILL never blocks anyone for
// long, whether a waiter was already parked when it died or came after.
// The bound is generous; BenchmarkLockRecovery measures the latency.
func TestLock_KillHolder(t *testing.T) {
	requireReexec(t)
	for _, tc := range []struct {
		name   string
		mode   string
		parked bool
		take   func(l *fileLock) error
		untake func(l *fileLock)
	}{
		{"writer, waiter parked", "w", true, (*fileLock).lock, func(l *fileLock) { l.unlock() }},
		{"writer, no waiter", "w", false, (*fileLock).lock, func(l *fileLock) { l.unlock() }},
		{"reader, waiter parked", "r", true, (*fileLock).lock, func(l *fileLock) { l.unlock() }},
		{"reader, no waiter", "r", false, (*fileLock).lock, func(l *fileLock) { l.unlock() }},
		{"writer, reader waits", "w", true, (*fileLock).rlock, (*fileLock).runlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			_, l := lockHandle(t, path)
			child := startLockChild(t, childContext(t), "lockhold", path, envs(envLockMode, tc.mode))
			child.expect(t, "held 1")
			var done <-chan struct{}
			if tc.parked {
				done = mustBlock(t, func() { tc.take(l) }, 50*time.Millisecond)
			}
			killed := time.Now()
			if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if tc.parked {
				select {
				case <-done:
				case <-time.After(patience):
					t.Fatalf("the parked waiter did not get the lock within %v of the holder's death", patience)
				}
			} else {
				<-child.done
				mustAcquire(t, func() { tc.take(l) }, patience)
			}
			t.Logf("lock taken %v after the SIGKILL", time.Since(killed))
			tc.untake(l)
			// The lock works as before.
			mustAcquire(t, l.lock, time.Second)
			if err := l.unlock(); err != nil {
				t.Errorf("unlock after recovery: %v", err)
			}
		})
	}
}

// TestLock_PIDNamespace: a contender in another PID namespace, which sees
// no process with the holder's PID, waits for the live holder, and still
// recovers the lock when the holder is killed.
func TestLock_PIDNamespace(t *testing.T) {
	requireReexec(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare command")
	}
	if err := exec.Command(unshare, "--pid", "--fork", "true").Run(); err != nil {
		t.Skipf("unshare --pid does not work here: %v", err)
	}
	path := tempPath(t, "cms")
	lockHandle(t, path) // creates the file
	ctx := childContext(t)
	holder := startLockChild(t, ctx, "lockhold", path, envs(envLockMode, "w"))
	holder.expect(t, "held 1")
	// The contender runs in a new PID namespace: the holder's PID means
	// nothing there.
	contender := startLockChild(t, ctx, "lockhold", path, envs(envLockMode, "w"), unshare, "--pid", "--fork", "--kill-child")
	got := make(chan string, 1)
	go func() {
		line, _ := contender.out.ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case line := <-got:
		t.Fatalf("the contender in another PID namespace took the lock from a live holder: %q", line)
	case <-time.After(300 * time.Millisecond):
	}
	holder.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case line := <-got:
		if !strings.HasPrefix(line, "held ") {
			t.Fatalf("contender said %q", line)
		}
	case <-time.After(patience):
		t.Fatalf("the contender did not recover the lock within %v of the holder's death", patience)
	}
	contender.stdin.Close()
	contender.expect(t, "released")
}

// TestLock_LostLock: a handle taken for dead (its token released) loses
// the lock to a contender, and its unlock fails without touching the new
// holder's state.
func TestLock_LostLock(t *testing.T) {
	path := tempPath(t, "cms")
	a, la := lockHandle(t, path)
	_, lb := lockHandle(t, path)
	la.lock()
	// A's token goes as if its process had died.
	closeFd(a.m.res.tokenFd)
	a.m.res.tokenFd = -1
	mustAcquire(t, lb.lock, patience)
	before := atomic.LoadUint32(lb.state)
	if err := la.unlock(); !errors.Is(err, errLockLost) {
		t.Errorf("unlock of a lost lock = %v, want errLockLost", err)
	}
	if after := atomic.LoadUint32(lb.state); after != before {
		t.Errorf("the lost holder's unlock changed the state from %#x to %#x", before, after)
	}
	if err := lb.unlock(); err != nil {
		t.Errorf("the new holder's unlock: %v", err)
	}
}

// TestLock_SameIDAsDeadHolder: a handle that takes the token id of a holder
// that died holding the lock recovers it, rather than waiting for itself.
func TestLock_SameIDAsDeadHolder(t *testing.T) {
	path := tempPath(t, "cms")
	a, la := lockHandle(t, path)
	la.lock()
	id := la.id
	a.Close() // the holder goes, the state still names it
	_, lb := lockHandle(t, path)
	if lb.id != id {
		t.Fatalf("the new handle took id %d, want the dead holder's %d", lb.id, id)
	}
	mustAcquire(t, lb.lock, patience)
	if err := lb.unlock(); err != nil {
		t.Error(err)
	}
}

// TestLock_DamagedWords: lock words and reader slots in states no live
// process left (a writer bit with no owner or a dead one, counts in dead
// slots, a high-water mark past the table) cost a contender at most a few
// patience periods.
func TestLock_DamagedWords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state uint32
		slots map[int]uint64
		hw    uint32
	}{
		{"writer bit without owner", stW, nil, 0},
		{"writer bit, owner never seen", stW | 700, nil, 0},
		{"every bit", 0xffffffff, nil, 0},
		{"dead readers", 0, map[int]uint64{3: 5, 9: 1<<32 | 0xffff}, 10},
		{"high-water mark past the table", 0, map[int]uint64{1000: 1}, 0xffffffff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			c, l := lockHandle(t, path)
			atomic.StoreUint32(l.state, tc.state)
			for id, v := range tc.slots {
				atomic.StoreUint64(l.slotAt(id), v)
			}
			if tc.hw != 0 {
				atomic.StoreUint32(l.hw, tc.hw)
			}
			mustAcquire(t, l.lock, patience)
			if err := l.unlock(); err != nil {
				t.Error(err)
			}
			mustAcquire(t, l.rlock, time.Second)
			l.runlock()
			_ = c
		})
	}
}

// TestLock_Slotless: a handle without a reader slot takes the write lock
// for reading, so it excludes writers and recovers like one.
func TestLock_Slotless(t *testing.T) {
	path := tempPath(t, "cms")
	_, l := lockHandle(t, path)
	_, w := lockHandle(t, path)
	l.slot = nil
	l.rlock()
	done := mustBlock(t, w.lock, 50*time.Millisecond)
	l.runlock()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("the writer did not get the lock after the slotless reader left")
	}
	w.unlock()
}

// TestLock_WritersDoNotStarveReaders: with writers taking the lock back to
// back, a reader still gets in.
func TestLock_WritersDoNotStarveReaders(t *testing.T) {
	path := tempPath(t, "cms")
	_, w1 := lockHandle(t, path)
	_, w2 := lockHandle(t, path)
	_, r := lockHandle(t, path)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, w := range []*fileLock{w1, w2} {
		wg.Go(func() {
			for !stop.Load() {
				w.lock()
				time.Sleep(50 * time.Microsecond)
				w.unlock()
			}
		})
	}
	for range 20 {
		mustAcquire(t, r.rlock, patience)
		r.runlock()
	}
	stop.Store(true)
	wg.Wait()
}

// TestLock_SlotPositions: walking the slots in id order with nextPos visits
// slotAt of every id, each once, for tables that spread and that do not.
func TestLock_SlotPositions(t *testing.T) {
	for _, n := range []int{1024, 64, 8, 7, 1} {
		table := make([]uint64, n)
		l := &fileLock{nslots: n, slots: unsafe.Pointer(&table[0])}
		seen := map[int]bool{}
		for id, pos := 0, 0; id < n; id, pos = id+1, l.nextPos(pos) {
			want := int((uintptr(unsafe.Pointer(l.slotAt(id))) - uintptr(l.slots)) / slotSize)
			if pos != want {
				t.Fatalf("%d slots: id %d at position %d, slotAt says %d", n, id, pos, want)
			}
			if seen[pos] || pos >= n {
				t.Fatalf("%d slots: position %d visited twice or out of range", n, pos)
			}
			seen[pos] = true
		}
	}
}

// TestLock_RecoveryHoldsDeadToken: while a waiter recovers the lock of a
// dead holder, no new handle can take the dead holder's id, join and lock
// under the same owner, which the recovery would then wipe.
func TestLock_RecoveryHoldsDeadToken(t *testing.T) {
	path := tempPath(t, "cms")
	a, la := lockHandle(t, path)
	_, waiter := lockHandle(t, path)
	la.lock()
	dead := la.id
	closeFd(a.m.res.tokenFd) // A dies holding the lock
	a.m.res.tokenFd = -1
	var newcomer *fileLock
	testHookRecovering = func(id int) {
		if id != dead {
			t.Errorf("recovering id %d, want the dead holder's %d", id, dead)
		}
		_, newcomer = lockHandle(t, path)
	}
	defer func() { testHookRecovering = nil }()
	mustAcquire(t, waiter.lock, patience)
	if newcomer == nil {
		t.Fatal("the recovery did not run")
	}
	if newcomer.id == dead {
		t.Errorf("a new handle took the dead holder's id %d during its recovery", dead)
	}
	if err := waiter.unlock(); err != nil {
		t.Errorf("the recovering waiter's unlock: %v", err)
	}
}
