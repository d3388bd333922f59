//go:build linux

package sketch

// Tests of the liveness tokens (token_linux.go): a user who may only read
// a file read-locks every byte of it, and writers still open, lock, die and
// are recovered, and a dead clearer's slot is still taken over; readers
// killed inside their read lock are recovered from while live readers keep
// waking the writer.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// recoveryBound is how long a test waits for a dead holder to be
// recovered. Recovery takes about lockPatience (10 ms); the bound only
// tells "recovered" from "stuck", on a loaded machine or under qemu.
const recoveryBound = patience

var _ = role("tokenblock", childTokenBlock)

// childTokenBlock opens the file at envPath read-only and read-locks every
// byte of it it can (F_OFD_SETLK, F_RDLCK): every byte a live writer does
// not hold at once, and each of those as soon as it is free, until stdin
// closes. It says "blocking" after the first pass. Any user who may read a
// file can do this.
func childTokenBlock() error {
	fd, err := unix.Open(os.Getenv(envPath), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	lock := func(start, n int64) bool {
		lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: start, Len: n}
		return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) == nil
	}
	if !lock(0, tokenBase) || !lock(tokenBase+maxSlots, 0) {
		return errors.New("cannot read-lock the bytes around the tokens")
	}
	var pending []int64
	for id := range int64(maxSlots) {
		if !lock(tokenBase+id, 1) {
			pending = append(pending, id)
		}
	}
	fmt.Println("blocking")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	for {
		select {
		case <-done:
			return nil
		case <-time.After(time.Millisecond):
		}
		pending = slices.DeleteFunc(pending, func(id int64) bool { return lock(tokenBase+id, 1) })
	}
}

// bootTicks is the time since boot in the clock ticks (USER_HZ, 100 a
// second) in which /proc/PID/stat gives a process's start.
func bootTicks(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano()) / uint64(time.Second/100)
}

// readLocked reports whether token id's byte carries a read lock (the
// blocker's), asked through fd.
func readLocked(fd, id int) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: tokenBase + int64(id), Len: 1}
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) == nil && lk.Type == unix.F_RDLCK
}

// waitReadLocked waits until the blocker holds token id's byte.
func waitReadLocked(t *testing.T, l *fileLock, id int) {
	t.Helper()
	for deadline := time.Now().Add(recoveryBound); !readLocked(l.fd, id); {
		if time.Now().After(deadline) {
			t.Fatalf("the read-only child did not lock token %d's byte within %v", id, recoveryBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// startTokenBlocker starts a nobody child that read-locks every byte of the
// file at path (which nobody may read) and returns once the lock is held.
func startTokenBlocker(t *testing.T, dir, path string) {
	t.Helper()
	_, _, out := startAsNobody(t, childContext(t), dir, "tokenblock", envPath+"="+path)
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "blocking" {
		t.Fatalf("the read-only child said %q (%v), want \"blocking\"", line, err)
	}
}

// startHolder starts a lockhold child with env on the file at path and
// returns it once it holds the lock, with its token id.
func startHolder(t *testing.T, path string, env []string) (*lockChild, int) {
	t.Helper()
	h := startLockChild(t, childContext(t), "lockhold", path, env)
	line, _ := h.out.ReadString('\n')
	var id int
	if _, err := fmt.Sscanf(line, "held %d", &id); err != nil {
		t.Fatalf("%s said %q (%v)", h.name, line, err)
	}
	return h, id
}

// mustRotate fails unless w.Rotate returns, without an error, within
// recoveryBound; why says what a test that timed out shows.
func mustRotate(t *testing.T, w *CountMinWindow, why string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Rotate() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(recoveryBound):
		t.Fatalf("Rotate did not return within %v: %s", recoveryBound, why)
	}
}

// readableFile creates a Count-Min file of mode 0644 in a directory nobody
// may enter (crossDir), so that a nobody child can open it read-only.
func readableFile(t *testing.T) (dir, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	requireReexec(t)
	dir = crossDir(t)
	path = filepath.Join(dir, "cms")
	c, err := OpenCountMin(Path(path), lockCfg, WithMode(0o644))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return dir, path
}

// TestToken_ReaderCannotObstruct: a user who may only read the file
// read-locks every byte of it, before writers join or after they died;
// writers still open, and every dead holder (a writer, a reader, a clearer)
// is recovered.
func TestToken_ReaderCannotObstruct(t *testing.T) {
	for _, core := range []string{"go", "c"} {
		for _, blockFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/blocked before the holder joined=%v", core, blockFirst), func(t *testing.T) {
				dir, path := readableFile(t)
				if blockFirst {
					startTokenBlocker(t, dir, path)
				}
				_, l := lockHandle(t, path) // opens and joins despite the reader
				ops := goLockOps(l)
				env := []string{envLockMode + "=w"}
				if core == "c" {
					ops = requireCLock(t, l)
					env = append(env, envLockCore+"=c")
				}
				holder, id := startHolder(t, path, env)
				if !blockFirst {
					// The reader will lock the token byte of the holder
					// as soon as it dies.
					startTokenBlocker(t, dir, path)
				}
				fi := mustInspect(t, path)
				if !fi.Lock.Writer || !fi.Lock.WriterAlive {
					t.Fatalf("Inspect says %+v while the holder lives, want a live writer", fi.Lock)
				}
				killed := time.Now()
				holder.cmd.Process.Signal(syscall.SIGKILL)
				<-holder.done
				waitReadLocked(t, l, id)
				mustAcquire(t, ops.lock, recoveryBound)
				t.Logf("write lock recovered %v after the SIGKILL", time.Since(killed))
				if err := ops.unlock(); err != nil {
					t.Fatal(err)
				}
				// A reader killed inside its read lock.
				reader, _ := startHolder(t, path, []string{envLockMode + "=r"})
				reader.cmd.Process.Signal(syscall.SIGKILL)
				<-reader.done
				mustAcquire(t, ops.lock, recoveryBound)
				if err := ops.unlock(); err != nil {
					t.Fatal(err)
				}
				fi = mustInspect(t, path)
				if fi.Lock.Writer || fi.Lock.DeadReaderSlots != 0 || fi.Lock.Handles != 1 {
					t.Errorf("Inspect after the recoveries: %+v, want no writer, no dead reader slot, one live handle", fi.Lock)
				}
				// More handles than the reader could ever have stopped.
				for range 3 {
					lockHandle(t, path)
				}
			})
		}
	}
}

