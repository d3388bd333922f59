package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
)

// distinctKey is key i of the distinct tests' family.
func distinctKey(i int) []byte { return []byte(fmt.Sprintf("client-%d", i)) }

// mustDistinct is a distinct count in memory for the test.
func mustDistinct(t testing.TB, cfg DistinctConfig) *Distinct {
	t.Helper()
	return mustIn(t, OpenDistinct, Memory(), cfg)
}

// registersOf is d's register array, as the file holds it.
func registersOf(d *Distinct) []byte { return d.m.entryBytes()[cells.DistinctHeadBytes:] }

// distinctAdder is what distinctAddKeys adds through: a Distinct or a
// DistinctWindow.
type distinctAdder interface {
	Add([]byte) error
	AddString(string) error
	AddBatch([][]byte) error
}

// addRange adds keys first .. first+n-1 (distinctAddKeys).
func addRange(t testing.TB, d distinctAdder, first, n int) {
	t.Helper()
	if err := distinctAddKeys(d, first, n); err != nil {
		t.Fatal(err)
	}
}

// distinctAddKeys adds keys first .. first+n-1 the even
// ones one by one (every fourth as a string), the odd ones in batches.
func distinctAddKeys(d distinctAdder, first, n int) error {
	var batch [][]byte
	for i := first; i < first+n; i++ {
		var err error
		switch {
		case i%4 == 0:
			err = d.AddString(string(distinctKey(i)))
		case i%2 == 0:
			err = d.Add(distinctKey(i))
		default:
			batch = append(batch, distinctKey(i))
			if len(batch) == 100 {
				err = d.AddBatch(batch)
				batch = batch[:0]
			}
		}
		if err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
	}
	return d.AddBatch(batch)
}

