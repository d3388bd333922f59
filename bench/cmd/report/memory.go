package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

// memResult is what a structure holding n distinct keys costs: its Go heap
// (live bytes after a collection; the maps' keys included, since a map
// must keep them) and the time of that full collection, which walks it.
type memResult struct {
	Heap int64
	GC   time.Duration
}

// memImpls are the structures measured by memMain, on the Go heap: the
// exact maps with n keys added, and the Bloom filters of other libraries
// sized for n keys (their size does not change as keys are added, so none
// are).
var memImpls = []string{"mutexmap", "syncmap", "boomcbf", "bitsblooms"}

// memMain makes one structure for n keys, then reports its heap.
func memMain(impl string, n int, w io.Writer) error {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// No collection while the structure grows: it would only cost time.
	old := debug.SetGCPercent(-1)
	var keep any
	switch impl {
	case "mutexmap":
		m := &mutexMap{m: map[string]uint64{}}
		spaceKeys(n, func(k string) {
			m.mu.Lock()
			m.m[k]++
			m.mu.Unlock()
		})
		keep = m
	case "syncmap":
		m := &syncMap{}
		spaceKeys(n, func(k string) { m.inc(k) })
		keep = m
	case "boomcbf":
		keep = boom.NewCountingBloomFilter(uint(n), 4, cbfFPRate)
	case "bitsblooms":
		keep = bloom.NewWithEstimates(uint(n), cbfFPRate)
	default:
		return fmt.Errorf("unknown structure %q", impl)
	}
	debug.SetGCPercent(old)
	t0 := time.Now()
	runtime.GC()
	gc := time.Since(t0)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return json.NewEncoder(w).Encode(memResult{Heap: int64(after.HeapAlloc) - int64(before.HeapAlloc), GC: gc})
}

// sketchMem are this module's structures in the memory section.
var sketchMem = []string{"countmin", "countingbloom", "bloom"}

// memTable is the memory section: the Go heap of each structure and the
// size of this module's (a mapping, off the heap) at each key count.
type memTable struct {
	Counts []int
	Heap   map[string][]memResult // by impl, then count
	Bytes  map[string][]int64     // this module's structures
}

// measureMemory runs memMain in a fresh process of bin for each structure
// and key count, one at a time.
func measureMemory(bin string, counts []int) (*memTable, error) {
	t := &memTable{Counts: counts, Heap: map[string][]memResult{}, Bytes: map[string][]int64{}}
	for _, impl := range memImpls {
		for _, n := range counts {
			t0 := time.Now()
			out, err := exec.Command(bin, "-role=mem", "-impl="+impl, fmt.Sprint("-n=", n)).Output()
			if err != nil {
				return nil, fmt.Errorf("memory of %s at %d keys: %w", impl, n, err)
			}
			var r memResult
			if err := json.Unmarshal(out, &r); err != nil {
				return nil, fmt.Errorf("memory of %s at %d keys: %w", impl, n, err)
			}
			t.Heap[impl] = append(t.Heap[impl], r)
			progress("memory: %s with %d keys: %s (%v)", impl, n, sizeString(r.Heap), time.Since(t0).Round(time.Millisecond))
		}
	}
	cms, err := sketch.CountMinConfig{}.Bytes()
	if err != nil {
		return nil, err
	}
	for _, n := range counts {
		f, err := sketch.OpenBloom(sketch.Memory(), sketch.BloomConfig{Capacity: uint64(n), FPRate: cbfFPRate})
		if err != nil {
			return nil, err
		}
		t.Bytes["bloom"] = append(t.Bytes["bloom"], int64(f.Stats().Bytes))
		f.Close()
	}
	if err != nil {
		return nil, err
	}
	for _, n := range counts {
		t.Bytes["countmin"] = append(t.Bytes["countmin"], int64(cms))
		f, err := sketch.OpenCountingBloom(sketch.Memory(), sketch.CountingBloomConfig{Capacity: uint64(n), FPRate: cbfFPRate})
		if err != nil {
			return nil, err
		}
		t.Bytes["countingbloom"] = append(t.Bytes["countingbloom"], int64(f.Stats().Bytes))
		f.Close()
	}
	return t, nil
}
