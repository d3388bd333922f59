package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// sparseExports are counting Bloom filter exports of 64 counters, by
// name: empty, at the edges, the int8s' extremes, and full.
func sparseExports() map[string][]byte {
	const m = 64
	ex := map[string][]byte{}
	ex["zeros"] = make([]byte, m)
	first, last := make([]byte, m), make([]byte, m)
	first[0], last[m-1] = 1, 0x80 // -128
	ex["first"], ex["last"] = first, last
	spread := make([]byte, m)
	for i := 3; i < m; i += 9 {
		spread[i] = byte(i) * 37
	}
	spread[60] = 127 // saturated
	ex["spread"] = spread
	full := make([]byte, m)
	for i := range full {
		full[i] = 0xff // -1: unheld removes everywhere
	}
	ex["full"] = full
	half := make([]byte, m)
	for i := 0; i < m; i += 2 {
		half[i] = 2
	}
	ex["half"] = half // sparse body 64 bytes: as long as dense, so dense
	return ex
}

// TestEncodeCounts_RoundTrip: every export decodes from its encoding to
// itself; an export with few counters set is sparse, one whose sparse
// body would be no shorter than dense goes dense, one byte over.
func TestEncodeCounts_RoundTrip(t *testing.T) {
	for name, exp := range sparseExports() {
		t.Run(name, func(t *testing.T) {
			val := encodeCounts(exp)
			got, err := decodeCounts(val, len(exp))
			if err != nil || !bytes.Equal(got, exp) {
				t.Fatalf("decodeCounts(encodeCounts(%x)) = %x, %v", exp, got, err)
			}
			set := len(exp) - bytes.Count(exp, []byte{0})
			wantDense := name == "full" || name == "half"
			if dense := val[0] == countsDense; dense != wantDense || len(val) > len(exp)+1 {
				t.Errorf("%d counters set of %d: %d bytes, format %q; want dense %v", set, len(exp), len(val), val[0], wantDense)
			}
		})
	}
	if got := encodeCounts(make([]byte, 1<<20)); string(got) != "s" {
		t.Errorf("a million zero counters encode to %q, want \"s\"", got)
	}
}

// TestDecodeCounts_Refused: values an encoder never writes are refused
// with errCounts, whatever they hold before or after the fault; no index
// can repeat, so what reads as a second count of a counter is the next
// counter's.
func TestDecodeCounts_Refused(t *testing.T) {
	const m = 64
	uv := func(x uint64) string { return string(binary.AppendUvarint(nil, x)) }
	for _, c := range []struct{ name, val string }{
		{"empty", ""},
		{"unknown format byte", "x\x00\x01"},
		{"the dense export bare", strings.Repeat("\x00", m)},
		{"dense short", "d" + strings.Repeat("\x01", m-1)},
		{"dense long", "d" + strings.Repeat("\x01", m+1)},
		{"gap cut short", "s\x00\x01\x80"},
		{"gap without its count", "s\x00\x01\x05"},
		{"gap over 64 bits", "s" + strings.Repeat("\xff", 10) + "\x01\x01"},
		{"gap of 2^64-1", "s\x00\x01" + uv(1<<64-1) + "\x01"},
		{"gap not shortest", "s\x80\x00\x01"},
		{"count of 0", "s\x00\x01\x00\x00"},
		{"index m", "s" + uv(m) + "\x01"},
		{"index past m after others", "s\x00\x01" + uv(m-1) + "\x01"},
		{"after the last counter", "s" + uv(m-1) + "\x01\x00\x01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := decodeCounts([]byte(c.val), m); !errors.Is(err, errCounts) {
				t.Errorf("decodeCounts(%q) = %x, %v; want errCounts", c.val, got, err)
			}
		})
	}
	got, err := decodeCounts([]byte("s\x00\x05\x00\x07"+uv(m-3)+"\x01"), m)
	want := make([]byte, m)
	want[0], want[1], want[m-1] = 5, 7, 1
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("gaps 0, 0, m-3 = %x, %v; want counters 0, 1 and m-1 set: %x", got, err, want)
	}
}

// FuzzDecodeCounts: any value decodes to m counters or is refused, never
// a panic; what decodes encodes to a value that decodes to the same
// counters, and a sparse value no longer than dense encodes back to
// itself. Any bytes taken as an export decode from their encoding to
// themselves.
func FuzzDecodeCounts(f *testing.F) {
	for _, exp := range sparseExports() {
		f.Add(uint16(len(exp)), encodeCounts(exp))
	}
	f.Add(uint16(64), []byte("s\x80\x00\x01"))
	f.Add(uint16(1), []byte("d\x7f"))
	f.Fuzz(func(t *testing.T, m16 uint16, val []byte) {
		m := int(m16%4096) + 1
		if exp, err := decodeCounts(val, m); err == nil {
			if len(exp) != m {
				t.Fatalf("decoded %d counters, want %d", len(exp), m)
			}
			again := encodeCounts(exp)
			if back, err := decodeCounts(again, m); err != nil || !bytes.Equal(back, exp) {
				t.Fatalf("%x decodes to %x, encoded again to %x, which decodes to %x, %v", val, exp, again, back, err)
			}
			if val[0] == countsSparse && len(val) <= m && !bytes.Equal(again, val) {
				t.Fatalf("sparse %x encodes back to %x", val, again)
			}
		}
		exp := make([]byte, m)
		copy(exp, val)
		enc := encodeCounts(exp)
		if got, err := decodeCounts(enc, m); err != nil || !bytes.Equal(got, exp) || len(enc) > m+1 {
			t.Fatalf("export %x encodes to %d bytes %x, which decode to %x, %v", exp, len(enc), enc, got, err)
		}
	})
}

