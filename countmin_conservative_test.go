package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"
)

// cuCfg is lanesCfg with conservative update and two lanes.
var cuCfg = CountMinConfig{Rows: 4, Width: 256, Seed: 0x1a4e, Lanes: 2, ConservativeUpdate: true}

// cuStream is a skewed stream over 3000 keys: a few loud, most quiet, so
// that quiet keys share counters with loud ones in a 4 x 256 grid.
func cuStream(seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	z := rand.NewZipf(rng, 1.1, 1, 2999)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", z.Uint64())
	}
	return keys
}

// TestConservative_NeverLowAndLower: one handle adds a skewed stream by
// every verb to a sketch with conservative update and to one of plain
// adds of the same shape and seed. Every estimate is at least the exact
// count and at most the plain sketch's (a raised counter never passes the
// plain one), the over-estimates sum to clearly less, each Add returns
// what Estimate then says, and Check passes.
func TestConservative_NeverLowAndLower(t *testing.T) {
	cu := mustCountMin(t, Path(filepath.Join(t.TempDir(), "cu")), cuCfg)
	plain := mustCountMin(t, Memory(), CountMinConfig{Rows: cuCfg.Rows, Width: cuCfg.Width, Seed: cuCfg.Seed})
	exact := map[string]uint64{}
	keys := cuStream(1, 40000)
	for i := 0; i < len(keys); i += 100 {
		chunk := keys[i : i+100]
		switch (i / 100) % 4 {
		case 0:
			if err := cu.AddBatch(chunk, nil); err != nil {
				t.Fatal(err)
			}
			plain.AddBatch(chunk, nil)
			for _, k := range chunk {
				exact[string(k)]++
			}
		case 1:
			est := make([]uint64, len(chunk))
			if err := cu.AddBatch(chunk, est); err != nil {
				t.Fatal(err)
			}
			plain.AddBatch(chunk, nil)
			for j, k := range chunk {
				exact[string(k)]++
				if est[j] < exact[string(k)] {
					t.Fatalf("AddBatch's estimate of %q: %d, below its count %d", k, est[j], exact[string(k)])
				}
			}
		case 2:
			for _, k := range chunk {
				got, err := cu.AddN(k, 3)
				if err != nil {
					t.Fatal(err)
				}
				plain.AddN(k, 3)
				exact[string(k)] += 3
				if e := cu.Estimate(k); got != e || got < exact[string(k)] {
					t.Fatalf("AddN(%q) = %d, Estimate %d, count %d", k, got, e, exact[string(k)])
				}
			}
		default:
			for _, k := range chunk {
				cu.AddString(string(k))
				plain.Add(k)
				exact[string(k)]++
			}
		}
	}
	var overCU, overPlain uint64
	for k, n := range exact {
		c, p := cu.EstimateString(k), plain.EstimateString(k)
		if c < n || c > p {
			t.Fatalf("%q: count %d, conservative %d, plain %d: want count <= conservative <= plain", k, n, c, p)
		}
		overCU += c - n
		overPlain += p - n
	}
	if overCU*10 > overPlain*8 {
		t.Errorf("over-estimates sum to %d with conservative update, %d with plain adds: want at most 0.8x", overCU, overPlain)
	}
	if cu.Stats().Total != plain.Stats().Total {
		t.Errorf("Total %d, plain %d: the add count counts every add alike", cu.Stats().Total, plain.Stats().Total)
	}
	if err := cu.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	st := cu.Stats()
	if !st.ConservativeUpdate || st.Lanes != 2 || !st.LaneOwned || st.Lane != 0 {
		t.Errorf("Stats: conservative %v, lanes %d, lane %d owned %v; want true, 2, lane 0 owned", st.ConservativeUpdate, st.Lanes, st.Lane, st.LaneOwned)
	}
}

