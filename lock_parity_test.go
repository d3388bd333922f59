//go:build linux

package sketch

// Parity of the file's lock across its two implementations: lock_linux.go
// in Go and csrc/lock.c in C must exclude each other and recover each
// other's dead holders, within one process (a handle locking through both)
// and across processes (a cgo test binary locking in C, a pure-Go one in
// Go, on one file).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// envLockCore picks the core a lockhold or lockcount child locks through:
// "c" for csrc/lock.c where the binary has it, Go otherwise.
const envLockCore = "SKETCH_TEST_LOCKCORE"

// lockOps is a handle's lock taken through one core.
type lockOps struct {
	core    string // "go" or "c"
	lock    func() error
	unlock  func() error
	rlock   func() error
	runlock func()
}

// cLocker is what lock_cgo.go adds to fileLock where the C core is built.
type cLocker interface {
	lockC() error
	unlockC() error
	rlockC() error
	runlockC()
}

func goLockOps(l *fileLock) lockOps {
	return lockOps{core: "go", lock: l.lock, unlock: l.unlock, rlock: l.rlock, runlock: l.runlock}
}

// cLockOps returns l's lock through the C core, or false in a build
// without one.
func cLockOps(l *fileLock) (lockOps, bool) {
	c, ok := any(l).(cLocker)
	if !ok {
		return lockOps{}, false
	}
	return lockOps{core: "c", lock: c.lockC, unlock: c.unlockC, rlock: c.rlockC, runlock: c.runlockC}, true
}

// childLockOps is the lock a child takes: through C when envLockCore says
// so and the binary has the C core, through Go otherwise.
func childLockOps(l *fileLock) lockOps {
	if os.Getenv(envLockCore) == "c" {
		if ops, ok := cLockOps(l); ok {
			return ops
		}
	}
	return goLockOps(l)
}

// requireCLock returns l's lock through C, skipping the test in a build
// without the C core.
func requireCLock(t *testing.T, l *fileLock) lockOps {
	t.Helper()
	ops, ok := cLockOps(l)
	if !ok {
		t.Skipf("no C lock in the %s build", Backend)
	}
	return ops
}

// TestLock_CoreSelector: a cgo build has the C lock and a child asking
// for it gets it; a pure-Go build falls back to Go.
func TestLock_CoreSelector(t *testing.T) {
	_, l := lockHandle(t, tempPath(t, "cms"))
	_, ok := cLockOps(l)
	if want := Backend == "cgo"; ok != want {
		t.Fatalf("%s build: C lock available = %v, want %v", Backend, ok, want)
	}
	t.Setenv(envLockCore, "c")
	want := map[string]string{"cgo": "c", "purego": "go"}[Backend]
	if got := childLockOps(l).core; got != want {
		t.Errorf("%s build, %s=c: the child locks through %q, want %q", Backend, envLockCore, got, want)
	}
}

// lockExes returns a test binary of each backend: this one, and one built
// for the other backend (the test skips when it cannot be built).
func lockExes(t *testing.T) (cgoExe, goExe string) {
	t.Helper()
	self := selfExe(t)
	if Backend == "cgo" {
		return self, buildTestBinary(t, t.TempDir(), "purego")
	}
	return buildTestBinary(t, t.TempDir(), "cgo"), self
}

// lockSide is one process's part: the core it locks through, which picks
// its binary, and whether it reads or writes.
type lockSide struct {
	core string // "c" (a cgo binary locking in C) or "go" (a pure-Go binary)
	mode string // "w" or "r"
}

func (s lockSide) String() string {
	what := map[string]string{"w": "writer", "r": "reader"}[s.mode]
	return s.core + " " + what
}

// start starts a lockhold child for s on the file at path.
func (s lockSide) start(t *testing.T, ctx context.Context, cgoExe, goExe, path string) *lockChild {
	t.Helper()
	exe, env := goExe, envs(envLockMode, s.mode)
	if s.core == "c" {
		exe, env = cgoExe, append(env, envLockCore+"=c")
	}
	return startLockChildExe(t, ctx, exe, s.String(), path, env)
}

// startLockChildExe is startLockChild for a lockhold child run from exe.
func startLockChildExe(t *testing.T, ctx context.Context, exe, name, path string, env []string) *lockChild {
	t.Helper()
	return startLockChildCmd(t, ctx, name, "lockhold", path, env, []string{exe, "-test.run=^TestHelperProcess$"})
}