// TestSync_CountingBloomSparseKey: a ban list of 100,000 at 1% (a million
// counters, 1 MiB dense) with 300 bans is a key of a few KiB in Redis,
// and the other host, which remembers that much of it, finds every ban.
func TestSync_CountingBloomSparseKey(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountingBloomConfig{Capacity: 100_000, FPRate: 0.01, Seed: 0x5a, Fleet: true}
	a, b := newAgent(t, rs, "a"), newAgent(t, rs, "b")
	fa := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	fb := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	if err := a.AddCountingBloom("bans", fa); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCountingBloom("bans", fb); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := fa.AddString(fmt.Sprint("10.9.", i/256, ".", i%256)); err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, a, b)
	n, err := rs.Client(t).StrLen(context.Background(), "{f/bans}:host:a").Result()
	if err != nil {
		t.Fatal(err)
	}
	set := fa.Stats().Set
	t.Logf("300 bans, %d of %d counters set: a key of %d bytes (%.1f a counter set), dense %d", set, fa.Counters(), n, float64(n)/float64(set), fa.Counters())
	if n >= 10<<10 {
		t.Errorf("300 bans make a key of %d bytes, want < 10 KiB", n)
	}
	if got := len(b.members[0].additive.seen["a"]); int64(got) != n {
		t.Errorf("b remembers %d bytes of a's counts, want the key's %d", got, n)
	}
	for i := range 300 {
		if k := fmt.Sprint("10.9.", i/256, ".", i%256); !fb.ContainsString(k) {
			t.Fatalf("b does not find a's ban %q", k)
		}
	}
}

// TestSync_CountingBloomHostileValues: a host key that does not decode
// fails the round (ErrMismatch) and leaves the fleet part as it was; so
// does a dense-format agent's description, whichever format came first;
// the host's next push heals the round.
func TestSync_CountingBloomHostileValues(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountingBloomConfig{Capacity: 1000, Seed: 0xb0, Fleet: true}
	a, b := newAgent(t, rs, "a"), newAgent(t, rs, "b")
	fa := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	fb := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	if err := a.AddCountingBloom("bans", fa); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCountingBloom("bans", fb); err != nil {
		t.Fatal(err)
	}
	var bans []string
	for i := range 20 {
		bans = append(bans, fmt.Sprint("ban-", i))
		fb.AddString(bans[i])
	}
	mustSync(t, b, a)
	ctx := context.Background()
	rc := rs.Client(t)
	m := fa.Counters()
	unchanged := func(when string) {
		t.Helper()
		if got := fa.Stats().Set; got != fb.Stats().Set {
			t.Errorf("%s: a has %d counters set, b %d", when, got, fb.Stats().Set)
		}
		for _, k := range bans {
			if got := fa.EstimateString(k); got != fb.EstimateString(k) {
				t.Fatalf("%s: a estimates %q at %d, b at %d", when, k, got, fb.EstimateString(k))
			}
		}
	}
	unchanged("synced")
	uv := func(x uint64) string { return string(binary.AppendUvarint(nil, x)) }
	for _, c := range []struct{ name, val string }{
		{"truncated gap", "s\x00\x01\x80"},
		{"index m", "s\x00\x01" + uv(m-1) + "\x01"},
		{"count of 0", "s\x00\x01\x00\x00"},
		{"dense short", "d\x01"},
		{"the dense export bare", strings.Repeat("\x00", int(m))},
	} {
		rc.Set(ctx, "{f/bans}:host:b", c.val, 0)
		if err := a.Sync(ctx); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: a round = %v, want ErrMismatch", c.name, err)
		}
		unchanged(c.name + ", after the round")
		mustSync(t, b, a)
		unchanged(c.name + ", after b pushed again")
	}

	// A dense-format agent's description (its meta without enc=sparse)
	// is refused before anything is written.
	sparseMeta := a.members[0].meta
	denseMeta, ok := strings.CutSuffix(sparseMeta, " enc=sparse")
	if !ok {
		t.Fatalf("meta %q does not end in enc=sparse", sparseMeta)
	}
	rc.Set(ctx, "{f/bans}:meta", denseMeta, 0)
	rc.Set(ctx, "{f/bans}:host:a", "a dense export", 0)
	if err := a.Sync(ctx); !errors.Is(err, ErrMismatch) {
		t.Errorf("a round against a dense fleet = %v, want ErrMismatch", err)
	}
	if got, _ := rc.Get(ctx, "{f/bans}:host:a").Result(); got != "a dense export" {
		t.Errorf("a refused round wrote %q to a's key", got)
	}
	unchanged("against a dense fleet")
}