// TestConservative_WritersNeverLow: three handles on a sketch of two
// lanes (the third owns none: it adds to the shared lane) and four
// goroutines of one of them add at once, blind batches, batches with
// answers and single adds; every estimate is then at least the exact
// count of every key, and at most what one grid of plain adds says.
func TestConservative_WritersNeverLow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cu")
	hs := []*CountMin{mustCountMin(t, Path(path), cuCfg), mustCountMin(t, Path(path), CountMinConfig{}), mustCountMin(t, Path(path), CountMinConfig{ConservativeUpdate: true})}
	if st := hs[2].Stats(); st.LaneOwned || st.Lane != 2 {
		t.Fatalf("the third handle of two lanes: lane %d, owned %v; want the shared lane 2, not owned", st.Lane, st.LaneOwned)
	}
	plain := mustCountMin(t, Memory(), CountMinConfig{Rows: cuCfg.Rows, Width: cuCfg.Width, Seed: cuCfg.Seed})
	type writer struct {
		h    *CountMin
		keys [][]byte
	}
	var ws []writer
	for i := range 6 {
		ws = append(ws, writer{hs[min(i, 2)], cuStream(uint64(10+i), 6000)}) // hs[2] has four goroutines
	}
	var wg sync.WaitGroup
	for w, wr := range ws {
		wg.Go(func() {
			for i := 0; i < len(wr.keys); i += 50 {
				chunk := wr.keys[i : i+50]
				switch (i/50 + w) % 3 {
				case 0:
					wr.h.AddBatch(chunk, nil)
				case 1:
					wr.h.AddBatch(chunk, make([]uint64, len(chunk)))
				default:
					for _, k := range chunk {
						wr.h.Add(k)
					}
				}
			}
		})
	}
	wg.Wait()
	exact := map[string]uint64{}
	for _, wr := range ws {
		plain.AddBatch(wr.keys, nil)
		for _, k := range wr.keys {
			exact[string(k)]++
		}
	}
	for k, n := range exact {
		if c, p := hs[0].EstimateString(k), plain.EstimateString(k); c < n || c > p {
			t.Fatalf("%q: count %d, conservative %d, plain %d: want count <= conservative <= plain", k, n, c, p)
		}
	}
	if got := hs[1].Stats().Total; got != 36000 {
		t.Errorf("Total %d, want 36000", got)
	}
	if err := hs[0].Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestConservative_Config: what is stored, attached and refused.
func TestConservative_Config(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one")
	c := mustCountMin(t, Path(one), CountMinConfig{Rows: 2, Width: 64, ConservativeUpdate: true})
	if cfg := c.Config(); !cfg.ConservativeUpdate || cfg.Lanes != 1 {
		t.Errorf("Config: conservative %v, lanes %d; want true, 1", cfg.ConservativeUpdate, cfg.Lanes)
	}
	fi, err := os.Stat(one)
	if err != nil {
		t.Fatal(err)
	}
	plainSize := func() int64 {
		p := filepath.Join(dir, "plain")
		mustCountMin(t, Path(p), CountMinConfig{Rows: 2, Width: 64, Lanes: 2}).Close()
		fi, _ := os.Stat(p)
		return fi.Size()
	}()
	if fi.Size() != plainSize {
		t.Errorf("a sketch of one lane with conservative update is %d bytes, one of two plain lanes %d: want the lane and the shared lane", fi.Size(), plainSize)
	}
	if _, err := OpenCountMin(Path(filepath.Join(dir, "plain")), CountMinConfig{ConservativeUpdate: true}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("conservative update asked of plain lanes: %v, want ErrIncompatible", err)
	}
	if d, err := OpenCountMin(Path(one), CountMinConfig{Lanes: 1}); err != nil {
		t.Errorf("attach with Lanes 1: %v", err)
	} else {
		d.Close()
	}
	if _, err := OpenCountMin(Path(one), CountMinConfig{Lanes: 2}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("attach with Lanes 2 to one lane: %v, want ErrIncompatible", err)
	}
	if _, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{ConservativeUpdate: true}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a window with conservative update: %v, want ErrInvalidConfig", err)
	}
	// A read-only handle reads, claims nothing, adds nothing.
	c.AddString("x")
	ro := mustCountMin(t, Path(one), CountMinConfig{}, WithReadOnly())
	if e := ro.EstimateString("x"); e != 1 {
		t.Errorf("read-only handle reads %d, want 1", e)
	}
	if _, err := ro.AddString("x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("add on a read-only handle: %v, want ErrReadOnly", err)
	}
}