func TestDistinctConfig_Precision(t *testing.T) {
	for _, c := range []struct {
		cfg  DistinctConfig
		want int
	}{
		{DistinctConfig{}, 14},
		{DistinctConfig{Precision: 4}, 4},
		{DistinctConfig{Precision: 18}, 18},
		{DistinctConfig{Error: 0.0082}, 14}, // 1.04/128 = 0.0081
		{DistinctConfig{Error: 0.008}, 15},
		{DistinctConfig{Error: 0.02}, 12}, // 1.04/64 = 0.01625
		{DistinctConfig{Error: 0.5}, 4},
		{DistinctConfig{Redis: true}, 14},
		{DistinctConfig{Redis: true, Precision: 14}, 14},
	} {
		d := mustDistinct(t, c.cfg)
		if got := d.Config().Precision; got != c.want {
			t.Errorf("%+v: precision %d, want %d", c.cfg, got, c.want)
		}
		if got, want := d.Config().Redis, c.cfg.Redis; got != want {
			t.Errorf("%+v: Redis %v, want %v", c.cfg, got, want)
		}
		if got, want := len(registersOf(d)), 1<<c.want; got != want {
			t.Errorf("%+v: %d registers, want %d", c.cfg, got, want)
		}
		if n, err := c.cfg.Bytes(); err != nil || n != d.Stats().Bytes {
			t.Errorf("%+v: Bytes() = %d, %v; the file has %d", c.cfg, n, err, d.Stats().Bytes)
		}
	}
	for _, cfg := range []DistinctConfig{
		{Precision: 3}, {Precision: 19}, {Precision: -1}, {Error: 1}, {Error: -0.1}, {Error: 0.001},
		{Error: 0.01, Precision: 12}, {Redis: true, Precision: 12}, {Redis: true, Error: 0.001},
	} {
		if _, err := OpenDistinct(Memory(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenDistinct(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestDistinct_Accuracy: the count against the exact count of distinct
// keys, from 10 to a million (100,000 under the race detector), at three
// precisions: each within 4 standard errors (one run per point, fixed
// seeds), and their mean error within
// what the standard error allows of an unbiased estimator (no bias where
// plain HyperLogLog has one, from about 2.5·m down).
func TestDistinct_Accuracy(t *testing.T) {
	ns := []int{10, 100, 1000, 3000, 10_000, 40_000, 100_000, 1_000_000}
	if testing.Short() || raceEnabled {
		ns = ns[:6]
	}
	for _, p := range []int{10, 12, 14} {
		var sum, sumSq float64
		for i, n := range ns {
			d := mustDistinct(t, DistinctConfig{Precision: p, Seed: uint64(100*p + i + 1)})
			addRange(t, d, 0, n)
			got := d.Count()
			rel := (float64(got) - float64(n)) / float64(n)
			sigma := d.StdError()
			t.Logf("p=%d n=%d: count %d, error %+.3f%% (%.2f σ)", p, n, got, 100*rel, rel/sigma)
			// A few keys are counted exactly but for keys sharing a
			// register: one key off is allowed there.
			if math.Abs(rel) > 4*sigma+1/float64(n) {
				t.Errorf("p=%d: Count() = %d for %d distinct keys, error %.2f%%, more than 4σ (%.2f%%)", p, got, n, 100*rel, 400*sigma)
			}
			sum += rel
			sumSq += rel * rel
		}
		k := float64(len(ns))
		if mean := sum / k; math.Abs(mean) > 3*d14Sigma(p)/math.Sqrt(k) {
			t.Errorf("p=%d: mean error %+.3f%% over %d counts: biased", p, 100*mean, len(ns))
		}
		if rms := math.Sqrt(sumSq / k); rms > 2*d14Sigma(p) {
			t.Errorf("p=%d: RMS error %.3f%%, more than twice the standard error %.3f%%", p, 100*rms, 100*d14Sigma(p))
		}
	}
}

// d14Sigma is the standard error at precision p, for the tests.
func d14Sigma(p int) float64 { return distinctStdError(uint(p)) }

// TestDistinct_Small: the count of a few keys is the number of registers
// they set at precision 14 (the estimator is unbiased down to zero: no
// step where plain HyperLogLog switches to linear counting), which is
// the number of keys but for keys sharing a register; repeats change
// nothing.
func TestDistinct_Small(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{Seed: 1}) // a fixed seed: under a random one about 1 run in 300 puts two of the 50 keys in one register
	if got := d.Count(); got != 0 {
		t.Fatalf("Count() of an empty count = %d", got)
	}
	for n := 1; n <= 50; n++ {
		if err := d.Add(distinctKey(n)); err != nil {
			t.Fatal(err)
		}
		before := bytes.Clone(registersOf(d))
		if err := d.AddString(string(distinctKey(n))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, registersOf(d)) {
			t.Fatalf("adding key %d again changed the registers", n)
		}
		set := uint64(len(registersOf(d))) - uint64(bytes.Count(registersOf(d), []byte{0}))
		if got := d.Count(); got != set || set+1 < uint64(n) {
			t.Errorf("Count() = %d after %d distinct keys setting %d registers", got, n, set)
		}
	}
}

// TestDistinct_CountCached: Count walks the registers only after a change
// count moved. A register written behind the library's back (no change
// counted) is not seen by a handle that cached, and is by a new handle.
func TestDistinct_CountCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hll")
	d := mustIn(t, OpenDistinct, Path(path), DistinctConfig{Precision: 10})
	addRange(t, d, 0, 500)
	first := d.Count()
	if allocs := testing.AllocsPerRun(100, func() { d.Count() }); allocs != 0 {
		t.Errorf("a cached Count allocates %v times", allocs)
	}
	regs := registersOf(d)
	for j := range regs {
		if regs[j] == 0 {
			regs[j] = 5 // behind the library's back: no change counted
		}
	}
	if got := d.Count(); got != first {
		t.Errorf("Count() = %d after a write that counted no change, want the cached %d", got, first)
	}
	other := mustIn(t, OpenDistinct, Path(path), DistinctConfig{})
	if got := other.Count(); got <= first {
		t.Errorf("a new handle's Count() = %d, want more than %d: it walks the registers", got, first)
	}
	// A counted change reaches the first handle too.
	for i := 500; ; i++ {
		before := d.Stats().RegisterChanges
		if err := other.Add(distinctKey(i)); err != nil {
			t.Fatal(err)
		}
		if d.Stats().RegisterChanges != before {
			break
		}
	}
	if got, want := d.Count(), other.Count(); got != want {
		t.Errorf("after a change, Count() = %d, the other handle's %d", got, want)
	}
}

// TestDistinct_Merge: merging counts of overlapping sets gives, register
// for register, the count of one that saw every key; incompatible counts
// are refused before anything changes.
func TestDistinct_Merge(t *testing.T) {
	cfg := DistinctConfig{Precision: 12, Seed: 7}
	all := mustDistinct(t, cfg)
	addRange(t, all, 0, 40_000)
	parts := make([]*Distinct, 3)
	for i := range parts {
		parts[i] = mustDistinct(t, cfg)
		addRange(t, parts[i], i*10_000, 20_000) // overlapping ranges
	}
	dst := mustDistinct(t, cfg)
	if err := dst.Merge(parts...); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(registersOf(dst), registersOf(all)) {
		t.Error("the merge of the parts' registers differs from the registers of one count of every key")
	}
	if got, want := dst.Count(), all.Count(); got != want {
		t.Errorf("merged Count() = %d, want %d", got, want)
	}
	if err := dst.Merge(dst, parts[0]); err != nil {
		t.Errorf("merging itself and a part again: %v", err)
	}
	if !bytes.Equal(registersOf(dst), registersOf(all)) {
		t.Error("merging again changed the registers")
	}

	before := bytes.Clone(registersOf(parts[0]))
	for _, other := range []DistinctConfig{{Precision: 11, Seed: 7}, {Precision: 12, Seed: 8}, {Redis: true}} {
		o := mustDistinct(t, other)
		o.AddString("x")
		if err := parts[0].Merge(parts[1], o); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Merge with %+v = %v, want ErrIncompatible", other, err)
		}
	}
	if !bytes.Equal(before, registersOf(parts[0])) {
		t.Error("a refused merge changed the registers")
	}

	// Redis profile: the seed does not matter, the hash is Redis's.
	r1, r2 := mustDistinct(t, DistinctConfig{Redis: true, Seed: 1}), mustDistinct(t, DistinctConfig{Redis: true, Seed: 2})
	r2.AddString("y")
	if err := r1.Merge(r2); err != nil {
		t.Errorf("merging Redis-profile counts of different seeds: %v", err)
	}
}

// TestDistinct_States: Reset, Freeze, read-only views and Close do what
// every kind's do.
func TestDistinct_States(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hll")
	d := mustIn(t, OpenDistinct, Path(path), DistinctConfig{Precision: 8})
	addRange(t, d, 0, 100)
	if err := d.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := d.Count(); got != 0 {
		t.Errorf("Count() = %d after Reset", got)
	}
	if !bytes.Equal(registersOf(d), make([]byte, 256)) {
		t.Error("Reset left registers set")
	}
	addRange(t, d, 0, 100)
	want := d.Count()

	ro := mustIn(t, OpenDistinct, Path(path), DistinctConfig{}, WithReadOnly())
	if err := ro.AddString("z"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Add = %v, want ErrReadOnly", err)
	}
	if got := ro.Count(); got != want {
		t.Errorf("read-only Count() = %d, want %d", got, want)
	}
	if _, err := OpenDistinct(Path(path), DistinctConfig{Precision: 9}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("open with another precision = %v, want ErrIncompatible", err)
	}
	if _, err := OpenDistinct(Path(path), DistinctConfig{Redis: true}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("open in the Redis profile = %v, want ErrIncompatible", err)
	}
	if err := d.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := d.AddString("z"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Add after Freeze = %v, want ErrFrozen", err)
	}
	if err := ro.Reset(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Reset = %v, want ErrReadOnly", err)
	}
	if _, err := OpenDistinct(Path(path), DistinctConfig{}); !errors.Is(err, ErrFrozen) {
		t.Errorf("read-write open of a frozen file = %v, want ErrFrozen", err)
	}
	dst := mustDistinct(t, DistinctConfig{Precision: 8, Seed: d.Seed()})
	if err := dst.Merge(ro); err != nil {
		t.Fatalf("merging a frozen read-only count: %v", err)
	}
	if got := dst.Count(); got != want {
		t.Errorf("Count() of the merge of a frozen copy = %d, want %d", got, want)
	}
	ro.Close()
	if err := ro.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := ro.Count(); got != 0 {
		t.Errorf("closed Count() = %d, want 0", got)
	}
	if err := dst.Merge(ro); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("merging a closed count = %v, want ErrInvalidArgument", err)
	}
	if st := ro.Stats(); !st.Closed {
		t.Errorf("closed Stats() = %+v", st)
	}
}

// TestDistinct_Arena: counts live in an arena beside other kinds, and
// attach by name with the zero config.
func TestDistinct_Arena(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arena")
	a := mustOpenArena(t, path, 1<<20)
	d := mustIn(t, OpenDistinct, a.Place("clients"), DistinctConfig{Redis: true})
	b := mustIn(t, OpenBloom, a.Place("seen"), BloomConfig{Capacity: 1000})
	b.AddString("x")
	addRange(t, d, 0, 5000)
	again := mustIn(t, OpenDistinct, a.Place("clients"), DistinctConfig{})
	if got, want := again.Count(), d.Count(); got != want {
		t.Errorf("attached Count() = %d, want %d", got, want)
	}
	if !again.Config().Redis {
		t.Error("attached config lost the Redis profile")
	}
	if _, err := OpenDistinct(a.Place("seen"), DistinctConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("a Bloom filter opened as a distinct count = %v, want ErrIncompatible", err)
	}
	var found bool
	for _, e := range a.List() {
		if e.Name == "clients" {
			found = e.Kind == KindDistinct
		}
	}
	if !found {
		t.Errorf("List() = %+v, want clients as %s", a.List(), KindDistinct)
	}
}

// TestDistinct_AddsAllocateNothing: the hot paths allocate nothing.
func TestDistinct_AddsAllocateNothing(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{})
	key := []byte("key")
	keys := [][]byte{key, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"), []byte("g"), []byte("h")}
	for name, f := range map[string]func(){
		"Add":       func() { d.Add(key) },
		"AddString": func() { d.AddString("key") },
		"AddBatch":  func() { d.AddBatch(keys) },
	} {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s allocates %v times", name, allocs)
		}
	}
}