// nextLine delivers the child's next line, trimmed, on a channel.
func (lc *lockChild) nextLine() <-chan string {
	ch := make(chan string, 1)
	go func() {
		line, err := lc.out.ReadString('\n')
		if err != nil {
			line += fmt.Sprintf(" (%v)", err)
		}
		ch <- strings.TrimSpace(line)
	}()
	return ch
}

// waitContender waits until the state word satisfies waiting, which shows
// the contender waiting (the parked bit it sets, or its W while it drains
// readers). It fails the test if the contender says it got the lock first,
// or after limit.
func waitContender(t *testing.T, l *fileLock, contender *lockChild, got <-chan string, waiting func(uint32) bool, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !waiting(atomic.LoadUint32(l.state)) {
		select {
		case line := <-got:
			t.Fatalf("%s said %q while the lock was held", contender.name, line)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sign of %s waiting within %v: state %#x", contender.name, limit, atomic.LoadUint32(l.state))
		}
	}
}

// waiting returns the state a contender with token id leaves while it
// waits for holder: a reader or writer parked on a writer, or a writer
// draining a reader.
func waiting(holder, contender lockSide, id int) func(uint32) bool {
	if holder.mode == "r" {
		return func(s uint32) bool { return s&stW != 0 && s&stOwner == uint32(id+1) }
	}
	parked := stWParked
	if contender.mode == "r" {
		parked = stRParked
	}
	return func(s uint32) bool { return s&parked != 0 }
}

// lockCrossCases pairs a holder of one core with a contender of the other
// that it excludes.
var lockCrossCases = []struct{ holder, contender lockSide }{
	{lockSide{"c", "w"}, lockSide{"go", "w"}},
	{lockSide{"c", "w"}, lockSide{"go", "r"}},
	{lockSide{"c", "r"}, lockSide{"go", "w"}},
	{lockSide{"go", "w"}, lockSide{"c", "w"}},
	{lockSide{"go", "w"}, lockSide{"c", "r"}},
	{lockSide{"go", "r"}, lockSide{"c", "w"}},
}

// TestLock_BackendsExclude: a cgo process holding the lock through C keeps
// a pure-Go process locking in Go waiting, and the reverse, until it lets
// go; then the waiter gets it.
func TestLock_BackendsExclude(t *testing.T) {
	requireReexec(t)
	cgoExe, goExe := lockExes(t)
	for _, tc := range lockCrossCases {
		t.Run(fmt.Sprintf("%v holds, %v waits", tc.holder, tc.contender), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, l := lockHandle(t, path) // token 0
			ctx := childContext(t)
			holder := tc.holder.start(t, ctx, cgoExe, goExe, path)
			holder.expect(t, "held 1")
			contender := tc.contender.start(t, ctx, cgoExe, goExe, path)
			got := contender.nextLine()
			waitContender(t, l, contender, got, waiting(tc.holder, tc.contender, 2), patience)
			select {
			case line := <-got:
				t.Fatalf("%s said %q while %s held the lock", contender.name, line, holder.name)
			case <-time.After(50 * time.Millisecond): // > lockPatience: it looked at the holder
			}
			holder.stdin.Close()
			holder.expect(t, "released")
			select {
			case line := <-got:
				if line != "held 2" {
					t.Fatalf("%s said %q, want \"held 2\"", contender.name, line)
				}
			case <-time.After(patience):
				t.Fatalf("%s did not get the lock within %v of its release", contender.name, patience)
			}
			contender.stdin.Close()
			contender.expect(t, "released")
		})
	}
}

// TestLock_BackendsCount: two cgo processes locking through C and two
// pure-Go processes locking in Go make guarded increments under the write
// lock and check them under the read lock; none is lost.
func TestLock_BackendsCount(t *testing.T) {
	requireReexec(t)
	cgoExe, goExe := lockExes(t)
	path := tempPath(t, "cms")
	c, _ := lockHandle(t, path)
	const iters = 2000
	var specs []childSpec
	for i, core := range []string{"c", "go", "c", "go"} {
		s := childSpec{exe: goExe, name: fmt.Sprintf("%s counter %d", core, i), role: "lockcount",
			env: envs(envPath, path, envLockIters, iters)}
		if core == "c" {
			s.exe, s.env = cgoExe, append(s.env, envLockCore+"=c")
		}
		specs = append(specs, s)
	}
	start := time.Now()
	for _, h := range startGroup(t, childContext(t), specs) {
		h.wait(t)
	}
	t.Logf("%d processes made %d increments each in %v", len(specs), iters, time.Since(start))
	if got, want := atomic.LoadUint64(scratch(c, 0)), uint64(len(specs)*iters); got != want {
		t.Errorf("guarded counter = %d, want %d", got, want)
	}
	if a, b := atomic.LoadUint64(scratch(c, 0)), atomic.LoadUint64(scratch(c, 1)); a != b {
		t.Errorf("guarded words %d and %d differ", a, b)
	}
}

