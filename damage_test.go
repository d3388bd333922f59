//go:build linux

package sketch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Damage against interruption: values no add, merge or reset can leave,
// however cut short, are ErrDamaged to Check, and merges and exports
// refuse them; what a killed add or merge leaves stays ErrTornAdd.

// writeAt writes b at offset off of the file at path, as a stray writer
// of the file would.
func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// regionOf is the file offset of the standalone structure's region.
func regionOf(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	return int64(fi.Entries[0].Offset)
}

// counterOff is the file offset of counter col of row in a Count-Min
// sketch of the given width.
func counterOff(t *testing.T, path string, width, row, col int) int64 {
	return regionOf(t, path) + cells.StripesBytes + int64(row*width+col)*8
}

var ffff = []byte{0xff, 0xff, 0xff, 0xff}

// TestCountMin_CheckErrDamaged: 4 counter bytes set to 0xff, in any row,
// or a counter's top byte, are damage (ErrDamaged, which is ErrCorrupt),
// not a torn add; a torn add of the largest weight added stays one.
func TestCountMin_CheckErrDamaged(t *testing.T) {
	const rows, width = 4, 1024
	top := 7 // the most significant byte of a native word
	if cells.BigEndian {
		top = 0
	}
	for _, tc := range []struct {
		name     string
		row, col int
		at       int // byte of the counter
		b        []byte
	}{
		{"4 bytes of row 0", 0, 7, 0, ffff},
		{"4 bytes of row 2", 2, 100, 0, ffff},
		{"4 bytes of the last row", rows - 1, 1023, 4, ffff},
		{"a counter's top byte", 1, 3, top, []byte{0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			c := mustOpen(t, path, CountMinConfig{Rows: rows, Width: width})
			for i := range 500 {
				c.AddString(strings.Repeat("k", i%37+1))
			}
			c.AddN([]byte("weighed"), 5)
			if err := c.Check(); err != nil {
				t.Fatalf("Check before the damage = %v", err)
			}
			writeAt(t, path, counterOff(t, path, width, tc.row, tc.col)+int64(tc.at), tc.b)
			r := mustOpen(t, path, CountMinConfig{}, WithReadOnly())
			err := r.Check()
			if !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInconsistent) {
				t.Fatalf("Check() = %v, want ErrDamaged (and ErrCorrupt, not ErrInconsistent)", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Check() = %v, which does not name the file", err)
			}
			// A merge of it is refused before anything changes.
			dst := mustOpen(t, tempPath(t, "dst"), CountMinConfig{Rows: rows, Width: width, Seed: c.Seed()})
			if err := dst.Merge(r); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Errorf("Merge(damaged) = %v, want ErrDamaged naming %s", err, path)
			}
			if got := dst.Total(); got != 0 {
				t.Errorf("Merge(damaged) counted %d into the sketch", got)
			}
		})
	}
}

// TestCountMin_CheckTornWeighted: an add cut short keeps being a torn add
// whatever its weight, as long as an add of that weight was recorded (an
// AddN records it before its counters move), even many of them.
func TestCountMin_CheckTornWeighted(t *testing.T) {
	for _, n := range []uint64{1, 1000, 1 << 33, 1 << 50} {
		c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 4, Width: 256})
		c.AddN([]byte("loud"), n)
		for i := range 100 {
			tornAdd(c, []byte{byte(i)}, n, 0, 1+i%3)
		}
		if err := c.Check(); !errors.Is(err, ErrTornAdd) {
			t.Errorf("weight %d: Check() = %v, want ErrTornAdd", n, err)
		}
	}
}

