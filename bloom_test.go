package sketch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBloom_Geometry: the sizing gives the fewest blocks whose modelled
// rate at capacity is within the target, with the k that needs fewest;
// and refuses what cannot be built.
func TestBloom_Geometry(t *testing.T) {
	for _, p := range []float64{0.5, 0.1, 0.01, 0.001, 1e-4, 1e-6} {
		for _, n := range []uint64{1, 100, 12_345, 1_000_000} {
			blocks, k, err := bloomGeometry(n, p)
			if err != nil {
				t.Fatalf("bloomGeometry(%d, %v): %v", n, p, err)
			}
			if fp := bloomFP(float64(n)/float64(blocks), k); fp > p {
				t.Errorf("bloomGeometry(%d, %v) = %d blocks, k %d: modelled rate %v, over the target", n, p, blocks, k, fp)
			}
			if blocks > 1 {
				if fp := bloomFP(float64(n)/float64(blocks-1), k); fp <= p {
					t.Errorf("bloomGeometry(%d, %v) = %d blocks, k %d: %d blocks would do (%v)", n, p, blocks, k, blocks-1, fp)
				}
			}
			for _, other := range []int{k - 1, k + 1} {
				if other < 1 {
					continue
				}
				if load := bloomLoad(p, other); n >= 100_000 && math.Ceil(float64(n)/load) < float64(blocks) {
					t.Errorf("bloomGeometry(%d, %v): k %d needs %d blocks, k %d only %.0f", n, p, k, blocks, other, math.Ceil(float64(n)/load))
				}
			}
		}
	}
	// The trade against a classic filter (bits a key, -log2(p)/ln 2):
	// blocked needs a few percent more down to 0.001, 15% at 1e-4.
	for _, tc := range []struct{ p, most float64 }{{0.1, 1.02}, {0.01, 1.04}, {0.001, 1.08}, {1e-4, 1.15}} {
		_, load := bloomRateGeometry(tc.p)
		ratio := 512 / load / (-math.Log2(tc.p) / math.Ln2)
		t.Logf("rate %v: %.2f bits a key, %.3fx a classic filter's", tc.p, 512/load, ratio)
		if ratio > tc.most {
			t.Errorf("rate %v: %.3fx the bits of a classic filter, want at most %.2fx", tc.p, ratio, tc.most)
		}
	}
	for _, tc := range []struct {
		n uint64
		p float64
	}{{0, 0.01}, {10, 0}, {10, 1}, {10, -0.5}, {10, math.NaN()}, {1 << 62, 0.01}} {
		if _, _, err := bloomGeometry(tc.n, tc.p); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("bloomGeometry(%d, %v) = %v, want ErrInvalidConfig", tc.n, tc.p, err)
		}
	}
	for _, cfg := range []BloomConfig{{}, {FPRate: 0.01}, {Capacity: 10, FPRate: 2}, {Capacity: 10, FPRate: -1}} {
		if _, err := OpenBloom(Memory(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewBloom(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// bloomFill adds keys prefix-0 .. prefix-(n-1) in batches through core.
func bloomFill(t testing.TB, b *Bloom, prefix string, from, to int) {
	t.Helper()
	keys := make([][]byte, 0, 1024)
	for i := from; i < to; i++ {
		keys = append(keys, bloomKey(prefix, i))
		if len(keys) == cap(keys) || i == to-1 {
			if err := b.AddBatch(keys, nil); err != nil {
				t.Fatal(err)
			}
			keys = keys[:0]
		}
	}
}

// bloomRate checks probes keys never added and returns the share found.
func bloomRate(b *Bloom, probes int) float64 {
	keys := make([][]byte, 1024)
	for j := range keys {
		keys[j] = make([]byte, 0, 24)
	}
	out := make([]bool, len(keys))
	fp := 0
	for base := 0; base < probes; base += len(keys) {
		n := min(len(keys), probes-base)
		for j := range n {
			keys[j] = strconv.AppendInt(append(keys[j][:0], "absent-"...), int64(base+j), 10)
		}
		b.ContainsBatch(keys[:n], out[:n])
		for _, f := range out[:n] {
			if f {
				fp++
			}
		}
	}
	return float64(fp) / float64(probes)
}

// TestBloom_FalsePositives: at capacity no key added is missing and the
// observed rate is within 1.2x of the target, for targets 0.1 to 1e-4
// (fixed seeds; enough probes that the target expects 400 false
// positives); the rate at twice the capacity is logged. Each core adds;
// the default core checks (the parity suite shows the cores' bits equal).
func TestBloom_FalsePositives(t *testing.T) {
	for _, tc := range []struct {
		p float64
		n int
	}{{0.1, 20_000}, {0.01, 50_000}, {0.001, 20_000}, {1e-4, 20_000}} {
		for i, core := range bloomCores() {
			t.Run(fmt.Sprintf("%v/%s", tc.p, core.Name()), func(t *testing.T) {
				b := mustBloom(t, BloomConfig{Capacity: uint64(tc.n), FPRate: tc.p, Seed: 0xb100})
				b.core, b.l.Prefetch = core, true // every batch through core
				bloomFill(t, b, "in", 0, tc.n)
				for i := range tc.n {
					if k := bloomKey("in", i); !b.Contains(k) {
						t.Fatalf("Check(%q) = false for a key added", k)
					}
				}
				if i > 0 {
					return
				}
				b.core = buildCores.Bloom
				probes := int(400 / tc.p)
				rate := bloomRate(b, probes)
				st := b.Stats()
				t.Logf("rate %v, %d keys in %d bits, k %d: observed %.3g at capacity (%.2fx), fill %.3f", tc.p, tc.n, st.Bits, st.Hashes, rate, rate/tc.p, st.Fill)
				if rate > 1.2*tc.p {
					t.Errorf("observed rate %.3g at capacity, more than 1.2x the target %v", rate, tc.p)
				}
				if math.Abs(st.Estimated-float64(tc.n)) > 0.03*float64(tc.n) {
					t.Errorf("Stats().Estimated = %.0f, want within 3%% of %d", st.Estimated, tc.n)
				}
				bloomFill(t, b, "in", tc.n, 2*tc.n)
				rate2 := bloomRate(b, probes/4)
				t.Logf("rate %v: observed %.3g at twice the capacity (%.1fx the target), fill %.3f", tc.p, rate2, rate2/tc.p, b.Stats().Fill)
			})
		}
	}
}

// TestBloom_Already: Add's answer is exact in one process, against the
// model: true exactly when every bit of the key was set before the call,
// whoever set them.
func TestBloom_Already(t *testing.T) {
	cfg := BloomConfig{Capacity: 2000, FPRate: 0.05, Seed: 5}
	b := mustBloom(t, cfg)
	ref := newRefBloom(b.l.Blocks, b.l.K, cfg.Seed)
	// A key whose bits other keys set: a false positive of the model,
	// never added itself.
	for i := range 2000 {
		ref.add(bloomKey("fill", i))
	}
	bloomFill(t, b, "fill", 0, 2000)
	var crafted []byte
	for i := 0; crafted == nil; i++ {
		if k := bloomKey("crafted", i); ref.check(k) {
			crafted = k
		}
	}
	if already, err := b.Add(crafted); !already || err != nil {
		t.Errorf("Add(%q), whose bits other keys set = %v, %v, want true", crafted, already, err)
	}
	ref.add(crafted)
	// A key with some bits set and some not: new.
	var partial []byte
	for i := 0; partial == nil; i++ {
		k := bloomKey("partial", i)
		some := false
		for _, p := range ref.probes(k) {
			some = some || ref.bit[p]
		}
		if some && !ref.check(k) {
			partial = k
		}
	}
	if already, _ := b.Add(partial); already {
		t.Errorf("Add(%q), some of whose bits were clear = true, want false", partial)
	}
	if already, _ := b.Add(partial); !already {
		t.Errorf("second Add(%q) = false, want true", partial)
	}
	ref.add(partial)
	ref.add(partial)
	// A batch that holds a new key twice: the second is already.
	var dup []byte
	for i := 0; dup == nil; i++ {
		if k := bloomKey("dup", i); !ref.check(k) {
			dup = k
		}
	}
	keys := [][]byte{dup, bloomKey("other", 0), dup}
	got := make([]bool, 3)
	if err := b.AddBatch(keys, got); err != nil || !got[2] || got[0] {
		t.Errorf("AddBatch(%q, other-0, %q) = %v, %v, want [false _ true]", dup, dup, got, err)
	}
	for _, k := range keys {
		ref.add(k)
	}
	// Everything else, mixed with repeats, against the model.
	for i := range 3000 {
		k := bloomKey("mix", i%1700)
		want := ref.add(k)
		if got, err := b.Add(k); got != want || err != nil {
			t.Fatalf("Add(%q) = %v, %v, model says %v", k, got, err, want)
		}
	}
	st := b.Stats()
	if st.Adds != ref.added+ref.seen || st.AddsPresent != ref.seen || st.Set != ref.set() {
		t.Errorf("Stats() = %d adds, %d present, %d set; model %d, %d, %d", st.Adds, st.AddsPresent, st.Set, ref.added+ref.seen, ref.seen, ref.set())
	}
	if st.Adds != 2000+1+2+3+3000 {
		t.Errorf("Added + Seen = %d, want every add: %d", st.Adds, 2000+1+2+3+3000)
	}
}

// TestBloom_StatsResetClose: Stats against what was added, Reset forgets
// everything, and a closed handle reads as full, answers true, and refuses
// to add.
func TestBloom_StatsResetClose(t *testing.T) {
	b := mustBloom(t, BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 3})
	if _, err := b.AddString("a"); err != nil {
		t.Fatal(err)
	}
	b.AddString("a")
	st := b.Stats()
	want := BloomStats{Bits: b.Bits(), Hashes: b.Hashes(), Capacity: 1000, FPRate: 0.01, Set: st.Set,
		Fill: float64(st.Set) / float64(b.Bits()), Estimated: st.Estimated, Adds: 2, AddsPresent: 1, FileStats: FileStats{Bytes: st.Bytes}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
	if st.Set < 1 || st.Set > uint64(b.Hashes()) || math.Abs(st.Estimated-1) > 0.1 || st.Bytes == 0 {
		t.Errorf("Stats() after one key = %+v", st)
	}
	js, err := json.Marshal(st)
	if err != nil || !bytes.Contains(js, []byte(`"fill":`)) || !bytes.Contains(js, []byte(`"estimated":`)) {
		t.Errorf("json.Marshal(Stats()) = %s, %v", js, err)
	}
	if v := b.StatsVar().String(); !strings.Contains(v, `"adds_present":1`) {
		t.Errorf("StatsVar().String() = %s", v)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if b.ContainsString("a") {
		t.Error("Check(a) = true after Reset")
	}
	if st := b.Stats(); st.Set != 0 || st.Adds != 0 || st.AddsPresent != 0 || st.Estimated != 0 {
		t.Errorf("Stats() after Reset = %+v", st)
	}
	b.AddString("b")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := b.AddString("c"); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	for name, err := range map[string]error{"AddBatch": b.AddBatch([][]byte{[]byte("c")}, nil), "Reset": b.Reset(), "Freeze": b.Freeze(), "Merge": b.Merge()} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if !b.ContainsString("never") || !b.Contains([]byte("never")) {
		t.Error("Check after Close = false, want true (a closed handle never claims absence)")
	}
	out := []bool{false, false}
	b.ContainsBatch([][]byte{[]byte("x"), []byte("y")}, out)
	if !out[0] || !out[1] {
		t.Errorf("CheckBatch after Close = %v, want all true", out)
	}
	if st := b.Stats(); !st.Closed || st.Fill != 1 || st.Set != st.Bits || st.Estimated != math.MaxFloat64 {
		t.Errorf("Stats() after Close = %+v, want closed and full", st)
	}
	var zero Bloom
	if _, err := zero.Add([]byte("x")); !errors.Is(err, ErrClosed) || !zero.Contains([]byte("x")) || !zero.Stats().Closed {
		t.Errorf("zero Bloom: Add = %v, Check = %v, Stats = %+v", err, zero.Contains([]byte("x")), zero.Stats())
	}
}

// TestBloom_Merge: the union of filters, byte for byte what one filter fed
// everything holds; other shapes and seeds are refused before anything
// changes.
func TestBloom_Merge(t *testing.T) {
	cfg := BloomConfig{Capacity: 4000, FPRate: 0.01, Seed: 21}
	parts := make([]*Bloom, 3)
	all := mustBloom(t, cfg)
	for i := range parts {
		parts[i] = mustBloom(t, cfg)
		bloomFill(t, parts[i], fmt.Sprintf("part%d", i), 0, 1000)
		bloomFill(t, all, fmt.Sprintf("part%d", i), 0, 1000)
	}
	dst := mustBloom(t, cfg)
	bloomFill(t, dst, "part0", 0, 500)
	if err := dst.Merge(parts...); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bloomBits(dst), bloomBits(all)) {
		t.Error("merged bits differ from one filter fed everything")
	}
	if st := dst.Stats(); st.Adds != 500 {
		t.Errorf("Merge changed the counts: %+v", st)
	}
	before := bytes.Clone(bloomBits(dst))
	for _, other := range []BloomConfig{
		{Capacity: 8000, FPRate: 0.01, Seed: 21},
		{Capacity: 4000, FPRate: 0.001, Seed: 21},
		{Capacity: 4000, FPRate: 0.01, Seed: 22},
	} {
		o := mustBloom(t, other)
		o.AddString("o")
		if err := dst.Merge(parts[0], o); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Merge of %+v = %v, want ErrIncompatible", other, err)
		}
	}
	closed := mustBloom(t, cfg)
	closed.Close()
	if err := dst.Merge(closed); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Merge of a closed filter = %v, want ErrInvalidArgument", err)
	}
	if err := dst.Merge(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Merge(nil) = %v, want ErrInvalidArgument", err)
	}
	if !bytes.Equal(bloomBits(dst), before) {
		t.Error("a refused Merge changed the bits")
	}
	if err := dst.Merge(dst); err != nil || !bytes.Equal(bloomBits(dst), before) {
		t.Errorf("Merge(itself) = %v, or changed the bits", err)
	}
	if err := parts[0].Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := parts[0].Merge(parts[1]); !errors.Is(err, ErrFrozen) {
		t.Errorf("Merge into a frozen filter = %v, want ErrFrozen", err)
	}
	fresh := mustBloom(t, cfg)
	if err := fresh.Merge(parts[0]); err != nil || !fresh.Contains(bloomKey("part0", 7)) {
		t.Errorf("Merge of a frozen filter = %v", err)
	}
}

// TestBloom_String: no seed in any format.
func TestBloom_String(t *testing.T) {
	const seed = 0x1234567890abcdef
	b := mustBloom(t, BloomConfig{Capacity: 100, Seed: seed})
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		s := fmt.Sprintf(f, b)
		if strings.Contains(s, "1234567890") || strings.Contains(s, fmt.Sprint(uint64(seed))) {
			t.Errorf("Sprintf(%q) = %s shows the seed", f, s)
		}
	}
	if s := b.String(); !strings.Contains(s, "sketch.Bloom(") || !strings.Contains(s, "hashes") {
		t.Errorf("String() = %s", s)
	}
}

// TestBloom_Allocs: the hot paths allocate nothing, on every core, in
// cache and fetching ahead.
func TestBloom_Allocs(t *testing.T) {
	keys := make([][]byte, 600)
	for i := range keys {
		keys[i] = bloomKey("allocs", i)
	}
	out := make([]bool, len(keys))
	b := mustBloom(t, BloomConfig{Capacity: 1000, Seed: 1})
	key, skey := keys[3], string(keys[3])
	for _, core := range bloomCores() {
		for _, ahead := range []bool{false, true} {
			b.core, b.l.Prefetch = core, ahead
			for _, tc := range []struct {
				name string
				f    func()
			}{
				{"Add", func() { b.Add(key) }},
				{"AddString", func() { b.AddString(skey) }},
				{"Check", func() { b.Contains(key) }},
				{"CheckString", func() { b.ContainsString(skey) }},
				{"AddBatch", func() { b.AddBatch(keys, nil) }},
				{"AddBatch/already", func() { b.AddBatch(keys, out) }},
				{"AddBatch/5", func() { b.AddBatch(keys[:5], out[:5]) }},
				{"CheckBatch", func() { b.ContainsBatch(keys, out) }},
			} {
				if n := testing.AllocsPerRun(100, tc.f); n != 0 {
					t.Errorf("%s/ahead=%v: %s allocates %.1f times a call", core.Name(), ahead, tc.name, n)
				}
			}
		}
	}
}

// TestBloom_BadArguments: a wrong-length answer slice is refused, a short
// out slice answers what it can hold.
func TestBloom_BadArguments(t *testing.T) {
	b := mustBloom(t, BloomConfig{Capacity: 100, Seed: 1})
	keys := [][]byte{[]byte("a"), []byte("b")}
	if err := b.AddBatch(keys, make([]bool, 1)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("AddBatch with 1 answer for 2 keys = %v, want ErrInvalidArgument", err)
	}
	if b.ContainsString("a") {
		t.Error("a refused AddBatch added keys")
	}
	b.AddBatch(keys, nil)
	for _, out := range [][]bool{make([]bool, 1), make([]bool, 5)} {
		if err := b.ContainsBatch(keys, out); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ContainsBatch with %d answers for 2 keys = %v, want ErrInvalidArgument", len(out), err)
		}
	}
	out := make([]bool, 2)
	if err := b.ContainsBatch(keys, out); err != nil || !out[0] || !out[1] {
		t.Errorf("ContainsBatch = %v, %v, want both present", out, err)
	}
	if err := b.AddBatch(nil, nil); err != nil {
		t.Errorf("AddBatch(nil) = %v", err)
	}
}