// TestDistinct_Check: a register past the largest rank of its precision
// is damage to Check; a sound count checks clean.
func TestDistinct_Check(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{Precision: 10})
	for i := range 5000 {
		d.AddString(fmt.Sprint("k", i))
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check of a sound count: %v", err)
	}
	w := d.l.Word(3)
	atomic.StoreUint64(w, atomic.LoadUint64(w)|uint64(0xff)<<cells.RegShift(2))
	if err := d.Check(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "register 26 holds 255") {
		t.Errorf("Check with a register at 255: %v, want ErrCorrupt naming register 26", err)
	}
}

// The Redis profile against a real redis-server (startRedis, in
// helpers_test.go): exports load with SET, count with PFCOUNT and merge with
// PFMERGE as Redis's own HyperLogLogs do, and their registers are those
// PFADD sets for the same keys.

// redisKeys are n client keys from first, as Redis PFADD takes them.
func redisKeys(first, n int) []any {
	keys := make([]any, n)
	for i := range keys {
		keys[i] = distinctKey(first + i)
	}
	return keys
}

// TestDistinct_RedisRegisters: a Redis-profile count and Redis's PFADD of
// the same keys hold the same registers: the export is, byte for byte
// after the header, what PFMERGE makes of the PFADDed key; and Redis
// counts the export as Count does.
func TestDistinct_RedisRegisters(t *testing.T) {
	rc := startRedis(t)
	d := mustDistinct(t, DistinctConfig{Redis: true})
	const n = 30_000
	addRange(t, d, 0, n)
	for i := 0; i < n; i += 1000 {
		rc.mustDo(t, append([]any{"PFADD", "added"}, redisKeys(i, 1000)...)...)
	}
	rc.mustDo(t, "PFMERGE", "dense", "added") // PFMERGE writes the dense encoding
	dense := []byte(rc.mustDo(t, "GET", "dense").(string))
	exp, err := d.ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) != len(dense) || !bytes.Equal(exp[:5], dense[:5]) {
		t.Fatalf("export of %d bytes starting %q, Redis's dense HyperLogLog %d starting %q", len(exp), exp[:5], len(dense), dense[:5])
	}
	if !bytes.Equal(exp[redisHLLHeader:], dense[redisHLLHeader:]) {
		t.Error("the export's registers differ from those PFADD set for the same keys")
	}
	rc.mustDo(t, "SET", "exported", exp)
	got := rc.mustDo(t, "PFCOUNT", "exported").(int64)
	if want := int64(d.Count()); got != want {
		t.Errorf("PFCOUNT of the export = %d, Count() = %d", got, want)
	}
	if rel := math.Abs(float64(got)-n) / n; rel > 4*d.StdError() {
		t.Errorf("PFCOUNT of the export = %d for %d keys", got, n)
	}
	if got, want := rc.mustDo(t, "PFCOUNT", "added").(int64), int64(d.Count()); got != want {
		t.Errorf("PFCOUNT of the PFADDed key = %d, Count() = %d", got, want)
	}
}

