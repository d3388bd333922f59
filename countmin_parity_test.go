package sketch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// The parity suite: every core this binary has must do exactly what an
// independent, obviously-correct model does, and two cores given the same
// operations must leave byte-identical files.

// refCMS is the model: a plain slice, the definition written out.
type refCMS struct {
	rows  int
	width uint64
	seed  uint64
	cells []uint64
	fleet []uint64 // the fleet part, nil without one: reads add it
	// fleetTotal is the fleet total word: the fleet part's largest row
	// sum, saturating at 2^63.
	fleetTotal uint64
	adds       uint64 // the add count: the stripes' sum, saturating
}

func newRef(rows, width int, seed uint64) *refCMS {
	return &refCMS{rows: rows, width: uint64(width), seed: seed, cells: make([]uint64, rows*width)}
}

func (r *refCMS) cols(key []byte) []uint64 {
	h := xxh3.Hash128Seed(key, r.seed)
	cols := make([]uint64, r.rows)
	for i := range cols {
		cols[i] = uint64(i)*r.width + cells.Spread(h.Lo+uint64(i)*(h.Hi|1))%r.width
	}
	return cols
}

func (r *refCMS) add(key []byte, n uint64) uint64 {
	est := r.addCells(key, n)
	r.countAdds(n)
	return est
}

// countAdds adds n to the add count, saturating as a counter does. Which
// stripe an add moves is the writer's choice: only the sum is modelled.
func (r *refCMS) countAdds(n uint64) {
	if n >= cells.MaxCount-min(r.adds, cells.MaxCount) {
		r.adds = cells.MaxCount
	} else {
		r.adds += n
	}
}

func (r *refCMS) addBatch(keys [][]byte, n uint64) []uint64 {
	est := make([]uint64, len(keys))
	for i, k := range keys {
		est[i] = r.addCells(k, n)
		r.countAdds(n)
	}
	return est
}

func (r *refCMS) addCells(key []byte, n uint64) uint64 {
	est := uint64(cells.MaxCount)
	for _, c := range r.cols(key) {
		if r.cells[c] >= cells.MaxCount || n >= cells.MaxCount-r.cells[c] {
			r.cells[c] = cells.MaxCount
		} else {
			r.cells[c] += n
		}
		est = min(est, r.read(c))
	}
	return est
}

// read is what a read counts for cell c: own + fleet, saturating.
func (r *refCMS) read(c uint64) uint64 {
	if r.fleet == nil {
		return r.cells[c]
	}
	if r.fleet[c] >= cells.MaxCount-r.cells[c] {
		return cells.MaxCount
	}
	return r.cells[c] + r.fleet[c]
}

func (r *refCMS) estimate(key []byte) uint64 {
	est := uint64(cells.MaxCount)
	for _, c := range r.cols(key) {
		est = min(est, r.read(c))
	}
	return est
}

// fleetCounts makes a fleet part from arg: small counts, zeros, and now
// and then one at or past 2^63, as SetFleetCounts encodes them.
func fleetCounts(n int, arg byte) ([]uint64, []byte) {
	vals := make([]uint64, n)
	enc := make([]byte, 8*n)
	for i := range vals {
		v := cells.Spread(uint64(arg)<<32 | uint64(i))
		switch v % 16 {
		case 0:
			vals[i] = 0
		case 1:
			vals[i] = cells.MaxCount - v%4
		case 2:
			vals[i] = ^uint64(0) - v%3
		default:
			vals[i] = v % 50
		}
		binary.LittleEndian.PutUint64(enc[8*i:], vals[i])
	}
	return vals, enc
}

func (r *refCMS) reset() {
	clear(r.cells)
	r.adds = 0
}

// regionBytes is the model's region as it must appear in the file with
// its stripes folded (foldStripes).
func (r *refCMS) regionBytes(lanes int) []byte {
	// The one handle of a file adds to its first lane, lane 0; the other
	// lanes stay zero, and the fleet part follows the last.
	grids := make([]uint64, len(r.cells)*max(lanes, 1))
	copy(grids, r.cells)
	b := make([]byte, cells.StripesBytes+8*len(grids)+8*len(r.fleet))
	binary.NativeEndian.PutUint64(b, r.adds)
	binary.NativeEndian.PutUint64(b[fleetTotalOff:], r.fleetTotal)
	for i, v := range append(grids, r.fleet...) {
		binary.NativeEndian.PutUint64(b[cells.StripesBytes+8*i:], v)
	}
	return b
}