// TestBloom_ExportBits: bit i of the export is bit i%8 of byte i/8 (the
// filter's words read little-endian, whatever the machine's order); hosts'
// exports ORed by a real Redis (BITOP OR) merge back with MergeBits into
// the filter of every host's keys, byte for byte what Merge makes, and
// merging again changes nothing.
func TestBloom_ExportBits(t *testing.T) {
	rc := startRedis(t)
	cfg := BloomConfig{Capacity: 20_000, FPRate: 0.01, Seed: 0xb175}
	const hosts = 3
	union := mustBloom(t, cfg)
	var all []*Bloom
	for h := range hosts {
		b := mustBloom(t, cfg)
		for i := h * 3000; i < h*3000+5000; i++ {
			b.AddString(fmt.Sprint("key-", i))
		}
		bits, err := b.ExportBits()
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(bits))*8 != b.Bits() {
			t.Fatalf("export of %d bytes for %d bits", len(bits), b.Bits())
		}
		for w := uint64(0); w < b.l.Nwords(); w++ {
			if got, want := binary.LittleEndian.Uint64(bits[w*8:]), *b.l.Word(w); got != want {
				t.Fatalf("export word %d read little-endian = %#x, the filter's word %#x", w, got, want)
			}
		}
		rc.mustDo(t, "SET", fmt.Sprint("host", h), bits)
		rc.mustDo(t, "BITOP", "OR", "fleet", "fleet", fmt.Sprint("host", h))
		if err := union.Merge(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
	}
	fleet := []byte(rc.mustDo(t, "GET", "fleet").(string))
	for h, b := range all {
		if err := b.MergeBits(fleet); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bloomBits(b), bloomBits(union)) {
			t.Errorf("host %d after merging the fleet's bits: not the bits of every host's keys", h)
		}
		for i := 0; i < (hosts-1)*3000+5000; i++ {
			if !b.ContainsString(fmt.Sprint("key-", i)) {
				t.Fatalf("host %d: key-%d, added on another host, not found after MergeBits", h, i)
			}
		}
		before := bytes.Clone(bloomBits(b))
		if err := b.MergeBits(fleet); err != nil || !bytes.Equal(bloomBits(b), before) {
			t.Errorf("merging the same bits again: %v, bits changed: %v", err, !bytes.Equal(bloomBits(b), before))
		}
	}
	// Redis's GETBIT finds the filter's bit i where the doc says: in the
	// fleet's key, every host's bits, which the filters now hold.
	b := all[0]
	for i := range b.Bits() {
		if i%997 != 0 && i >= 130 && i < b.Bits()-130 {
			continue // a sample: one round trip a bit
		}
		want := *b.l.Word(i / 64)>>(i%64)&1 == 1
		if got := rc.mustDo(t, "GETBIT", "fleet", i/8*8+7-i%8).(int64) == 1; got != want {
			t.Errorf("GETBIT fleet %d = %v, the filter's bit %d = %v", i/8*8+7-i%8, got, i, want)
		}
	}
}