// TestToken_ReaderCannotKeepClearerAlive: a window's clearer killed inside
// a clear, whose token byte a read-only user then locks, is still taken
// over by the next Rotate.
func TestToken_ReaderCannotKeepClearerAlive(t *testing.T) {
	dir, _ := readableFile(t)
	path := filepath.Join(dir, "win")
	w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg}, WithMode(0o644))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddN([]byte("old"), 5)
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	child := startLockChildCmd(t, childContext(t), "clearer", "winclear", path, nil,
		[]string{selfExe(t), "-test.run=^TestHelperProcess$"})
	child.expect(t, "clearing 0 3")
	startTokenBlocker(t, dir, path)
	killed := time.Now()
	child.cmd.Process.Signal(syscall.SIGKILL)
	<-child.done
	dead, _ := splitTag(decodeSlotWord(atomic.LoadUint64(w.ctl.word(0))).id)
	waitReadLocked(t, w.ctl.lk, dead)
	mustRotate(t, w, "the dead clearer's slot was not taken over")
	t.Logf("clear taken over %v after the SIGKILL", time.Since(killed))
	if got := w.EstimateString("old"); got != 0 {
		t.Errorf("Estimate(old) = %d, want 0: the dead clearer's slot was not cleared", got)
	}
}

// TestToken_OwnRecord: a handle's record names this process and its byte,
// and it is free again once the handle is closed.
func TestToken_OwnRecord(t *testing.T) {
	path := tempPath(t, "cms")
	c, l := lockHandle(t, path)
	v := atomic.LoadUint64(l.tokens.word(l.id))
	if want := processToken() | tokClaimed | tokOFD; v&^tokGenMask != want {
		t.Fatalf("record %#x, want %#x with a generation", v, want)
	}
	_, other := lockHandle(t, path)
	if !other.alive(l.id) {
		t.Error("another handle takes this open handle for dead")
	}
	c.Close()
	if v := atomic.LoadUint64(l.tokens.word(l.id)); v&tokClaimed != 0 {
		t.Errorf("record %#x after Close, want free", v)
	}
	if other.alive(l.id) {
		t.Error("a closed handle is still alive to the others")
	}
}