// foldStripes returns a copy of a Count-Min region with the add count's
// saturating sum in the first stripe and the other stripes zero: which
// stripe an add moves depends on the goroutine and the handle, so files
// are equal when their folded regions are.
func foldStripes(region []byte) []byte {
	b := bytes.Clone(region)
	var sum uint64
	for i := 0; i < cells.StripeCount; i++ {
		v := binary.NativeEndian.Uint64(b[i*cells.StripeBytes:])
		if v >= cells.MaxCount-min(sum, cells.MaxCount) {
			sum = cells.MaxCount
		} else {
			sum += v
		}
		binary.NativeEndian.PutUint64(b[i*cells.StripeBytes:], 0)
		// A lane's owner is the handle's token, as the stripe is its pick.
		binary.NativeEndian.PutUint64(b[i*cells.StripeBytes+laneOwnerOff:], 0)
	}
	binary.NativeEndian.PutUint64(b, sum)
	return b
}

// parityRun applies one operation sequence, decoded from ops, to the model
// and to a file per core, comparing every result, then the files.
// With fleet the sketches keep a fleet part, which every read adds; with
// lanes > 1 they keep lanes, whose sum the model's one grid is.
func parityRun(t *testing.T, rows, width int, prefetch, fleet bool, ops []byte, lanes int) {
	t.Helper()
	const seed = 0x5eed
	dir := t.TempDir()
	ref := newRef(rows, width, seed)
	if fleet {
		ref.fleet = make([]uint64, len(ref.cells))
	}
	var sks []*CountMin
	for _, core := range countMinCores() {
		c, err := OpenCountMin(Path(fmt.Sprintf("%s/%s.cms", dir, core.Name())), CountMinConfig{Rows: rows, Width: width, Seed: seed, Fleet: fleet, Lanes: lanes})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.core = core
		c.l.Prefetch = prefetch
		sks = append(sks, c)
	}
	key := func(b byte) []byte { return []byte(fmt.Sprintf("key-%d", b)) }
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		switch op % 8 {
		case 0, 1: // a single add
			want := ref.add(key(arg), 1)
			for _, c := range sks {
				if got := c.core.Add(&c.l, key(arg), 1); got != want {
					t.Fatalf("op %d: %s add(%q) = %d, want %d", i/2, c.core.Name(), key(arg), got, want)
				}
			}
		case 2: // a large add, past the single fetch-add limit
			n := uint64(arg) << 56
			want := ref.add(key(arg), n)
			for _, c := range sks {
				if got := c.core.Add(&c.l, key(arg), n); got != want {
					t.Fatalf("op %d: %s add(%q, %d) = %d, want %d", i/2, c.core.Name(), key(arg), n, got, want)
				}
			}
		case 3, 4: // a batch of arg%40 keys, or of 300 (two chunks)
			nkeys := int(arg) % 40
			if arg == 255 {
				nkeys = 300
			}
			keys := make([][]byte, nkeys)
			for j := range keys {
				keys[j] = key(arg + byte(j*7))
			}
			want := ref.addBatch(keys, uint64(op%3+1))
			for _, c := range sks {
				got := make([]uint64, len(keys))
				c.core.AddBatch(&c.l, keys, uint64(op%3+1), got)
				if !slicesEqual(got, want) {
					t.Fatalf("op %d: %s addBatch estimates = %v, want %v", i/2, c.core.Name(), got, want)
				}
			}
		case 5: // estimates, single and batched
			keys := [][]byte{key(arg), key(arg + 1), key(arg + 2), key(arg ^ 0xff), {}}
			want := make([]uint64, len(keys))
			for j, k := range keys {
				want[j] = ref.estimate(k)
			}
			for _, c := range sks {
				got := make([]uint64, len(keys))
				c.core.EstimateBatch(&c.l, keys, got)
				if !slicesEqual(got, want) {
					t.Fatalf("op %d: %s estimateBatch = %v, want %v", i/2, c.core.Name(), got, want)
				}
				if got := c.core.Estimate(&c.l, keys[0]); got != want[0] {
					t.Fatalf("op %d: %s estimate(%q) = %d, want %d", i/2, c.core.Name(), keys[0], got, want[0])
				}
			}
		case 6: // reset, rarely; a new fleet part, with one
			if arg < 16 {
				ref.reset()
				for _, c := range sks {
					c.core.Reset(&c.l)
				}
			} else if fleet && arg >= 128 {
				var enc []byte
				ref.fleet, enc = fleetCounts(len(ref.cells), arg)
				ref.fleetTotal = 0
				for i := 0; i < rows; i++ {
					var sum uint64
					for _, v := range ref.fleet[i*width : (i+1)*width] {
						if v = min(v, cells.MaxCount); v >= cells.MaxCount-sum {
							sum = cells.MaxCount
						} else {
							sum += v
						}
					}
					ref.fleetTotal = max(ref.fleetTotal, sum)
				}
				for _, c := range sks {
					if err := c.SetFleetCounts(enc); err != nil {
						t.Fatal(err)
					}
				}
			}
		case 7: // whole-array walks
			sums := make([]uint64, rows)
			for _, c := range sks {
				c.core.RowSums(&c.l, sums)
				if got := c.core.Adds(&c.l); got != ref.adds {
					t.Fatalf("op %d: %s adds() = %d, want %d", i/2, c.core.Name(), got, ref.adds)
				}
			}
		}
	}
	want := ref.regionBytes(lanes)
	for _, c := range sks {
		if got := foldStripes(c.m.entryBytes()); !bytes.Equal(got, want) {
			t.Fatalf("%s: the counter region differs from the model's", c.core.Name())
		}
	}
	// Same seed, same shape, same operations: the whole files are equal.
	if len(sks) == 2 {
		a, err1 := os.ReadFile(sks[0].Path())
		b, err2 := os.ReadFile(sks[1].Path())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		off := sks[0].m.ent.off
		a = append(a[:off:off], foldStripes(a[off:])...)
		b = append(b[:off:off], foldStripes(b[off:])...)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s and %s files differ after the same operations", sks[0].core.Name(), sks[1].core.Name())
		}
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParity_Cores runs long random sequences on several shapes, with and
// without fetching ahead, so both batch paths of each core are compared.
func TestParity_Cores(t *testing.T) {
	for _, shape := range []struct {
		rows, width int
		prefetch    bool
		fleet       bool
		lanes       int
	}{{1, 1, false, false, 0}, {3, 64, false, false, 0}, {3, 64, true, false, 0}, {5, 4096, false, false, 0}, {5, 4096, true, false, 0}, {2, 1 << 18, true, false, 0},
		{1, 1, false, true, 0}, {3, 64, false, true, 0}, {3, 64, true, true, 0}, {5, 4096, true, true, 0}, {2, 1 << 18, true, true, 0},
		{3, 64, false, false, 2}, {5, 4096, true, false, 3}, {2, 1 << 18, true, true, 2}} {
		t.Run(fmt.Sprintf("%dx%d/prefetch=%v/fleet=%v/lanes=%d", shape.rows, shape.width, shape.prefetch, shape.fleet, shape.lanes), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(shape.rows), uint64(shape.width)))
			ops := make([]byte, raceScale(20000))
			for i := range ops {
				ops[i] = byte(r.Uint32())
			}
			parityRun(t, shape.rows, shape.width, shape.prefetch, shape.fleet, ops, shape.lanes)
		})
	}
}

// FuzzParity_CountMin compares the cores and the model on arbitrary
// sequences.
func FuzzParity_CountMin(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8})
	f.Add([]byte{2, 255, 2, 255, 2, 255, 0, 255, 5, 255})
	f.Add([]byte{4, 39, 3, 20, 6, 0, 4, 39, 5, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			ops = ops[:4096]
		}
		parityRun(t, 3, 1024, true, false, ops, 0) // the prefetching batch paths
		parityRun(t, 2, 16, false, false, ops, 0)  // heavy collisions
		parityRun(t, 3, 1024, true, true, ops, 0)  // a fleet part
		parityRun(t, 2, 16, false, true, ops, 0)
		parityRun(t, 3, 1024, true, true, ops, 2) // lanes and a fleet part
	})
}