// TestCountMin_CheckMergeCutShort: a merge cut short leaves rows apart by
// up to a whole sketch, which is a torn add, not damage, because the file
// counts the merges started and finished; the same rows without a merge
// started are damage. A completed merge carries over the recorded weight,
// and a merge cut short in a merged sketch.
func TestCountMin_CheckMergeCutShort(t *testing.T) {
	cfg := CountMinConfig{Rows: 4, Width: 256, Seed: 7}
	src := mustOpen(t, tempPath(t, "src"), cfg)
	keys := make([][]byte, 1<<12)
	for i := range keys {
		keys[i] = []byte{byte(i), byte(i >> 8)}
	}
	for range 1 << 9 { // 2^21 adds
		if err := src.AddBatch(keys, nil); err != nil {
			t.Fatal(err)
		}
	}
	// and 2^29 more in one AddN: more than maxTornAdds adds of weight 1,
	// which a raw copy of the rows brings without the weight.
	if _, err := src.AddN([]byte("heavy"), 1<<29); err != nil {
		t.Fatal(err)
	}
	// rows 0 and 1 of src merged, the rest not: a merge killed there.
	partial := func(dst *CountMin) {
		n := uintptr(2) * uintptr(dst.l.Mask+1)
		for i := uintptr(0); i < n; i++ {
			cells.AddCell((*uint64)(unsafe.Add(dst.l.Cells, i*8)), *(*uint64)(unsafe.Add(src.l.Cells, i*8)))
		}
	}
	cut := mustOpen(t, tempPath(t, "cut"), cfg)
	beginMerge(&cut.l, &src.l)
	partial(cut)
	if err := cut.Check(); !errors.Is(err, ErrTornAdd) || !strings.Contains(err.Error(), "merge") {
		t.Errorf("Check after a merge cut short = %v, want ErrTornAdd naming the merge", err)
	}
	unmarked := mustOpen(t, tempPath(t, "unmarked"), cfg)
	partial(unmarked)
	if err := unmarked.Check(); !errors.Is(err, ErrDamaged) {
		t.Errorf("Check of the same rows with no merge started = %v, want ErrDamaged", err)
	}
	// Merged on, the cut merge stays told.
	fleet := mustOpen(t, tempPath(t, "fleet"), cfg)
	if err := fleet.Merge(cut); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Check(); !errors.Is(err, ErrTornAdd) {
		t.Errorf("Check of a sketch that merged one cut short = %v, want ErrTornAdd", err)
	}
	// A weighted sketch merged in brings its weight.
	w := mustOpen(t, tempPath(t, "w"), cfg)
	w.AddN([]byte("heavy"), 1<<40)
	tornAdd(w, []byte("torn"), 1<<40, 0, 2)
	into := mustOpen(t, tempPath(t, "into"), cfg)
	if err := into.Merge(w); err != nil {
		t.Fatalf("Merge of a sketch with a torn add = %v", err)
	}
	if got := recordedWeight(&into.l); got != 1<<40 {
		t.Errorf("merged weight = %d, want %d", got, uint64(1)<<40)
	}
	if err := into.Check(); !errors.Is(err, ErrTornAdd) {
		t.Errorf("Check after merging a torn weighted add = %v, want ErrTornAdd", err)
	}
}

// TestCountMin_RecordWeight: the recorded weight is the largest AddN
// rounded up to a power of two, only rises, and survives a Reset and a
// snapshot.
func TestCountMin_RecordWeight(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 2, Width: 64})
	for _, step := range []struct{ n, want uint64 }{{1, 1}, {3, 4}, {4, 4}, {2, 4}, {1000, 1024}, {1 << 63, 1 << 63}, {^uint64(0), 1 << 63}} {
		if _, err := c.AddN([]byte("k"), step.n); err != nil {
			t.Fatal(err)
		}
		if got := recordedWeight(&c.l); got != step.want {
			t.Errorf("after AddN(%d): weight %d, want %d", step.n, got, step.want)
		}
	}
	// Another handle on the file sees it and records past it.
	d := mustOpen(t, c.Path(), CountMinConfig{})
	d.AddN([]byte("k"), 5)
	if got := recordedWeight(&d.l); got != 1<<63 {
		t.Errorf("second handle: weight %d, want 2^63", got)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	s, err := c.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := recordedWeight(&s.l); got != 1<<63 {
		t.Errorf("snapshot after a Reset: weight %d, want 2^63", got)
	}
}

// TestCountMin_KillWeightedAdds: children adding heavy weights from four
// goroutines, killed with SIGKILL: Check says sound or torn, never damage.
func TestCountMin_KillWeightedAdds(t *testing.T) {
	requireReexec(t)
	for iter, threshold := range []uint64{1 << 30, 1 << 34, 1 << 36} {
		path := tempPath(t, "cms")
		c0 := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 10})
		ctx := childContext(t)
		h := startHelper(t, ctx, "", "weightloop", "weightloop", envs(envPath, path))
		for c0.Total() < threshold {
			select {
			case <-h.done:
				t.Fatalf("%s exited before it was killed: %v", h.name, h.err)
			case <-ctx.Done():
				t.Fatalf("Total did not reach %d: %v", threshold, ctx.Err())
			case <-time.After(time.Millisecond):
			}
		}
		h.cmd.Process.Kill()
		<-h.done
		c := mustOpen(t, path, CountMinConfig{}, WithReadOnly())
		if err := c.Check(); err != nil && (!errors.Is(err, ErrTornAdd) || errors.Is(err, ErrDamaged)) {
			t.Errorf("iteration %d: Check() = %v, want nil or ErrTornAdd", iter, err)
		}
		c.Close()
		c0.Close()
	}
}

var _ = role("weightloop", childWeightLoop)