// TestLock_BackendsKillHolder: a holder killed with SIGKILL while a
// contender of the other core waits is recovered by it: a dead writer's
// state word, a dead reader's slot.
func TestLock_BackendsKillHolder(t *testing.T) {
	requireReexec(t)
	cgoExe, goExe := lockExes(t)
	for _, tc := range lockCrossCases {
		t.Run(fmt.Sprintf("%v killed, %v recovers", tc.holder, tc.contender), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, l := lockHandle(t, path)
			ctx := childContext(t)
			holder := tc.holder.start(t, ctx, cgoExe, goExe, path)
			holder.expect(t, "held 1")
			contender := tc.contender.start(t, ctx, cgoExe, goExe, path)
			got := contender.nextLine()
			waitContender(t, l, contender, got, waiting(tc.holder, tc.contender, 2), patience)
			killed := time.Now()
			if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case line := <-got:
				if line != "held 2" {
					t.Fatalf("%s said %q, want \"held 2\"", contender.name, line)
				}
			case <-time.After(patience):
				t.Fatalf("%s did not recover the lock within %v of the holder's death", contender.name, patience)
			}
			t.Logf("lock taken %v after the SIGKILL", time.Since(killed))
			contender.stdin.Close()
			contender.expect(t, "released")
			// The lock works as before, through either core.
			for _, ops := range testLockOps(l) {
				mustAcquire(t, ops.lock, time.Second)
				if err := ops.unlock(); err != nil {
					t.Errorf("%s unlock after recovery: %v", ops.core, err)
				}
			}
		})
	}
}

// testLockOps returns l's lock through every core this build has.
func testLockOps(l *fileLock) []lockOps {
	ops := []lockOps{goLockOps(l)}
	if c, ok := cLockOps(l); ok {
		ops = append(ops, c)
	}
	return ops
}