// TestConservative_MergeAndClose: a merge into a sketch with conservative
// update adds to the shared lane (another goroutine may be raising the
// owned one), and a Close frees the owned lane for the next handle with
// its counts.
func TestConservative_MergeAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cu")
	a := mustCountMin(t, Path(path), cuCfg)
	src := mustCountMin(t, Memory(), CountMinConfig{Rows: cuCfg.Rows, Width: cuCfg.Width, Seed: cuCfg.Seed})
	for range 5 {
		src.AddString("m")
	}
	a.AddString("m")
	if err := a.Merge(src); err != nil {
		t.Fatal(err)
	}
	if e := a.EstimateString("m"); e != 6 {
		t.Errorf("after the merge m reads %d, want 6", e)
	}
	// The raise goes on from the lane alone: one more add gives 7.
	if e, _ := a.AddString("m"); e != 7 {
		t.Errorf("an add after the merge returns %d, want 7", e)
	}
	lane := a.Stats().Lane
	a.Close()
	b := mustCountMin(t, Path(path), CountMinConfig{})
	if st := b.Stats(); !st.LaneOwned || st.Lane != lane {
		t.Errorf("after the Close the next handle has lane %d (owned %v), want %d", st.Lane, st.LaneOwned, lane)
	}
	if e, _ := b.AddString("m"); e != 8 {
		t.Errorf("the next owner's add returns %d, want 8", e)
	}
}

// TestConservative_CloseWhileAdding: goroutines keep adding while the
// handle closes and a second handle takes its lane and raises in it; no
// key is ever read below its count of adds that returned without error.
func TestConservative_CloseWhileAdding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cu")
	cfg := cuCfg
	cfg.Lanes = 1
	var total [4]uint64 // adds that returned without error, every round
	for round := range 20 {
		a := mustCountMin(t, Path(path), cfg)
		var ok [4]uint64
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				k := []byte(fmt.Sprint("g", g))
				for range 2000 {
					if _, err := a.Add(k); err != nil {
						return
					}
					ok[g]++
				}
			})
		}
		a.Close()
		b := mustCountMin(t, Path(path), CountMinConfig{}) // takes the freed lane
		for range 500 {
			for g := range 4 {
				b.AddString(fmt.Sprint("g", g))
			}
		}
		wg.Wait()
		for g := range 4 {
			total[g] += 500 + ok[g]
			if e := b.EstimateString(fmt.Sprint("g", g)); e < total[g] {
				t.Fatalf("round %d: g%d reads %d, below its adds %d", round, g, e, total[g])
			}
		}
		b.Close()
	}
}

// TestConservative_CoresAgree: blind batches of conservative updates, by
// each core (the C core's plain stores, the Go core's atomic ones), in
// grids under and past L2 (the fetch-ahead loop) and with weights up to
// saturation, leave the same lane, counter for counter.
func TestConservative_CoresAgree(t *testing.T) {
	keys := cuStream(3, 3000)
	for _, prefetch := range []bool{false, true} {
		var lanes [][]byte
		for _, core := range countMinCores() {
			c := mustCountMin(t, Memory(), CountMinConfig{Rows: 3, Width: 512, Seed: 9, ConservativeUpdate: true})
			c.core, c.l.Prefetch = core, prefetch
			lane := laneGrid(&c.l, c.Stats().Lane)
			for i := 0; i < len(keys); i += 300 {
				n := uint64(1)
				if i/300%3 == 2 {
					n = 1 << 61 // four of these saturate a counter
				}
				core.RaiseBatch(&c.l, lane, keys[i:i+300], n)
			}
			if err := c.AddBatch(keys[:100], nil); err != nil { // through the handle
				t.Fatal(err)
			}
			lanes = append(lanes, bytes.Clone(unsafe.Slice((*byte)(lane), 3*512*8)))
		}
		for i := 1; i < len(lanes); i++ {
			if !bytes.Equal(lanes[0], lanes[i]) {
				t.Errorf("prefetch %v: the lanes of core 0 and core %d differ", prefetch, i)
			}
		}
	}
}
