//go:build linux

package sketch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// fleetPattern fills rows x width counters with one crafted pattern.
func fleetPattern(rows, width int, pat int, r *rand.Rand) []byte {
	b := make([]byte, rows*width*8)
	for i := 0; i < rows*width; i++ {
		var v uint64
		switch pat {
		case 0:
			v = ^uint64(0)
		case 1:
			v = 1 << 63
		case 2:
			v = 1<<63 - 1
		case 3:
			v = 1<<63 + 1
		case 4: // one row huge, the others empty
			if i < width {
				v = ^uint64(0) - uint64(i)
			}
		case 5: // row sums past 2^64 with no counter past 2^63
			v = 1 << 62
		default:
			v = r.Uint64() >> uint(r.IntN(64))
		}
		binary.LittleEndian.PutUint64(b[i*8:], v)
	}
	return b
}

// TestCountMin_FleetCraftedValues: whatever a neighbour stores in
// a fleet part (counts at and past 2^63, all 0xff, row sums past 2^64),
// no call panics, no estimate wraps below the own count, Top lists only
// keys this host added, Check finds nothing, and the fleet total Stats
// reports agrees with the one ErrorBound uses.
func TestCountMin_FleetCraftedValues(t *testing.T) {
	const rows, width = 3, 64
	r := rand.New(rand.NewPCG(9, 9))
	for pat := range 8 {
		t.Run(fmt.Sprint(pat), func(t *testing.T) {
			c := mustIn(t, OpenCountMin, Path(tempPath(t, "f.cms")), CountMinConfig{Rows: rows, Width: width, Seed: 5, Fleet: true, Candidates: 16, CandidateKeyBytes: 8})
			added := map[string]bool{}
			for i := range 200 {
				k := fmt.Sprintf("k%d", i%23)
				added[k[:min(len(k), 8)]] = true
				c.AddString(k)
			}
			if err := c.SetFleetCounts(fleetPattern(rows, width, pat, r)); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				k := fmt.Sprintf("k%d", i%31)
				added[k] = true
				est, err := c.AddN([]byte(k), uint64(i+1))
				if err != nil {
					t.Fatal(err)
				}
				if est < uint64(i+1) || est > 1<<63 {
					t.Fatalf("AddN(%q) = %d", k, est)
				}
			}
			hh, err := c.Top(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hh {
				if !added[h.Key] {
					t.Errorf("Top lists %q, never added", h.Key)
				}
				if h.Estimate > 1<<63 || h.Low > h.Estimate {
					t.Errorf("Top: %+v", h)
				}
			}
			st := c.Stats()
			if st.FleetTotal > 1<<63 {
				t.Errorf("Stats().FleetTotal = %d, past 2^63 (the stored fleet total word holds %d)", st.FleetTotal, storedFleetTotal(&c.l))
			}
			if st.FleetTotal != storedFleetTotal(&c.l) {
				t.Errorf("Stats().FleetTotal %d, the fleet total word %d", st.FleetTotal, storedFleetTotal(&c.l))
			}
			if got := c.ErrorBound(); got != st.ErrorBound {
				t.Errorf("ErrorBound() = %d, Stats().ErrorBound %d", got, st.ErrorBound)
			}
			if err := c.Check(); err != nil {
				t.Errorf("Check = %v", err)
			}
			snap, err := c.Snapshot(Memory())
			if err != nil {
				t.Fatal(err)
			}
			if err := snap.Check(); err != nil {
				t.Errorf("snapshot Check = %v", err)
			}
			if snap.Stats().FleetTotal != st.FleetTotal {
				t.Errorf("snapshot FleetTotal %d, source %d", snap.Stats().FleetTotal, st.FleetTotal)
			}
			snap.Close()
			// Merge into a plain sketch and back: own counters only.
			plain := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: rows, Width: width, Seed: 5})
			if err := plain.Merge(c); err != nil {
				t.Fatal(err)
			}
			before, _ := c.ExportCounts()
			if err := c.Merge(plain); err != nil {
				t.Fatal(err)
			}
			after, _ := c.ExportCounts()
			for i := 0; i < len(after); i += 8 {
				if a, b := binary.LittleEndian.Uint64(after[i:]), binary.LittleEndian.Uint64(before[i:]); a != min(2*b, 1<<63) {
					t.Fatalf("counter %d: %d after merging itself back, had %d", i/8, a, b)
				}
			}
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); err != nil {
				t.Errorf("Check after Reset = %v", err)
			}
		})
	}
}

