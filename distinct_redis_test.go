//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

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