// TestBloom_MergeBitsRefuses: bits of another length are ErrIncompatible
// and change nothing; a read-only, frozen or closed filter merges nothing.
func TestBloom_MergeBitsRefuses(t *testing.T) {
	cfg := BloomConfig{Capacity: 1000, FPRate: 0.01}
	b := mustBloom(t, cfg)
	bits, _ := b.ExportBits()
	for i := range bits {
		bits[i] = 0xff
	}
	for _, n := range []int{0, 1, len(bits) - 8, len(bits) + 8} {
		long := append(bytes.Clone(bits), make([]byte, max(0, n-len(bits)))...)
		if err := b.MergeBits(long[:n]); !errors.Is(err, ErrIncompatible) {
			t.Errorf("MergeBits of %d bytes for %d = %v, want ErrIncompatible", n, len(bits), err)
		}
	}
	if s := b.Stats(); s.Set != 0 {
		t.Errorf("%d bits set after refused merges", s.Set)
	}
	path := filepath.Join(t.TempDir(), "b")
	w := mustIn(t, OpenBloom, Path(path), cfg)
	ro := mustIn(t, OpenBloom, Path(path), BloomConfig{}, WithReadOnly())
	other := mustIn(t, OpenBloom, Path(path), BloomConfig{})
	if err := ro.MergeBits(bits); !errors.Is(err, ErrReadOnly) {
		t.Errorf("MergeBits on a read-only handle = %v, want ErrReadOnly", err)
	}
	if _, err := ro.ExportBits(); err != nil {
		t.Errorf("ExportBits on a read-only handle = %v", err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := other.MergeBits(bits); !errors.Is(err, ErrFrozen) {
		t.Errorf("MergeBits on a frozen file = %v, want ErrFrozen", err)
	}
	w.Close()
	if err := w.MergeBits(bits); !errors.Is(err, ErrClosed) {
		t.Errorf("MergeBits after Close = %v, want ErrClosed", err)
	}
	if _, err := w.ExportBits(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportBits after Close = %v, want ErrClosed", err)
	}
	var zero Bloom
	if _, err := zero.ExportBits(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportBits of a zero Bloom = %v, want ErrClosed", err)
	}
	if err := zero.MergeBits(bits); !errors.Is(err, ErrClosed) {
		t.Errorf("MergeBits of a zero Bloom = %v, want ErrClosed", err)
	}
}