// TestCountMin_FleetConcurrent: SetFleetCounts of crafted counts
// from several goroutines and a second handle, while others add, reset,
// list Top, take Stats, snapshots and Checks (run it with -race).
func TestCountMin_FleetConcurrent(t *testing.T) {
	const rows, width = 3, 128
	path := tempPath(t, "f.cms")
	cfg := CountMinConfig{Rows: rows, Width: width, Seed: 5, Fleet: true, Candidates: 16}
	a := mustIn(t, OpenCountMin, Path(path), cfg)
	b := mustIn(t, OpenCountMin, Path(path), CountMinConfig{})
	ro := mustIn(t, OpenCountMin, Path(path), CountMinConfig{}, WithReadOnly())
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("goroutine %d panicked: %v\n%s", g, p, debug.Stack())
				}
			}()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			h := a
			if g%2 == 1 {
				h = b
			}
			for i := 0; time.Now().Before(stop); i++ {
				switch g {
				case 0, 1:
					if err := h.SetFleetCounts(fleetPattern(rows, width, r.IntN(8), r)); err != nil {
						t.Error(err)
						return
					}
				case 2, 3:
					k := []byte(fmt.Sprintf("k%d", r.IntN(100)))
					if est, err := h.AddN(k, uint64(r.IntN(5)+1)); err != nil || est == 0 {
						t.Errorf("AddN = %d, %v", est, err)
						return
					}
					if i%50 == 0 {
						h.Reset()
					}
				case 4:
					h.Top(0)
					h.Stats()
					h.ErrorBound()
					h.Check()
					ro.Top(5)
					ro.Stats()
					ro.EstimateString("k1")
				case 5:
					if s, err := h.Snapshot(Memory()); err == nil {
						s.Top(0)
						s.Close()
					}
					if err := ro.SetFleetCounts(fleetPattern(rows, width, 0, r)); err == nil {
						t.Error("a read-only handle stored fleet counts")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountMinWindow_FleetRacesRotate: SetFleetPeriod of crafted counts
// racing Rotate, adds, Allow and Top never panics, and a period that
// left the window is not stored.
func TestCountMinWindow_FleetRacesRotate(t *testing.T) {
	const rows, width = 2, 64
	path := tempPath(t, "f.cmw")
	cfg := CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: rows, Width: width, Seed: 5, Fleet: true, Candidates: 8}}
	w := mustIn(t, OpenCountMinWindow, Path(path), cfg)
	w2 := mustIn(t, OpenCountMinWindow, Path(path), CountMinWindowConfig{})
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for g := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("goroutine %d panicked: %v\n%s", g, p, debug.Stack())
				}
			}()
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for i := 0; time.Now().Before(stop); i++ {
				switch g {
				case 0, 1:
					h := []*CountMinWindow{w, w2}[g]
					cur := h.Current()
					p := cur - uint64(r.IntN(5)) + 1
					ok, err := h.SetFleetPeriod(p, fleetPattern(rows, width, r.IntN(8), r))
					if ok && (p > cur+1 || p+3 <= cur) {
						t.Errorf("SetFleetPeriod(%d) stored at current %d", p, cur)
					}
					_ = err // ErrTimeout when a Rotate raced it
				case 2:
					if i%20 == 0 {
						w2.Rotate()
					}
					w.AddString(fmt.Sprint("k", r.IntN(50)))
				case 3:
					w.Allow([]byte(fmt.Sprint("k", r.IntN(50))), 1000, r.IntN(2) == 0)
				case 4:
					w.Top(0)
					w.Stats()
					w.ErrorBound()
					w2.Check()
					w.ExportPeriods()
					if s, err := w.Snapshot(Memory()); err == nil {
						s.Check()
						s.Close()
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountMin_FleetMutatedFiles: files with a fleet part (a
// sketch and a window, each with candidates and crafted fleet counts),
// their bytes mutated (the fleet flag, the fleet total word, random
// words, with checksums recomputed or not), either refuse to open or
// answer every call without a panic or a fault.
func TestCountMin_FleetMutatedFiles(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	type file struct {
		name string
		data []byte
	}
	var files []file
	{
		p := filepath.Join(dir, "cms")
		c := mustIn(t, OpenCountMin, Path(p), CountMinConfig{Rows: 2, Width: 32, Seed: 3, Fleet: true, Candidates: 8, CandidateKeyBytes: 8})
		c.AddString("k")
		c.AddString("key-longer-than-8")
		c.SetFleetCounts(fleetPattern(2, 32, 0, r))
		c.Close()
		b, _ := os.ReadFile(p)
		files = append(files, file{"cms", b})
	}
	{
		p := filepath.Join(dir, "cmw")
		w := mustIn(t, OpenCountMinWindow, Path(p), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 32, Seed: 3, Fleet: true, Candidates: 8}})
		w.AddString("k")
		w.SetFleetPeriod(w.Current(), fleetPattern(2, 32, 1, r))
		w.Rotate()
		w.AddString("k")
		w.SetFleetPeriod(w.Current(), fleetPattern(2, 32, 0, r))
		w.Close()
		b, _ := os.ReadFile(p)
		files = append(files, file{"cmw", b})
	}
	words := []uint64{0, 1, 2, ^uint64(0), 1 << 63, 1<<63 + 1, 1 << 32}
	for _, f := range files {
		fi, err := Inspect(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		off := int(fi.Entries[0].Offset)
		for i := range 400 {
			b := bytes.Clone(f.data)
			switch i % 4 {
			case 0: // the fleet total word, and a window's slots' (every 8 bytes of the first 64 KiB)
				at := off + 8*r.IntN(min(8192, (len(b)-off)/8))
				binary.LittleEndian.PutUint64(b[at:], words[r.IntN(len(words))])
			case 1: // the parameter words of the directory entry
				at := otDirOff + entParams + 8*r.IntN(8)
				binary.LittleEndian.PutUint64(b[at:], words[r.IntN(len(words))])
			default:
				for range 1 + r.IntN(4) {
					b[r.IntN(len(b))] = byte(r.Uint32())
				}
			}
			if r.IntN(4) != 0 {
				b = otResumAll(b)
			}
			p := filepath.Join(dir, fmt.Sprintf("m-%s", f.name))
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			func() {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				defer func() {
					if rec := recover(); rec != nil {
						t.Fatalf("%s mutation %d: panic: %v\n%s", f.name, i, rec, debug.Stack())
					}
				}()
				Inspect(p)
				ro := []Option{WithWaitTimeout(time.Second)}
				if i%3 == 0 {
					ro = append(ro, WithReadOnly())
				}
				if f.name == "cms" {
					c, err := OpenCountMin(Path(p), CountMinConfig{}, ro...)
					if err != nil {
						return
					}
					defer c.Close()
					c.Check()
					c.Stats()
					c.ErrorBound()
					c.Top(0)
					c.AddString("k")
					c.ExportCounts()
					c.SetFleetCounts(fleetPattern(2, 32, 0, r))
					c.Top(0)
					c.Reset()
					c.Check()
					if s, err := c.Snapshot(Memory()); err == nil {
						s.Check()
						s.Close()
					}
					return
				}
				w, err := OpenCountMinWindow(Path(p), CountMinWindowConfig{}, ro...)
				if err != nil {
					return
				}
				defer w.Close()
				w.Check()
				w.Stats()
				w.ErrorBound()
				w.Top(0)
				w.AddString("k")
				w.Allow([]byte("k"), 3, true)
				w.ExportPeriods()
				w.SetFleetPeriod(w.Current(), fleetPattern(2, 32, 0, r))
				w.Rotate()
				w.Top(0)
				w.Check()
				if s, err := w.Snapshot(Memory()); err == nil {
					s.Check()
					s.Close()
				}
			}()
		}
	}
}

// TestArena_FleetPart: Count-Min structures with a fleet part in an
// arena, their fleet parts crafted: the arena's Snapshot copies them
// (estimates alike), its Check and metrics run, and the structure
// beside them is untouched by the stores.
func TestArena_FleetPart(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	ar := mustIn(t, OpenArena, Path(tempPath(t, "arena")), ArenaConfig{Size: 1 << 22, Seed: 1})
	c := mustIn(t, OpenCountMin, ar.Place("c"), CountMinConfig{Rows: 2, Width: 64, Fleet: true, Candidates: 8})
	plain := mustIn(t, OpenCountMin, ar.Place("plain"), CountMinConfig{Rows: 2, Width: 64})
	w := mustIn(t, OpenCountMinWindow, ar.Place("w"), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 64, Fleet: true}})
	plain.AddString("p")
	c.AddString("k")
	w.AddString("k")
	before, _ := plain.ExportCounts()
	for pat := range 8 {
		if err := c.SetFleetCounts(fleetPattern(2, 64, pat, r)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.SetFleetPeriod(w.Current(), fleetPattern(2, 64, pat, r)); err != nil {
			t.Fatal(err)
		}
		snap, err := ar.Snapshot(Memory())
		if err != nil {
			t.Fatal(err)
		}
		sc := mustIn(t, OpenCountMin, snap.Place("c"), CountMinConfig{})
		sw := mustIn(t, OpenCountMinWindow, snap.Place("w"), CountMinWindowConfig{})
		for _, k := range []string{"k", "x", "y"} {
			if a, b := sc.EstimateString(k), c.EstimateString(k); a != b {
				t.Errorf("pattern %d: snapshot Estimate(%q) = %d, source %d", pat, k, a, b)
			}
			if a, b := sw.EstimateString(k), w.EstimateString(k); a != b {
				t.Errorf("pattern %d: snapshot window Estimate(%q) = %d, source %d", pat, k, a, b)
			}
		}
		if sc.Stats().FleetTotal != c.Stats().FleetTotal {
			t.Errorf("pattern %d: snapshot FleetTotal %d, source %d", pat, sc.Stats().FleetTotal, c.Stats().FleetTotal)
		}
		if err := snap.Check(); err != nil {
			t.Errorf("pattern %d: snapshot arena Check = %v", pat, err)
		}
		sc.Close()
		sw.Close()
		snap.Close()
		if err := ar.Check(); err != nil {
			t.Errorf("pattern %d: arena Check = %v", pat, err)
		}
	}
	if after, _ := plain.ExportCounts(); !bytes.Equal(before, after) {
		t.Error("fleet stores changed the structure beside them")
	}
}