// childWeightLoop adds weights of about 2^24 from four goroutines until
// killed.
func childWeightLoop() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{})
	if err != nil {
		return err
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			var buf []byte
			for i := uint64(0); ; i++ {
				buf = loopKey(buf[:0], i%killKeys)
				if _, err := c.AddN(buf, 1<<24+uint64(g)+i%3); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	return <-errs
}

// TestDistinct_ErrDamaged: a register past the largest rank, planted in
// a real file, is ErrDamaged to Check, and ExportRedis and a Merge of it
// refuse it, naming the file, the merge before anything changes.
func TestDistinct_ErrDamaged(t *testing.T) {
	path := tempPath(t, "hll")
	d := mustIn(t, OpenDistinct, Path(path), DistinctConfig{Redis: true})
	addRange(t, d, 0, 3000)
	if _, err := d.ExportRedis(); err != nil {
		t.Fatalf("ExportRedis before the damage: %v", err)
	}
	writeAt(t, path, regionOf(t, path)+cells.DistinctHeadBytes+100, []byte{64}) // 64 > 51
	r := mustIn(t, OpenDistinct, Path(path), DistinctConfig{}, WithReadOnly())
	for what, err := range map[string]error{"Check": r.Check(), "Check of the writer": d.Check()} {
		if !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "register 100 holds 64") {
			t.Errorf("%s: %v, want ErrDamaged naming register 100", what, err)
		}
	}
	if b, err := r.ExportRedis(); !errors.Is(err, ErrDamaged) || b != nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ExportRedis = %d bytes, %v; want ErrDamaged naming %s", len(b), err, path)
	}
	fleet := mustDistinct(t, DistinctConfig{Redis: true})
	addRange(t, fleet, 5000, 100)
	before := append([]byte(nil), registersOf(fleet)...)
	if err := fleet.Merge(r); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
		t.Errorf("Merge(damaged) = %v, want ErrDamaged naming %s", err, path)
	}
	if !bytes.Equal(registersOf(fleet), before) {
		t.Error("the refused merge changed the count's registers")
	}
	if err := fleet.Check(); err != nil {
		t.Errorf("Check after the refused merge: %v", err)
	}
}

// TestDistinctWindow_ExportErrDamaged: a covered slot's register past the
// largest rank makes the window's Redis export and its SnapshotCovered
// refuse with ErrDamaged, rather than fold it into what leaves the file.
func TestDistinctWindow_ExportErrDamaged(t *testing.T) {
	cfg := DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Redis: true}}
	w := mustIn(t, OpenDistinctWindow, Memory(), cfg)
	addRange(t, w, 0, 2000)
	if _, err := w.ExportRedis(); err != nil {
		t.Fatalf("ExportRedis before the damage: %v", err)
	}
	if s, err := w.Snapshot(Memory()); err != nil {
		t.Fatalf("Snapshot before the damage: %v", err)
	} else {
		s.Close()
	}
	for s := range w.slots {
		slotRegisters(w, s)[7] = 60 // past 51
	}
	if err := w.Check(); !errors.Is(err, ErrDamaged) {
		t.Errorf("Check = %v, want ErrDamaged", err)
	}
	if b, err := w.ExportRedis(); !errors.Is(err, ErrDamaged) || b != nil {
		t.Errorf("ExportRedis = %d bytes, %v; want ErrDamaged", len(b), err)
	}
	if s, _, err := w.SnapshotCovered(Memory()); !errors.Is(err, ErrDamaged) || s != nil {
		t.Errorf("SnapshotCovered = %v, want ErrDamaged", err)
	}
}

// TestDistinct_RedisRefusesDamaged: against a real redis-server, the
// registers of a damaged count, clamped to the largest rank as exports
// once sent them, are taken by Redis as ranks some key gave; ExportRedis
// refuses that count, so the fleet key PFMERGEd from the sound exports
// stays what the sound counts hold.
func TestDistinct_RedisRefusesDamaged(t *testing.T) {
	rc := startRedis(t)
	bad := mustDistinct(t, DistinctConfig{Redis: true})
	good := mustDistinct(t, DistinctConfig{Redis: true})
	addRange(t, bad, 0, 5000)
	addRange(t, good, 3000, 5000)
	copy(registersOf(bad)[100:], []byte{0xff, 0xff, 0xff, 0xff})
	rc.mustDo(t, "SET", "clamped", redisDense(&bad.l)) // what an export sent before
	n, err := rc.do("PFCOUNT", "clamped")
	t.Logf("PFCOUNT of the clamped damaged registers: %v, %v (Count of the sound one: %d)", n, err, good.Count())
	if _, err := bad.ExportRedis(); !errors.Is(err, ErrDamaged) {
		t.Fatalf("ExportRedis of a damaged count = %v, want ErrDamaged", err)
	}
	exp, err := good.ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	rc.mustDo(t, "SET", "good", exp)
	rc.mustDo(t, "PFMERGE", "fleet", "good")
	if got, want := rc.mustDo(t, "PFCOUNT", "fleet").(int64), int64(good.Count()); got != want {
		t.Errorf("PFCOUNT of the fleet = %d, want %d", got, want)
	}
}