// TestDistinct_RedisFleet: N hosts' exports (overlapping key sets),
// PFMERGEd in Redis, count what the merge of the same counts counts here,
// in both profiles (the default one with one seed across the hosts); an
// export of a frozen read-only count is the live one's.
func TestDistinct_RedisFleet(t *testing.T) {
	rc := startRedis(t)
	for _, cfg := range []DistinctConfig{{Redis: true}, {Seed: 0x5eed}} {
		const hosts = 4
		fleet := mustDistinct(t, cfg)
		keys := []any{"PFMERGE", fmt.Sprintf("fleet-%v", cfg.Redis)}
		for h := range hosts {
			d := mustIn(t, OpenDistinct, Path(filepath.Join(t.TempDir(), "host")), cfg)
			addRange(t, d, h*15_000, 25_000)
			if h == hosts-1 {
				if err := d.Freeze(); err != nil {
					t.Fatal(err)
				}
				ro := mustIn(t, OpenDistinct, Path(d.Path()), DistinctConfig{}, WithReadOnly())
				live, _ := d.ExportRedis()
				frozen, err := ro.ExportRedis()
				if err != nil || !bytes.Equal(live, frozen) {
					t.Fatalf("export of a frozen read-only copy: %v (equal to the live one's: %v)", err, bytes.Equal(live, frozen))
				}
				d = ro
			}
			exp, err := d.ExportRedis()
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("host%d-%v", h, cfg.Redis)
			rc.mustDo(t, "SET", key, exp)
			keys = append(keys, key)
			if err := fleet.Merge(d); err != nil {
				t.Fatal(err)
			}
		}
		rc.mustDo(t, keys...)
		got := rc.mustDo(t, "PFCOUNT", keys[1]).(int64)
		if want := int64(fleet.Count()); got != want {
			t.Errorf("Redis=%v: PFCOUNT of the PFMERGEd exports = %d, Count() of the merge = %d", cfg.Redis, got, want)
		}
		// PFCOUNT of several keys counts their union too.
		if got2 := rc.mustDo(t, append([]any{"PFCOUNT"}, keys[2:]...)...).(int64); got2 != got {
			t.Errorf("Redis=%v: PFCOUNT of the %d exports = %d, of their PFMERGE %d", cfg.Redis, hosts, got2, got)
		}
		const truth = 3*15_000 + 25_000
		if rel := math.Abs(float64(got)-truth) / truth; rel > 4*fleet.StdError() {
			t.Errorf("Redis=%v: fleet count %d for %d distinct keys", cfg.Redis, got, truth)
		}
		t.Logf("Redis=%v: %d distinct keys on %d hosts: PFCOUNT %d, Count %d", cfg.Redis, truth, hosts, got, fleet.Count())
	}
}

