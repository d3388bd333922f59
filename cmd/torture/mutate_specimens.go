package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/shmsketch/sketch"
)

// A specimen is a valid file the mutation pass breaks copies of: every kind,
// windows turned by Rotate and by the clock, an arena of every kind, frozen
// files, empty files and files with adds in them, of a few shapes.
type specimen struct {
	name string
	data []byte
	// hot are the byte ranges a mutation aims at more often than the rest:
	// the header and lock, the directory, and the head of each structure's
	// region (a window's control and slot words).
	hot []span
}

type span struct{ off, n int }

// specimenKeys are the keys a specimen's adds use, and the ones the
// openers ask about.
func specimenKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "hostile-%03d", i)
	}
	return keys
}

// makeSpecimens writes the valid files into dir and reads them back. The
// hash seeds come from rng, so one run seed gives the same files (but for
// the lock's token records and the clock windows' periods).
func makeSpecimens(dir string, rng *rand.Rand) ([]specimen, error) {
	keys := specimenKeys(64)
	seed := func() uint64 { return rng.Uint64() | 1 }
	// The makers draw their seeds as they run, in this order.
	var makers []specimenMaker
	makers = append(makers, plainMakers(keys, seed)...)
	makers = append(makers, windowMakers(keys, seed)...)
	makers = append(makers, largeMakers(keys, seed)...)
	var out []specimen
	for _, m := range makers {
		path := filepath.Join(dir, m.name)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err // a -dir used before: make the file anew
		}
		if err := m.make(path); err != nil {
			return nil, fmt.Errorf("specimen %s: %w", m.name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, specimen{name: m.name, data: data, hot: hotSpans(data)})
	}
	return out, nil
}

// A specimenMaker writes the specimen name at path.
type specimenMaker struct {
	name string
	make func(path string) error
}

// plainMakers are the specimens of the kinds without a window: empty, with
// adds, frozen.
func plainMakers(keys [][]byte, seed func() uint64) []specimenMaker {
	return []specimenMaker{
		{"countmin-empty", func(p string) error {
			return closeAfter(sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{Rows: 2, Width: 64, Seed: seed()}))
		}},
		{"countmin-adds", func(p string) error {
			c, err := sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{Rows: 4, Width: 512, Seed: seed()})
			if err == nil {
				err = c.AddBatch(keys, nil)
				c.AddN(keys[0], 1000)
			}
			return closeAfter(c, err)
		}},
		{"countmin-frozen", func(p string) error {
			c, err := sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{ErrorRate: 0.01, Confidence: 0.9, Seed: seed()})
			if err == nil {
				c.AddBatch(keys, nil)
				err = c.Freeze()
			}
			return closeAfter(c, err)
		}},
		{"bloom-adds", func(p string) error {
			b, err := sketch.OpenBloom(sketch.Path(p), sketch.BloomConfig{Capacity: 2000, FPRate: 0.01, Seed: seed()})
			if err == nil {
				err = b.AddBatch(keys, nil)
			}
			return closeAfter(b, err)
		}},
		{"bloom-frozen", func(p string) error {
			b, err := sketch.OpenBloom(sketch.Path(p), sketch.BloomConfig{Capacity: 100, FPRate: 0.001, Seed: seed()})
			if err == nil {
				b.AddBatch(keys[:10], nil)
				err = b.Freeze()
			}
			return closeAfter(b, err)
		}},
		{"countingbloom-empty", func(p string) error {
			return closeAfter(sketch.OpenCountingBloom(sketch.Path(p), sketch.CountingBloomConfig{Capacity: 64, FPRate: 0.1, Seed: seed()}))
		}},
		{"countingbloom-adds", func(p string) error {
			b, err := sketch.OpenCountingBloom(sketch.Path(p), sketch.CountingBloomConfig{Capacity: 1000, FPRate: 0.01, Seed: seed()})
			if err == nil {
				err = b.AddBatch(keys, nil)
				b.Remove(keys[0])
			}
			return closeAfter(b, err)
		}},
		{"countingbloom-frozen", func(p string) error {
			b, err := sketch.OpenCountingBloom(sketch.Path(p), sketch.CountingBloomConfig{Capacity: 500, FPRate: 0.01, Seed: seed()})
			if err == nil {
				b.AddBatch(keys, nil)
				err = b.Freeze()
			}
			return closeAfter(b, err)
		}},
		{"gcra-empty", func(p string) error {
			return closeAfter(sketch.OpenGCRA(sketch.Path(p), sketch.GCRAConfig{Rate: presenceRate, Rows: 2, Width: 64, Seed: seed()}))
		}},
		{"gcra-decided", func(p string) error {
			g, err := sketch.OpenGCRA(sketch.Path(p), sketch.GCRAConfig{Rate: sketch.Rate{Count: 10, Per: time.Second}, Burst: 3, Rows: 4, Width: 256, Seed: seed()})
			if err == nil {
				err = g.AllowBatch(keys, 1, make([]sketch.RateDecision, len(keys)))
				g.Allow(keys[0], 4)
			}
			return closeAfter(g, err)
		}},
		{"gcra-frozen", func(p string) error {
			g, err := sketch.OpenGCRA(sketch.Path(p), sketch.GCRAConfig{Rate: presenceRate, Keys: 16, Seed: seed()})
			if err == nil {
				g.AllowBatch(keys, 1, make([]sketch.RateDecision, len(keys)))
				err = g.Freeze()
			}
			return closeAfter(g, err)
		}},
	}
}

