//go:build linux

package sketch

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"unsafe"
)

// Crafted candidate tables: parameters that do not fit the region are
// ErrCorrupt at open; slots a hostile writer of the file made up are
// never listed, never read outside their bytes, and Check names them.

var craftedCandCfg = CountMinConfig{Rows: 2, Width: 256, Candidates: 16, Seed: 5}

// TestCandidates_CraftedParams: table parameters that do not fit the
// region, or are out of range, are refused as ErrCorrupt.
func TestCandidates_CraftedParams(t *testing.T) {
	path, valid := otMakeFile(t, craftedCandCfg)
	p := otDirOff + entParams
	for _, c := range []struct {
		name  string
		k, kb uint64
	}{
		{"no table, its bytes left", 0, 64},
		{"no table, no key bytes, the table's room left", 0, 0},
		{"K past the most", maxCandidates + 1, 64},
		{"more ways than the region", 17, 64},
		{"key bytes not a multiple of 8", 16, 60},
		{"key bytes under 8", 16, 0},
		{"key bytes past the most", 16, maxCandidateKeyBytes + 8},
		{"fewer key bytes than the region", 16, 8},
	} {
		b := append([]byte(nil), valid...)
		native.PutUint64(b[p+16:], c.k)
		native.PutUint64(b[p+24:], c.kb)
		otResum(b)
		otRewrite(t, path, b)
		for _, cfg := range []CountMinConfig{{}, craftedCandCfg} {
			if _, err := OpenCountMin(Path(path), cfg); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s, opened with %+v: %v, want ErrCorrupt", c.name, cfg, err)
			}
		}
	}
}

// craftedTable is a sketch with a table holding keys, written as a file.
func craftedTable(t *testing.T) (string, *CountMin) {
	path := tempPath(t, "crafted")
	c, err := OpenCountMin(Path(path), craftedCandCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i, k := range []string{"alpha", "beta", "gamma", "delta"} {
		for range 10 * (i + 1) {
			c.AddString(k)
		}
	}
	return path, c
}

// heldWay is a way of c's table holding a key.
func heldWay(t *testing.T, c *CountMin) uint64 {
	for way := range c.top.ways {
		if atomic.LoadUint64(c.top.fp(way)) != 0 {
			return way
		}
	}
	t.Fatal("no way holds a key")
	return 0
}

// TestCandidates_CraftedSlots: slots a writer of the file made up are
// ErrCorrupt to Check and left out of Top.
func TestCandidates_CraftedSlots(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(tb *candidateTable, way uint64)
	}{
		{"a fingerprint over an empty slot", func(tb *candidateTable, _ uint64) {
			for way := range tb.ways {
				if atomic.LoadUint64(tb.fp(way)) == 0 {
					atomic.StoreUint64(tb.fp(way), 0x1234)
					return
				}
			}
		}},
		{"a key's bytes changed", func(tb *candidateTable, way uint64) {
			w := tb.slotWord(way, 4)
			// Every byte of the first word, so that the key changes on
			// either byte order.
			atomic.StoreUint64(w, atomic.LoadUint64(w)^0x0101010101010101)
		}},
		{"a key's length changed", func(tb *candidateTable, way uint64) {
			w := tb.slotWord(way, 3)
			atomic.StoreUint64(w, atomic.LoadUint64(w)-1)
		}},
		{"a sequence count left odd", func(tb *candidateTable, way uint64) {
			atomic.StoreUint64(tb.slotWord(way, 0), 7)
		}},
		{"a key in another bucket", func(tb *candidateTable, way uint64) {
			// The table has two buckets: a key moved to the other one
			// may still be in one of its own; flip hi until it is not.
			hi := atomic.LoadUint64(tb.slotWord(way, 2))
			for b1, b2 := tb.bucketsOf(hi); b1 == way/8 || b2 == way/8; b1, b2 = tb.bucketsOf(hi) {
				hi = hi*6364136223846793005 + 1442695040888963407
			}
			atomic.StoreUint64(tb.slotWord(way, 2), hi)
		}},
		{"a key twice", func(tb *candidateTable, way uint64) {
			// Another way of the same bucket gets the same slot.
			other := way/8*8 + (way+1)%8
			for i := uintptr(0); i < tb.slotBytes/8; i++ {
				atomic.StoreUint64(tb.slotWord(other, i), atomic.LoadUint64(tb.slotWord(way, i)))
			}
			atomic.StoreUint64(tb.fp(other), atomic.LoadUint64(tb.fp(way)))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, w := craftedTable(t)
			before, _ := w.Top(0)
			way := heldWay(t, w)
			c.edit(w.top, way)
			r, err := OpenCountMin(Path(path), CountMinConfig{}, WithReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Check(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
			after, err := r.Top(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range after {
				if r.EstimateString(h.Key) != h.Estimate || h.Length != len(h.Key) {
					t.Errorf("listed %+v, which is not a key's own", h)
				}
			}
			if len(after) > len(before) {
				t.Errorf("Top lists %d keys after the edit, %d before", len(after), len(before))
			}
		})
	}
}

// TestCandidates_GarbageTable: random bytes over the table never make an
// add, Top or Check read outside the mapping or panic; Check finds them.
func TestCandidates_GarbageTable(t *testing.T) {
	path, w := craftedTable(t)
	r := rand.New(rand.NewPCG(1, 1))
	tb := w.top
	size := uintptr(candidateTableBytes(tb.k, int(tb.keyBytes)))
	table := unsafe.Slice((*uint64)(tb.ctl), size/8)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	corrupt := 0
	for round := range 200 {
		for range 1 + r.IntN(20) {
			v := r.Uint64()
			switch r.IntN(3) {
			case 0:
				v %= 100
			case 1:
				v = 1 << r.IntN(64)
			}
			atomic.StoreUint64(&table[r.IntN(len(table))], v)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("round %d: %v\n%s", round, p, debug.Stack())
				}
			}()
			h, err := OpenCountMin(Path(path), CountMinConfig{})
			if err != nil {
				t.Fatalf("round %d: open: %v", round, err)
			}
			defer h.Close()
			for i := range 50 {
				h.AddString(string(rune('a' + i%26)))
			}
			h.Top(0)
			if err := h.Check(); errors.Is(err, ErrCorrupt) {
				corrupt++
			}
		}()
	}
	if corrupt == 0 {
		t.Error("Check found nothing in 200 rounds of garbage")
	}
	t.Logf("Check found damage in %d of 200 rounds", corrupt)
	_ = os.Remove(path)
}

// TestCandidates_CraftedLength: a slot whose length word says more than an
// int holds is listed with a length that is not negative (on 32-bit
// platforms 1<<31 is past an int).
func TestCandidates_CraftedLength(t *testing.T) {
	_, c := craftedTable(t)
	way := heldWay(t, c)
	atomic.StoreUint64(c.top.slotWord(way, 3), 1<<40) // a prefix, whose hash names it
	hs, err := c.Top(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Length < 0 {
			t.Errorf("%q listed with length %d", h.Key, h.Length)
		}
	}
}