// TestDistinct_ExportRedisRefused: only Redis's 16384 registers export,
// and a closed handle does not.
func TestDistinct_ExportRedisRefused(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{Precision: 12})
	if _, err := d.ExportRedis(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ExportRedis of 2^12 registers = %v, want ErrIncompatible", err)
	}
	d14 := mustDistinct(t, DistinctConfig{})
	d14.Close()
	if _, err := d14.ExportRedis(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportRedis of a closed count = %v, want ErrClosed", err)
	}
}

// TestDistinctWindow_RedisFleet: three hosts' distinct windows, each with
// keys in two periods, export the union of their covered periods; PFCOUNT
// of one export is the host's Count, and of all three the count of the
// merge of the hosts' snapshots.
func TestDistinctWindow_RedisFleet(t *testing.T) {
	rc := startRedis(t)
	cfg := DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Redis: true}}
	fleet := mustDistinct(t, DistinctConfig{Redis: true})
	keys := []any{"PFCOUNT"}
	for h := range 3 {
		w := mustIn(t, OpenDistinctWindow, Memory(), cfg)
		addRange(t, w, h*10_000, 8_000)
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		addRange(t, w, h*10_000+5_000, 8_000)
		exp, per, err := w.ExportRedisCovered()
		if err != nil {
			t.Fatal(err)
		}
		if per != (Periods{Oldest: 0, Current: 1}) {
			t.Errorf("host %d: export covers %+v, want 0..1", h, per)
		}
		key := fmt.Sprintf("win-%d", h)
		rc.mustDo(t, "SET", key, exp)
		keys = append(keys, key)
		if got, want := rc.mustDo(t, "PFCOUNT", key).(int64), int64(w.Count()); got != want {
			t.Errorf("host %d: PFCOUNT of the export = %d, Count() = %d", h, got, want)
		}
		snap, err := w.Snapshot(Memory())
		if err != nil {
			t.Fatal(err)
		}
		if err := fleet.Merge(snap); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rc.mustDo(t, keys...).(int64), int64(fleet.Count()); got != want {
		t.Errorf("PFCOUNT of the three exports = %d, Count() of the merged snapshots = %d", got, want)
	}
}

