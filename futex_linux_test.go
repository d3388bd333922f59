package sketch

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

func TestFutex_ValueDiffers(t *testing.T) {
	w := uint32(1)
	if err := futexWait(&w, 0, time.Minute); err != nil {
		t.Fatalf("futexWait on a word that is not val = %v, want nil at once", err)
	}
}

func TestFutex_Timeout(t *testing.T) {
	w := uint32(0)
	start := time.Now()
	err := futexWait(&w, 0, 30*time.Millisecond)
	if !errors.Is(err, errFutexTimeout) {
		t.Fatalf("futexWait with nobody waking = %v, want errFutexTimeout", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("futexWait returned after %v, before its 30ms timeout", d)
	}
}

// TestFutex_AcrossProcesses has a child sleep on a word in a shared memfd
// and the parent wake it: a private futex would never reach it.
func TestFutex_AcrossProcesses(t *testing.T) {
	requireReexec(t)
	fd, err := unix.MemfdCreate("futex-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "futex-test")
	defer f.Close()
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	word := (*uint32)(unsafe.Pointer(&mem[0]))
	ready := (*uint32)(unsafe.Pointer(&mem[64]))

	h := startHelper(t, childContext(t), "", "futex child", "futexwait", nil, f)
	// Wait (bounded) for the child to be about to sleep, then wake it.
	deadline := time.Now().Add(patience)
	for atomic.LoadUint32(ready) == 0 {
		select {
		case <-h.done:
			t.Fatalf("%s exited before it was ready: %v", h.name, h.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got ready", h.name)
		}
		futexWait(ready, 0, 10*time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let it reach the kernel: a wake before is also correct, just a weaker test
	atomic.StoreUint32(word, 7)
	if _, err := futexWake(word, 1); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
}

var _ = role("futexwait", childFutexWait)

// childFutexWait is the child of TestFutex_AcrossProcesses: it maps the
// memfd on fd 3, says it is ready and sleeps on the word until the parent
// sets it to 7 and wakes it.
func childFutexWait() error {
	mem, err := unix.Mmap(3, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	word := (*uint32)(unsafe.Pointer(&mem[0]))
	ready := (*uint32)(unsafe.Pointer(&mem[64]))
	atomic.StoreUint32(ready, 1)
	futexWake(ready, 1)
	start := time.Now()
	for atomic.LoadUint32(word) == 0 {
		if err := futexWait(word, 0, 2*time.Minute); err != nil {
			return fmt.Errorf("futexWait: %w after %v: the parent's wake never arrived", err, time.Since(start))
		}
	}
	if v := atomic.LoadUint32(word); v != 7 {
		return fmt.Errorf("word = %d after the wake, want 7", v)
	}
	fmt.Println("woken after", time.Since(start))
	return nil
}