// TestToken_RecordWithoutByte: a record whose holder could not take its
// byte is asked by PID: alive while the process lives, in this namespace;
// dead once no process has the PID; alive when it names another namespace.
func TestToken_RecordWithoutByte(t *testing.T) {
	if processToken() == 0 {
		t.Skip("this process cannot tell its PID namespace (no /proc)")
	}
	path := tempPath(t, "cms")
	_, l := lockHandle(t, path)
	const id = 7
	set := func(v uint64) { atomic.StoreUint64(l.tokens.word(id), v) }
	ns := processToken() >> tokNSShift
	set(processToken() | tokClaimed)
	if !l.alive(id) {
		t.Error("a record naming this live process is taken for dead")
	}
	// A process that has exited and been reaped.
	cmd := exec.Command(selfExe(t), "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := uint64(cmd.Process.Pid)
	set(ns<<tokNSShift | gone<<tokPIDShift | tokClaimed)
	if l.alive(id) {
		t.Error("a record naming a reaped process is taken for alive")
	}
	set((ns+1)<<tokNSShift | gone<<tokPIDShift | tokClaimed)
	if !l.alive(id) {
		t.Error("a record naming another PID namespace is taken for dead")
	}
	set(ns<<tokNSShift | gone<<tokPIDShift | tokClaimed | tokOFD)
	if l.alive(id) {
		t.Error("a record with OFD whose byte nobody holds is taken for alive")
	}
	// This process's PID with another start time: the PID used again.
	if processStart() == 0 {
		t.Skip("/proc does not tell this process's start time")
	}
	me := processToken() | 3<<tokGenShift | tokClaimed
	set(me)
	atomic.StoreUint64(l.tokens.owner(id), processStart()+1<<tokStartShift|3)
	if l.alive(id) {
		t.Error("a record whose PID now belongs to a process started later is taken for alive")
	}
	atomic.StoreUint64(l.tokens.owner(id), processStart()|3)
	if !l.alive(id) {
		t.Error("a record naming this process with its start time is taken for dead")
	}
	atomic.StoreUint64(l.tokens.owner(id), processStart()+1<<tokStartShift|4)
	if !l.alive(id) {
		t.Error("a start time of another claim (another GEN) was held against this one")
	}
}

// TestLock_DeadReaderUnderAdders: readers killed inside their read lock
// while 8 or 16 goroutines keep taking and leaving the read lock (each
// leave wakes the writer): the next writer gets in each time, within the
// bound, through either core.
func TestLock_DeadReaderUnderAdders(t *testing.T) {
	requireReexec(t)
	kills := 50
	if testing.Short() {
		kills = 5
	}
	for _, adders := range []int{8, 16} {
		t.Run(fmt.Sprintf("%d adders", adders), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, w := lockHandle(t, path)
			writers := []lockOps{goLockOps(w)}
			if c, ok := cLockOps(w); ok {
				writers = append(writers, c)
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			defer func() { stop.Store(true); wg.Wait() }()
			for range adders {
				_, r := lockHandle(t, path)
				wg.Go(func() {
					for !stop.Load() {
						r.rlock()
						r.runlock()
						// Leave the cores to the processes started and killed.
						time.Sleep(50 * time.Microsecond)
					}
				})
			}
			var took []time.Duration
			for k := range kills {
				reader, _ := startHolder(t, path, []string{envLockMode + "=r"})
				killed := time.Now()
				reader.cmd.Process.Signal(syscall.SIGKILL)
				ops := writers[k%len(writers)]
				mustAcquire(t, ops.lock, recoveryBound)
				took = append(took, time.Since(killed))
				if err := ops.unlock(); err != nil {
					t.Fatal(err)
				}
				<-reader.done
			}
			slices.Sort(took)
			t.Logf("%d kills: writer in after median %v, p99 %v, max %v", len(took),
				took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
		})
	}
}

var _ = role("recoverkill", childRecoverKill)

// childRecoverKill joins the lock of the file at envPath, says "joined",
// and takes the write lock, which a holder the parent kills leaves
// behind: inside the recovery (holding the dead holder's token) it says
// "recovering" and waits to be killed.
func childRecoverKill() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), lockCfg)
	if err != nil {
		return err
	}
	if err := c.m.joinLock(); err != nil {
		return err
	}
	testHookRecovering = func(dead int) {
		fmt.Printf("recovering %d\n", dead)
		time.Sleep(time.Hour) // the parent kills us here
	}
	fmt.Printf("joined %d\n", c.m.lk.id)
	c.m.lk.lock()
	return errors.New("took the lock without recovering it")
}