// windowMakers are the windows' specimens: turned by Rotate, by the clock,
// and frozen.
func windowMakers(keys [][]byte, seed func() uint64) []specimenMaker {
	return []specimenMaker{
		{"countminwindow-rotate", func(p string) error {
			w, err := sketch.OpenCountMinWindow(sketch.Path(p), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 3}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 128, Seed: seed()}})
			for i := 0; err == nil && i < 5; i++ {
				err = w.AddBatch(keys[i*8:i*8+8], nil)
				w.Rotate()
			}
			return closeAfter(w, err)
		}},
		{"countminwindow-clock", func(p string) error {
			w, err := sketch.OpenCountMinWindow(sketch.Path(p), sketch.CountMinWindowConfig{Window: sketch.Window{Period: 5 * time.Millisecond, Keep: 4}, CountMin: sketch.CountMinConfig{Rows: 3, Width: 64, Seed: seed()}})
			for i := 0; err == nil && i < 4; i++ {
				err = w.AddBatch(keys[i*8:i*8+8], nil)
				time.Sleep(6 * time.Millisecond)
			}
			return closeAfter(w, err)
		}},
		{"countminwindow-frozen", func(p string) error {
			w, err := sketch.OpenCountMinWindow(sketch.Path(p), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 1}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64, Seed: seed()}})
			if err == nil {
				w.AddBatch(keys, nil)
				err = w.Freeze()
			}
			return closeAfter(w, err)
		}},
		{"bloomwindow-rotate", func(p string) error {
			w, err := sketch.OpenBloomWindow(sketch.Path(p), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 500, FPRate: 0.01, Seed: seed()}})
			for i := 0; err == nil && i < 4; i++ {
				err = w.AddBatch(keys[i*8:i*8+8], nil)
				w.Rotate()
			}
			return closeAfter(w, err)
		}},
		{"bloomwindow-clock", func(p string) error {
			w, err := sketch.OpenBloomWindow(sketch.Path(p), sketch.BloomWindowConfig{Window: sketch.Window{Period: 5 * time.Millisecond, Keep: 3}, Bloom: sketch.BloomConfig{Capacity: 300, FPRate: 0.01, Seed: seed()}})
			for i := 0; err == nil && i < 4; i++ {
				err = w.AddBatch(keys[i*8:i*8+8], nil)
				time.Sleep(6 * time.Millisecond)
			}
			return closeAfter(w, err)
		}},
		{"bloomwindow-frozen", func(p string) error {
			w, err := sketch.OpenBloomWindow(sketch.Path(p), sketch.BloomWindowConfig{Window: sketch.Window{Period: time.Hour, Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 200, FPRate: 0.01, Seed: seed()}})
			if err == nil {
				w.AddBatch(keys, nil)
				err = w.Freeze()
			}
			return closeAfter(w, err)
		}},
	}
}