// TestDistinct_MergeRedis: what Redis holds after PFADD, sparse (few keys)
// and dense (many), merges into a Redis-profile count as the same keys
// added here: the same registers and the same count as PFCOUNT; merging
// again changes nothing, and a PFMERGE of exports merges back into each
// host the union of all hosts' keys.
func TestDistinct_MergeRedis(t *testing.T) {
	rc := startRedis(t)
	for _, n := range []int{0, 1, 200, 30_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := fmt.Sprintf("pfadd-%d", n)
			rc.mustDo(t, "PFADD", key) // the key exists even for 0 keys
			for i := 0; i < n; i += 1000 {
				rc.mustDo(t, append([]any{"PFADD", key}, redisKeys(i, min(1000, n-i))...)...)
			}
			held := []byte(rc.mustDo(t, "GET", key).(string))
			wantSparse := n <= 200
			if sparse := held[4] == 1; sparse != wantSparse {
				t.Fatalf("Redis holds %d keys in encoding %d; the test wants it sparse: %v", n, held[4], wantSparse)
			}
			merged := mustDistinct(t, DistinctConfig{Redis: true})
			if err := merged.MergeRedis(held); err != nil {
				t.Fatal(err)
			}
			added := mustDistinct(t, DistinctConfig{Redis: true})
			addRange(t, added, 0, n)
			if !bytes.Equal(registersOf(merged), registersOf(added)) {
				t.Fatalf("merging Redis's %d keys gives other registers than adding them here", n)
			}
			if got, want := merged.Count(), uint64(rc.mustDo(t, "PFCOUNT", key).(int64)); got != want {
				t.Errorf("Count() = %d after MergeRedis, PFCOUNT = %d", got, want)
			}
			before := merged.Stats().RegisterChanges
			if err := merged.MergeRedis(held); err != nil {
				t.Fatal(err)
			}
			if after := merged.Stats().RegisterChanges; after != before {
				t.Errorf("merging the same HyperLogLog again changed %d registers", after-before)
			}
		})
	}
	t.Run("fleet", func(t *testing.T) {
		const hosts = 3
		cfg := DistinctConfig{Seed: 0xf1ee7}
		union := mustDistinct(t, cfg)
		var all []*Distinct
		for h := range hosts {
			d := mustDistinct(t, cfg)
			addRange(t, d, h*1000, 5000)
			addRange(t, union, h*1000, 5000)
			exp, err := d.ExportRedis()
			if err != nil {
				t.Fatal(err)
			}
			rc.mustDo(t, "SET", "host", exp)
			rc.mustDo(t, "PFMERGE", "fleet", "host")
			all = append(all, d)
		}
		fleet := []byte(rc.mustDo(t, "GET", "fleet").(string))
		for h, d := range all {
			if err := d.MergeRedis(fleet); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(registersOf(d), registersOf(union)) {
				t.Errorf("host %d after merging the fleet's key: not the registers of every host's keys", h)
			}
		}
	})
}

