//go:build linux

package sketch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchChild is a helper process for a benchmark.
type benchChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// newChild starts exe in role on the file at path; it says "spinning" or
// "held" when it has started, and stops when its stdin closes.
func newChild(b testing.TB, exe, role, path string, env ...string) *benchChild {
	b.Helper()
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envPath+"="+path, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &benchChild{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	if role == "lockspin" {
		c.expectLine(b, "spinning")
	}
	return c
}

func (c *benchChild) expectLine(b testing.TB, prefix string) {
	b.Helper()
	line, err := c.out.ReadString('\n')
	if !strings.HasPrefix(line, prefix) {
		c.cmd.Process.Kill()
		b.Fatalf("child said %q (%v), want %s", line, err, prefix)
	}
}

// stop ends the child: it closes stdin, and kills it if it has not exited
// within a second.
func (c *benchChild) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// BenchmarkLock is one lock and unlock, uncontended, through each core,
// beside sync.Mutex and sync.RWMutex in the same run.
func BenchmarkLock(b *testing.B) {
	_, l := lockHandle(b, tempPath(b, "cms"))
	// The Go lock is called directly, as the structures call it; the C
	// lock through its binding (a cgo crossing a call).
	b.Run("write/go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			l.lock()
			l.unlock()
		}
	})
	b.Run("read/go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			l.rlock()
			l.runlock()
		}
	})
	var cores []lockOps
	if c, ok := cLockOps(l); ok {
		cores = append(cores, c)
	}
	for _, ops := range cores {
		b.Run("write/"+ops.core, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ops.lock()
				ops.unlock()
			}
		})
		b.Run("read/"+ops.core, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ops.rlock()
				ops.runlock()
			}
		})
	}
	var mu sync.Mutex
	var rw sync.RWMutex
	b.Run("write/sync.Mutex", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mu.Lock()
			mu.Unlock()
		}
	})
	b.Run("read/sync.RWMutex", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			rw.RLock()
			rw.RUnlock()
		}
	})
}

var _ = role("lockspin", childLockSpin)

// childLockSpin takes and releases the write lock of envPath in a loop,
// holding it a microsecond each time, until stdin closes.
func childLockSpin() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), lockCfg)
	if err != nil {
		return err
	}
	if err := c.m.joinLock(); err != nil {
		return err
	}
	l := c.m.lk
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	fmt.Println("spinning")
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		l.lock()
		for t := time.Now(); time.Since(t) < time.Microsecond; {
		}
		if err := l.unlock(); err != nil {
			return err
		}
	}
}

// BenchmarkLockContended is this process taking the write lock (held a
// microsecond) while another process does the same: ns/op is this
// process's time per acquisition; max-wait-µs the longest one waited.
func BenchmarkLockContended(b *testing.B) {
	if !canReexec(b) {
		b.Skip("this test binary cannot re-run itself here")
	}
	path := tempPath(b, "cms")
	_, l := lockHandle(b, path)
	exe, _ := os.Executable()
	cmd := newChild(b, exe, "lockspin", path)
	defer cmd.stop()
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		l.lock()
		worst = max(worst, time.Since(start))
		for t := time.Now(); time.Since(t) < time.Microsecond; {
		}
		l.unlock()
	}
	b.ReportMetric(float64(worst.Microseconds()), "max-wait-µs")
}

// BenchmarkLockRecovery is the time from a SIGKILL of the holder of the
// write lock to another process holding it: with a waiter already parked
// on the futex, and with one that comes after the death.
func BenchmarkLockRecovery(b *testing.B) {
	if !canReexec(b) {
		b.Skip("this test binary cannot re-run itself here")
	}
	exe, _ := os.Executable()
	for _, parked := range []bool{true, false} {
		b.Run(fmt.Sprintf("parked=%v", parked), func(b *testing.B) {
			var total, worst time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path := tempPath(b, "cms")
				_, l := lockHandle(b, path)
				child := newChild(b, exe, "lockhold", path, envLockMode+"=w")
				child.expectLine(b, "held")
				done := make(chan time.Time, 1)
				if parked {
					go func() { l.lock(); done <- time.Now() }()
					time.Sleep(30 * time.Millisecond) // parked by now
				}
				b.StartTimer()
				killed := time.Now()
				child.cmd.Process.Signal(syscall.SIGKILL)
				child.stop()
				if !parked {
					l.lock()
					done <- time.Now()
				}
				d := (<-done).Sub(killed)
				total += d
				worst = max(worst, d)
				l.unlock()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/recovery")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		})
	}
}