// TestCountMin_SnapshotWeights: a copy that adds outran, or of a window
// (which records no weights) with a heavy add torn in a slot, gets a
// recorded weight that covers what its rows hold beyond its add count:
// its Check says torn, not damaged.
func TestCountMin_SnapshotWeights(t *testing.T) {
	for _, c := range []struct{ w, delta, want uint64 }{
		{1, 0, 1}, {1, 1, 2}, {1, maxTornAdds, 2}, {1, 3 * maxTornAdds, 4}, {8, 1, 16}, {1 << 62, 1 << 62, cells.MaxCount}, {1, ^uint64(0), 1 << 37},
	} {
		if got := copyWeight(c.w, c.delta); got != c.want {
			t.Errorf("copyWeight(%d, %d) = %d, want %d", c.w, c.delta, got, c.want)
		}
	}
	w := mustOpenWindow(t, tempPath(t, "cmw"), Window{Keep: 2}, CountMinConfig{Rows: 4, Width: 256})
	if _, err := w.AddN([]byte("heavy"), 1<<30); err != nil {
		t.Fatal(err)
	}
	slot := &w.slots[w.Current()%3]
	lo, _ := cells.Hash([]byte("torn"), slot.Seed)
	cells.AddCell((*uint64)(unsafe.Add(slot.Cells, uintptr(cells.Spread(lo)&slot.Mask)*8)), 1<<30) // row 0 only
	s, err := w.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(); !errors.Is(err, ErrTornAdd) {
		t.Errorf("Check of a window's copy with a torn heavy add = %v, want ErrTornAdd", err)
	}
}

// TestCountMin_CheckBatchesCutShort: batches cut short by Closes or kills
// each leave up to 255 adds in the rows and not in the add count (it moves
// once per 256 keys); 9000 of them, which a service restarted under load
// can leave, are torn adds, not damage. A bound of 2^20 adds called them
// damage.
func TestCountMin_CheckBatchesCutShort(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 4, Width: 1024, Seed: 3})
	key := make([]byte, 8)
	for cut := range 9000 {
		for i := range 255 { // the rows of a chunk, not its count
			binary.LittleEndian.PutUint64(key, uint64(cut*255+i))
			lo, hi := cells.Hash(key, c.l.Seed)
			c.l.AddCells(lo, hi, 1)
		}
	}
	// A key cut after its first row: the rows differ, as a kill leaves
	// them.
	lo, _ := cells.Hash([]byte("torn"), c.l.Seed)
	cells.AddCell((*uint64)(unsafe.Add(c.l.Cells, uintptr(lo&c.l.Mask)*8)), 1)
	if err := c.Check(); !errors.Is(err, ErrTornAdd) || errors.Is(err, ErrDamaged) {
		t.Errorf("Check after 9000 batches cut short = %v, want ErrTornAdd", err)
	}
}

// TestDistinct_MergeDamagedDuringMerge: a source that passed Merge's
// check and is damaged while the merge copies it (its writer is another
// process) does not plant the damaged register: the copy checks each word
// it takes, stops there with ErrDamaged, and the count stays sound. A
// register flipped between the check and the copy once reached d.
func TestDistinct_MergeDamagedDuringMerge(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{Redis: true})
	src := mustDistinct(t, DistinctConfig{Redis: true})
	addRange(t, src, 0, 3000)
	// Damaged after the check: the copy's own step.
	w := src.l.Word(9000 / 8)
	atomic.StoreUint64(w, atomic.LoadUint64(w)|0xff<<cells.RegShift(9000%8))
	var re *cells.RegisterError
	if _, err := d.l.Merge(&src.l); !errors.As(err, &re) || re.Register != 9000 || !errors.Is(registerDamage(err), ErrDamaged) {
		t.Errorf("merge of a word damaged after the check = %v, want register 9000's error, ErrDamaged as reported", err)
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check after the merge stopped: %v", err)
	}
	// Through Merge, with the register flipping while merges run.
	atomic.StoreUint64(w, atomic.LoadUint64(w)&^(0xff<<cells.RegShift(9000%8)))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			old := atomic.LoadUint64(w)
			atomic.StoreUint64(w, old|0xff<<cells.RegShift(9000%8))
			atomic.StoreUint64(w, old&^(0xff<<cells.RegShift(9000%8)))
		}
	}()
	for range raceScale(2000) {
		err := d.Merge(src)
		if err != nil && !errors.Is(err, ErrDamaged) {
			t.Fatal(err)
		}
		if j, v, bad := d.l.Damaged(); bad {
			t.Fatalf("after a merge (%v) register %d of the count holds %d", err, j, v)
		}
	}
	close(stop)
	<-done
}
