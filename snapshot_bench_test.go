//go:build linux

package sketch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSnapshot times a Count-Min snapshot into memory (a memfd) of
// the default shape and of the 160 MiB one, with nothing writing and
// while two processes (this test binary again, role snapadd) keep adding
// to the source. MB/s is the source's region copied a second; adds/s is
// what the two writers added meanwhile.
//
//	go test -run '^$' -bench Snapshot -benchtime 10x .
func BenchmarkSnapshot(b *testing.B) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = ""
	}
	for _, sh := range []benchShape{benchDefaultShape, benchShapes[3]} {
		for _, writers := range []int{0, 2} {
			b.Run(fmt.Sprintf("%s/writers=%d", sh.name, writers), func(b *testing.B) {
				tmp, err := os.MkdirTemp(dir, "sketch-snapshot-bench-")
				if err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(tmp)
				path := filepath.Join(tmp, "src.cms")
				c, err := OpenCountMin(Path(path), sh.config())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				prog := benchWriters(b, path, filepath.Join(tmp, "progress"), writers)
				b.SetBytes(int64(c.m.ent.size))
				b.ReportAllocs()
				before := atomic.LoadUint64(&prog[1]) + atomic.LoadUint64(&prog[2])
				// The copy runs on the calling thread: its CPU time,
				// which the other processes on the machine do not
				// stretch as they stretch the wall clock.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				start := time.Now()
				b.ResetTimer()
				for range b.N {
					s, err := c.Snapshot(Memory())
					if err != nil {
						b.Fatal(err)
					}
					s.Close()
				}
				b.StopTimer()
				b.ReportMetric(float64(threadCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				if writers > 0 {
					added := atomic.LoadUint64(&prog[1]) + atomic.LoadUint64(&prog[2]) - before
					b.ReportMetric(float64(added)/time.Since(start).Seconds(), "adds/s")
				}
			})
		}
	}
}

// benchWriters starts n processes that add to the Count-Min sketch at
// path until the benchmark ends, and returns their progress words once
// each has added.
func benchWriters(b *testing.B, path, progPath string, n int) []uint64 {
	prog, err := mapProgress(progPath, true)
	if err != nil {
		b.Fatal(err)
	}
	if n == 0 {
		return prog
	}
	exe, err := os.Executable()
	if err != nil {
		b.Skipf("cannot re-run the test binary: %v", err)
	}
	var cmds []*exec.Cmd
	for i := range n {
		cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), envs(envRole, "snapadd", envPath, path, envChild, i,
			envSnapKind, "countmin", envSnapProgress, progPath)...)
		cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	b.Cleanup(func() {
		atomic.StoreUint64(&prog[0], 1)
		for _, cmd := range cmds {
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(patience)
	for i := range n {
		for atomic.LoadUint64(&prog[1+i]) == 0 {
			if time.Now().After(deadline) {
				b.Fatalf("writer %d has not added in 30 s", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return prog
}

// threadCPU is the calling thread's CPU time, user and system.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSnapshotWindow times the snapshot of the periods a window
// covers into memory, each window of Keep 3 full periods: a Count-Min
// window of the default shape (its slots summed), a Bloom window of a
// million keys a period at 1% (ORed) and a distinct window of the default
// precision (the register maximum). MB/s is the covered slots' bytes
// read a second.
//
//	go test -run '^$' -bench SnapshotWindow .
func BenchmarkSnapshotWindow(b *testing.B) {
	const keep = 3
	win := Window{Keep: keep}
	keys := benchUniform().firstHalf()
	type window interface {
		Rotate() error
		Close() error
	}
	for _, k := range []struct {
		name string
		open func() (window, uint64, func() (any, error))
	}{
		{"CountMinWindow", func() (window, uint64, func() (any, error)) {
			w := mustIn(b, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: win, CountMin: benchDefaultShape.config()})
			fillAll(b, w, func() { w.AddBatch(keys, nil) }, keep)
			return w, countMinSlotBytes(w.slots[0].Rows, int(w.slots[0].Mask+1), 0, false), func() (any, error) { return w.Snapshot(Memory()) }
		}},
		{"BloomWindow", func() (window, uint64, func() (any, error)) {
			w := mustIn(b, OpenBloomWindow, Memory(), BloomWindowConfig{Window: win, Bloom: BloomConfig{Capacity: 1 << 20, FPRate: 0.01}})
			fillAll(b, w, func() { w.AddBatch(keys, nil) }, keep)
			return w, bloomBytes(w.slots[0].Blocks), func() (any, error) { return w.Snapshot(Memory()) }
		}},
		{"DistinctWindow", func() (window, uint64, func() (any, error)) {
			w := mustIn(b, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: win})
			fillAll(b, w, func() { w.AddBatch(keys) }, keep)
			return w, distinctSlotBytes(w.slots[0].P), func() (any, error) { return w.Snapshot(Memory()) }
		}},
	} {
		b.Run(k.name, func(b *testing.B) {
			w, slot, snap := k.open()
			defer w.Close()
			b.SetBytes(int64(slot * keep))
			b.ReportAllocs()
			for range b.N {
				s, err := snap()
				if err != nil {
					b.Fatal(err)
				}
				s.(interface{ Close() error }).Close()
			}
		})
	}
}

// fillAll adds to keep periods of a window, turning it between them.
func fillAll(b *testing.B, w interface{ Rotate() error }, fill func(), keep int) {
	for i := range keep {
		fill()
		if i < keep-1 {
			if err := w.Rotate(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