// largeMakers are the large specimens and the arenas.
func largeMakers(keys [][]byte, seed func() uint64) []specimenMaker {
	return []specimenMaker{
		// Past the L2 cache (1 MiB when it cannot be read), so that the cgo
		// build's batches run in the C core.
		{"countmin-large", func(p string) error {
			c, err := sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{Rows: 4, Width: 1 << 16, Seed: seed()})
			if err == nil {
				err = c.AddBatch(keys, nil)
			}
			return closeAfter(c, err)
		}},
		{"bloom-large", func(p string) error {
			b, err := sketch.OpenBloom(sketch.Path(p), sketch.BloomConfig{Capacity: 1 << 20, FPRate: 0.01, Seed: seed()})
			if err == nil {
				err = b.AddBatch(keys, nil)
			}
			return closeAfter(b, err)
		}},
		{"countingbloom-large", func(p string) error {
			b, err := sketch.OpenCountingBloom(sketch.Path(p), sketch.CountingBloomConfig{Capacity: 1 << 18, FPRate: 0.01, Seed: seed()})
			if err == nil {
				err = b.AddBatch(keys, nil)
			}
			return closeAfter(b, err)
		}},
		{"arena-empty", func(p string) error {
			return closeAfter(sketch.OpenArena(sketch.Path(p), sketch.ArenaConfig{Size: 64 << 10, Seed: seed()}))
		}},
		{"arena-all", func(p string) error { return makeArena(p, keys, seed(), false) }},
		{"arena-frozen", func(p string) error { return makeArena(p, keys, seed(), true) }},
	}
}

// makeArena fills an arena with one structure of each kind, windows of
// both sorts, with adds in each, and freezes it if asked.
func makeArena(path string, keys [][]byte, seed uint64, freeze bool) error {
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: 512 << 10, Seed: seed})
	if err != nil {
		return err
	}
	defer a.Close()
	var handles []interface{ Close() error }
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	cm, err := sketch.OpenCountMin(a.Place("cm"), sketch.CountMinConfig{Rows: 3, Width: 256})
	if err != nil {
		return err
	}
	handles = append(handles, cm)
	cm.AddBatch(keys, nil)
	bf, err := sketch.OpenBloom(a.Place("bloom"), sketch.BloomConfig{Capacity: 500, FPRate: 0.01})
	if err != nil {
		return err
	}
	handles = append(handles, bf)
	bf.AddBatch(keys, nil)
	cb, err := sketch.OpenCountingBloom(a.Place("cbf"), sketch.CountingBloomConfig{Capacity: 300, FPRate: 0.01})
	if err != nil {
		return err
	}
	handles = append(handles, cb)
	cb.AddBatch(keys, nil)
	cw, err := sketch.OpenCountMinWindow(a.Place("cmw"), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64}})
	if err != nil {
		return err
	}
	handles = append(handles, cw)
	cw.AddBatch(keys[:16], nil)
	cw.Rotate()
	cw.AddBatch(keys[16:32], nil)
	bw, err := sketch.OpenBloomWindow(a.Place("bw"), sketch.BloomWindowConfig{Window: sketch.Window{Period: 5 * time.Millisecond, Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 200, FPRate: 0.01}})
	if err != nil {
		return err
	}
	handles = append(handles, bw)
	bw.AddBatch(keys, nil)
	if freeze {
		return a.Freeze()
	}
	return nil
}

// closeAfter closes what an open returned, keeping the first error.
func closeAfter[H interface{ Close() error }](h H, err error) error {
	if err != nil {
		return err
	}
	return h.Close()
}