// TestDistinct_MergeRedisRefuses: bytes that are not a Redis HyperLogLog,
// or hold ranks no key gives, are ErrInvalidArgument and merge nothing;
// another precision is ErrIncompatible; a read-only, frozen or closed
// count merges nothing.
func TestDistinct_MergeRedisRefuses(t *testing.T) {
	good, err := mustDistinct(t, DistinctConfig{Redis: true}).ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	sparse := func(ops ...byte) []byte {
		return append([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"), ops...)
	}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"short":            []byte("HYL"),
		"no magic":         with(func(b []byte) []byte { b[0] = 'h'; return b }),
		"unknown encoding": with(func(b []byte) []byte { b[4] = 2; return b }),
		"dense cut":        good[:len(good)-1],
		"dense long":       append(bytes.Clone(good), 0),
		"dense rank 52":    with(func(b []byte) []byte { b[redisHLLHeader] = 52; return b }),
		"dense rank 63":    with(func(b []byte) []byte { b[len(b)-1] = 0xfc; return b }),
		"sparse too few":   sparse(0x7f, 0xfe), // XZERO of 16383
		"sparse too many":  sparse(0x7f, 0xff, 0x00),
		"sparse cut xzero": sparse(0x7f),
		"sparse none":      sparse(),
		"sparse past val":  sparse(0x7f, 0xfe, 0x81), // 16383 zeros, then a run of 2
	} {
		t.Run(name, func(t *testing.T) {
			d := mustDistinct(t, DistinctConfig{Redis: true})
			if err := d.MergeRedis(b); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("MergeRedis = %v, want ErrInvalidArgument", err)
			}
			if c := d.Count(); c != 0 {
				t.Errorf("Count() = %d after a refused merge", c)
			}
		})
	}
	// The largest rank Redis gives (51) and a sparse VAL are taken.
	top := with(func(b []byte) []byte { b[redisHLLHeader] = 51; return b })
	if err := mustDistinct(t, DistinctConfig{Redis: true}).MergeRedis(top); err != nil {
		t.Errorf("MergeRedis of rank 51 = %v", err)
	}
	val := sparse(0x8c, 0x7f, 0xfe) // register 0 at rank 4, then 16383 zeros
	d := mustDistinct(t, DistinctConfig{Redis: true})
	if err := d.MergeRedis(val); err != nil || d.l.Register(0) != 4 {
		t.Errorf("MergeRedis of a sparse VAL = %v, register 0 = %d, want 4", err, d.l.Register(0))
	}

	if err := mustDistinct(t, DistinctConfig{Precision: 12}).MergeRedis(good); !errors.Is(err, ErrIncompatible) {
		t.Errorf("MergeRedis into precision 12 = %v, want ErrIncompatible", err)
	}
	path := filepath.Join(t.TempDir(), "d")
	w := mustIn(t, OpenDistinct, Path(path), DistinctConfig{Redis: true})
	ro := mustIn(t, OpenDistinct, Path(path), DistinctConfig{}, WithReadOnly())
	other := mustIn(t, OpenDistinct, Path(path), DistinctConfig{})
	if err := ro.MergeRedis(good); !errors.Is(err, ErrReadOnly) {
		t.Errorf("MergeRedis on a read-only handle = %v, want ErrReadOnly", err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := other.MergeRedis(good); !errors.Is(err, ErrFrozen) {
		t.Errorf("MergeRedis on a frozen file = %v, want ErrFrozen", err)
	}
	w.Close()
	if err := w.MergeRedis(good); !errors.Is(err, ErrClosed) {
		t.Errorf("MergeRedis after Close = %v, want ErrClosed", err)
	}
}

// FuzzDistinct_MergeRedis: any bytes merge or are refused, never panic;
// what merges leaves every register at most the largest rank.
func FuzzDistinct_MergeRedis(f *testing.F) {
	good, err := mustDistinct(f, DistinctConfig{Redis: true}).ExportRedis()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x8c\x7f\xfe"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := mustDistinct(t, DistinctConfig{Redis: true})
		if err := d.MergeRedis(b); err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("MergeRedis = %v, not ErrInvalidArgument", err)
			}
			return
		}
		if err := d.Check(); err != nil {
			t.Fatalf("Check after a merge it took: %v", err)
		}
	})
}