// TestToken_RecovererKilled: a process killed while it recovers a dead
// writer's lock (holding the dead writer's token) is itself recovered
// from, at once: while it is an unreaped zombie, and when it ran in
// another PID namespace, whose PIDs mean nothing here.
func TestToken_RecovererKilled(t *testing.T) {
	requireReexec(t)
	for _, tc := range []struct {
		name string
		attr *syscall.SysProcAttr
	}{
		{"zombie", nil},
		{"other PID namespace", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.attr != nil && os.Geteuid() != 0 {
				t.Skip("needs root for a new PID namespace")
			}
			path := tempPath(t, "cms")
			_, l := lockHandle(t, path)
			holder, _ := startHolder(t, path, []string{envLockMode + "=w"})
			cmd := exec.Command(selfExe(t), "-test.run=^TestHelperProcess$")
			cmd.Env = append(os.Environ(), envRole+"=recoverkill", envPath+"="+path)
			cmd.SysProcAttr = tc.attr
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Skipf("cannot start the recoverer: %v", err)
			}
			reaped := false
			defer func() {
				if !reaped {
					cmd.Process.Kill()
					cmd.Wait()
				}
			}()
			r := bufio.NewReader(out)
			if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "joined ") {
				t.Fatalf("recoverer said %q (%s)", line, stderr.String())
			}
			holder.cmd.Process.Signal(syscall.SIGKILL)
			<-holder.done
			if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "recovering ") {
				t.Fatalf("recoverer said %q (%s)", line, stderr.String())
			}
			cmd.Process.Signal(syscall.SIGKILL)
			if tc.attr != nil {
				cmd.Wait()
				reaped = true
			} else {
				waitZombie(t, cmd.Process.Pid)
			}
			mustAcquire(t, l.lock, recoveryBound)
			if err := l.unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitZombie waits until process pid has died and is not reaped yet.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(recoveryBound); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i:], ") Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie: %q", pid, s)
		}
	}
}

// TestToken_ReaderTakesDeadPID: a user who may only read the file forces
// writers onto PID records (by read-locking every byte), waits for a writer
// to die holding the lock, and starts a process that gets its PID: the
// dead writer is recovered all the same, since that process started
// later.
func TestToken_ReaderTakesDeadPID(t *testing.T) {
	for _, core := range []string{"go", "c"} {
		t.Run(core, func(t *testing.T) {
			dir, path := readableFile(t)
			startTokenBlocker(t, dir, path)
			_, l := lockHandle(t, path)
			ops := goLockOps(l)
			if core == "c" {
				ops = requireCLock(t, l)
			}
			holder, _ := startHolder(t, path, []string{envLockMode + "=w"})
			pid := holder.cmd.Process.Pid
			_, _, started, ok := procTask(pid)
			if !ok {
				t.Fatalf("cannot read the holder's start time from /proc/%d", pid)
			}
			holder.cmd.Process.Signal(syscall.SIGKILL)
			<-holder.done
			// A start time is in clock ticks (10 ms): the process that
			// takes the PID must start in a later tick than the holder
			// did, as any but a holder that lived a few milliseconds
			// does, or nothing tells the two apart.
			for deadline := time.Now().Add(time.Minute); bootTicks(t) <= started; {
				if time.Now().After(deadline) {
					t.Fatalf("the boot clock did not pass the holder's start tick %d within a minute", started)
				}
				time.Sleep(time.Millisecond)
			}
			// What a fork loop would reach by chance, by asking the kernel
			// for the PID.
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(fmt.Sprint(pid-1)), 0); err != nil {
				t.Skipf("cannot choose the next PID: %v", err)
			}
			squat := exec.Command("sleep", "60")
			squat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: crossUID, Gid: crossUID, Groups: []uint32{}}}
			if err := squat.Start(); err != nil {
				t.Skipf("cannot start a process as nobody: %v", err)
			}
			defer func() { squat.Process.Kill(); squat.Wait() }()
			if squat.Process.Pid != pid {
				t.Skipf("the nobody process got PID %d, not the dead writer's %d", squat.Process.Pid, pid)
			}
			mustAcquire(t, ops.lock, recoveryBound)
			if err := ops.unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestToken_DeadClearerIDTaken: a window's clearer killed inside a clear,
// whose token id a new handle (one that never clears that slot) takes
// before anyone takes the clear over: the clear is still taken over at
// once, not waited for while the new handle lives.
func TestToken_DeadClearerIDTaken(t *testing.T) {
	requireReexec(t)
	defer func(d time.Duration) { windowWait = d }(windowWait)
	windowWait = recoveryBound
	path := tempPath(t, "win")
	w := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	w.AddN([]byte("old"), 5)
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	child := startLockChildCmd(t, childContext(t), "clearer", "winclear", path, nil,
		[]string{selfExe(t), "-test.run=^TestHelperProcess$"})
	child.expect(t, "clearing 0 3")
	child.cmd.Process.Signal(syscall.SIGKILL)
	<-child.done
	dead, _ := splitTag(decodeSlotWord(atomic.LoadUint64(w.ctl.word(0))).id)
	idle := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	if id, _ := splitTag(idle.ctl.me); id != dead {
		t.Fatalf("the new handle took token %d, want the dead clearer's %d", id, dead)
	}
	mustRotate(t, w, "it waited for a clear whose clearer died, because a new handle holds its token id")
	if got := w.EstimateString("old"); got != 0 {
		t.Errorf("Estimate(old) = %d, want 0: the dead clearer's slot was not cleared", got)
	}
}