// TestLock_BackendsInProcess: two handles of one file in this process,
// each locking through Go and through C by turns.
func TestLock_BackendsInProcess(t *testing.T) {
	t.Run("exclusion", func(t *testing.T) {
		path := tempPath(t, "cms")
		_, la := lockHandle(t, path)
		_, lb := lockHandle(t, path)
		for _, tc := range lockCrossCases {
			t.Run(fmt.Sprintf("%v holds, %v waits", tc.holder, tc.contender), func(t *testing.T) {
				h, c := inProcessSide(t, la, tc.holder), inProcessSide(t, lb, tc.contender)
				h.take()
				done := mustBlock(t, c.take, 50*time.Millisecond)
				h.untake()
				select {
				case <-done:
				case <-time.After(patience):
					t.Fatalf("the %v did not get the lock within %v of its release", tc.contender, patience)
				}
				c.untake()
			})
		}
	})

	// A handle holding the lock through one core is this handle, not a
	// dead predecessor with its id, to the other core: one held flag.
	t.Run("one handle, both cores", func(t *testing.T) {
		path := tempPath(t, "cms")
		_, l := lockHandle(t, path)
		gops, cops := goLockOps(l), requireCLock(t, l)
		for _, pair := range [][2]lockOps{{gops, cops}, {cops, gops}} {
			holder, waiter := pair[0], pair[1]
			holder.lock()
			done := mustBlock(t, waiter.lock, 50*time.Millisecond) // past lockPatience
			if err := holder.unlock(); err != nil {
				t.Fatalf("%s unlock: %v", holder.core, err)
			}
			select {
			case <-done:
			case <-time.After(patience):
				t.Fatalf("%s lock waiting on its own handle's %s lock did not get it", waiter.core, holder.core)
			}
			// Taken in one core, released in the other.
			if err := holder.unlock(); err != nil {
				t.Errorf("%s unlock of a lock taken through %s: %v", holder.core, waiter.core, err)
			}
		}
	})

	// A handle taken for dead loses the lock to the other core, and its
	// unlock fails, touching nothing.
	t.Run("lost lock", func(t *testing.T) {
		for _, cores := range [][2]string{{"go", "c"}, {"c", "go"}} {
			path := tempPath(t, "cms")
			a, la := lockHandle(t, path)
			_, lb := lockHandle(t, path)
			loser, winner := inProcessOps(t, la, cores[0]), inProcessOps(t, lb, cores[1])
			loser.lock()
			// A's token goes as if its process had died.
			closeFd(a.m.res.tokenFd)
			a.m.res.tokenFd = -1
			mustAcquire(t, winner.lock, patience)
			before := atomic.LoadUint32(lb.state)
			if err := loser.unlock(); !errors.Is(err, errLockLost) {
				t.Errorf("%s unlock of a lock lost to %s = %v, want errLockLost", loser.core, winner.core, err)
			}
			if after := atomic.LoadUint32(lb.state); after != before {
				t.Errorf("the lost %s holder's unlock changed the state from %#x to %#x", loser.core, before, after)
			}
			if err := winner.unlock(); err != nil {
				t.Errorf("the new %s holder's unlock: %v", winner.core, err)
			}
		}
	})

	// A handle that takes the token id of a holder that died holding the
	// lock through the other core recovers it.
	t.Run("same id as dead holder", func(t *testing.T) {
		for _, cores := range [][2]string{{"go", "c"}, {"c", "go"}} {
			path := tempPath(t, "cms")
			a, la := lockHandle(t, path)
			inProcessOps(t, la, cores[0]).lock()
			a.Close() // the holder goes, the state still names it
			_, lb := lockHandle(t, path)
			if lb.id != la.id {
				t.Fatalf("the new handle took id %d, want the dead holder's %d", lb.id, la.id)
			}
			b := inProcessOps(t, lb, cores[1])
			mustAcquire(t, b.lock, patience)
			if err := b.unlock(); err != nil {
				t.Errorf("%s unlock of a lock recovered from a dead %s holder: %v", cores[1], cores[0], err)
			}
		}
	})

	// Goroutines on two handles make guarded increments, each locking and
	// unlocking through Go or C by turns (also taking in one core and
	// releasing in the other), while readers do the same: no lost update,
	// no half-done write seen. One writer per handle: two writers on one
	// handle also race on its held flag, which TestLock_ExclusionInProcess
	// covers.
	t.Run("goroutines", func(t *testing.T) {
		path := tempPath(t, "cms")
		c, la := lockHandle(t, path)
		_, lb := lockHandle(t, path)
		requireCLock(t, la)
		const readers, iters = 2, 4000
		handles := []*fileLock{la, lb}
		var wg sync.WaitGroup
		var torn atomic.Int64
		for _, l := range handles {
			ops := testLockOps(l)
			wg.Go(func() {
				for i := range iters {
					ops[i%2].lock()
					guardedIncrement(c)
					if err := ops[i/2%2].unlock(); err != nil {
						t.Error(err)
						return
					}
				}
			})
			for r := range readers {
				wg.Go(func() {
					for i := range iters {
						ops[(i+r)%2].rlock()
						if atomic.LoadUint64(scratch(c, 0)) != atomic.LoadUint64(scratch(c, 1)) {
							torn.Add(1)
						}
						ops[(i/2+r)%2].runlock()
					}
				})
			}
		}
		wg.Wait()
		if got, want := atomic.LoadUint64(scratch(c, 0)), uint64(len(handles)*iters); got != want {
			t.Errorf("guarded counter = %d, want %d: writers overlapped", got, want)
		}
		if n := torn.Load(); n != 0 {
			t.Errorf("readers saw %d half-done writes", n)
		}
	})
}

// inProcess is a side of an in-process exclusion case: take and untake
// l's lock through the side's core and mode.
type inProcess struct{ take, untake func() }

func inProcessSide(t *testing.T, l *fileLock, s lockSide) inProcess {
	t.Helper()
	ops := inProcessOps(t, l, s.core)
	must := func(take func() error) func() {
		return func() {
			if err := take(); err != nil {
				t.Errorf("%s lock: %v", ops.core, err)
			}
		}
	}
	if s.mode == "r" {
		return inProcess{must(ops.rlock), ops.runlock}
	}
	return inProcess{must(ops.lock), func() {
		if err := ops.unlock(); err != nil {
			t.Errorf("%s unlock: %v", ops.core, err)
		}
	}}
}

// inProcessOps returns l's lock through core, skipping the test when it
// is C and this build has none.
func inProcessOps(t *testing.T, l *fileLock, core string) lockOps {
	t.Helper()
	if core == "c" {
		return requireCLock(t, l)
	}
	return goLockOps(l)
}
