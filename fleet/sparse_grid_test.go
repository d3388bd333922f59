package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// gridOf is an export of n counters, those of at set to their values.
func gridOf(n int, at map[int]uint64) []byte {
	exp := make([]byte, n*8)
	for i, v := range at {
		binary.LittleEndian.PutUint64(exp[i*8:], v)
	}
	return exp
}

// TestEncodeGrid_RoundTrip: every grid decodes from its encoding to
// itself; few counters set are sparse, a grid whose sparse body would be
// no shorter than dense goes dense, one byte over; an empty grid is one
// byte.
func TestEncodeGrid_RoundTrip(t *testing.T) {
	const n = 64
	full := map[int]uint64{}
	for i := range n {
		full[i] = 1 << 62
	}
	for name, exp := range map[string][]byte{
		"zeros":   gridOf(n, nil),
		"edges":   gridOf(n, map[int]uint64{0: 1, n - 1: 1<<64 - 1}),
		"spread":  gridOf(n, map[int]uint64{3: 300, 17: 1 << 40, 40: 2}),
		"full":    gridOf(n, full),
		"counted": gridOf(n+1, map[int]uint64{5: 9, n: 12345}), // a sketch's, its add total last
	} {
		t.Run(name, func(t *testing.T) {
			val := encodeGrid(exp)
			got, err := decodeGrid(val, len(exp)/8)
			if err != nil || !bytes.Equal(got, exp) {
				t.Fatalf("decodeGrid(encodeGrid(%x)) = %x, %v", exp, got, err)
			}
			if dense := val[0] == countsDense; dense != (name == "full") || len(val) > len(exp)+1 {
				t.Errorf("%d bytes, format %q; want dense only for the full grid", len(val), val[0])
			}
		})
	}
	if got := encodeGrid(make([]byte, 5*4096*8)); string(got) != "s" {
		t.Errorf("an empty 5 x 4096 grid encodes to %q, want \"s\"", got)
	}
}

// TestDecodeGrid_Refused: values the encoder never writes are refused
// with errCounts.
func TestDecodeGrid_Refused(t *testing.T) {
	const n = 64
	uv := func(x uint64) string { return string(binary.AppendUvarint(nil, x)) }
	for _, c := range []struct{ name, val string }{
		{"empty", ""},
		{"unknown format byte", "x\x00\x01"},
		{"the dense export bare", strings.Repeat("\x00", n*8)},
		{"dense short", "d" + strings.Repeat("\x01", n*8-1)},
		{"dense long", "d" + strings.Repeat("\x01", n*8+1)},
		{"gap cut short", "s\x00\x01\x80"},
		{"gap without its count", "s\x00\x01\x05"},
		{"count cut short", "s\x00\x80"},
		{"gap over 64 bits", "s" + strings.Repeat("\xff", 10) + "\x01\x01"},
		{"count over 64 bits", "s\x00" + strings.Repeat("\xff", 10) + "\x01"},
		{"gap not shortest", "s\x80\x00\x01"},
		{"count not shortest", "s\x00\x81\x00"},
		{"count of 0", "s\x00\x01\x00\x00"},
		{"index n", "s" + uv(n) + "\x01"},
		{"index past n after others", "s\x00\x01" + uv(n-1) + "\x01"},
		{"after the last counter", "s" + uv(n-1) + "\x01\x00\x01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := decodeGrid([]byte(c.val), n); !errors.Is(err, errCounts) {
				t.Errorf("decodeGrid(%q) = %x, %v; want errCounts", c.val, got, err)
			}
		})
	}
	got, err := decodeGrid([]byte("s\x00"+uv(300)+"\x00\x07"+uv(n-3)+uv(1<<63)), n)
	want := gridOf(n, map[int]uint64{0: 300, 1: 7, n - 1: 1 << 63})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("gaps 0, 0, n-3 = %x, %v; want counters 0, 1 and n-1 set: %x", got, err, want)
	}
}

// FuzzDecodeGrid: any value decodes to n counters or is refused, never a
// panic; what decodes encodes to a value that decodes to the same
// counters, a sparse value no longer than dense back to itself; any bytes
// taken as a grid decode from their encoding to themselves.
func FuzzDecodeGrid(f *testing.F) {
	f.Add(uint16(8), encodeGrid(gridOf(8, map[int]uint64{2: 5})))
	f.Add(uint16(4), []byte("s\x00\x81\x00"))
	f.Add(uint16(1), []byte("d\x01\x02\x03\x04\x05\x06\x07\x08"))
	f.Fuzz(func(t *testing.T, n16 uint16, val []byte) {
		n := int(n16%1024) + 1
		if exp, err := decodeGrid(val, n); err == nil {
			if len(exp) != n*8 {
				t.Fatalf("decoded %d bytes, want %d", len(exp), n*8)
			}
			again := encodeGrid(exp)
			if back, err := decodeGrid(again, n); err != nil || !bytes.Equal(back, exp) {
				t.Fatalf("%x decodes to %x, encoded again to %x, which decodes to %x, %v", val, exp, again, back, err)
			}
			if val[0] == countsSparse && len(val) <= n*8 && !bytes.Equal(again, val) {
				t.Fatalf("sparse %x encodes back to %x", val, again)
			}
		}
		exp := make([]byte, n*8)
		copy(exp, val)
		enc := encodeGrid(exp)
		if got, err := decodeGrid(enc, n); err != nil || !bytes.Equal(got, exp) || len(enc) > n*8+1 {
			t.Fatalf("grid %x encodes to %d bytes %x, which decode to %x, %v", exp, len(enc), enc, got, err)
		}
	})
}

// TestSync_CountMinWindowSparseKeys: a period's key of the default 5 x
// 4096 window holds its nonzero counters only (1,000 keys: a few KiB, not
// 160), a period the host added nothing to is one byte, and the other
// host, which remembers them as sent, answers for both exactly. The
// window's period is one the clock never turns while the test runs: the
// keys read are those of the period the adds went to and the round
// pushed.
func TestSync_CountMinWindowSparseKeys(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinWindowConfig{Window: sketch.Window{Period: forever, Keep: 3}, CountMin: sketch.CountMinConfig{Rows: 5, Width: 4096, Fleet: true, Seed: 0x5b}}
	a, b := newAgent(t, rs, "a"), newAgent(t, rs, "b")
	wa := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(filepath.Join(t.TempDir(), "a")), cfg)
	wb := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(filepath.Join(t.TempDir(), "b")), cfg)
	if err := a.AddCountMinWindow("requests", wa); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCountMinWindow("requests", wb); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, err := wa.AddString(fmt.Sprint("client-", i)); err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, a, b)
	p := wa.Current()
	ctx := context.Background()
	rc := rs.Client(t)
	own, err := rc.StrLen(ctx, fmt.Sprintf("{f/requests}:host:%d:a", p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := rc.StrLen(ctx, fmt.Sprintf("{f/requests}:host:%d:b", p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 keys in a period of 5 x 4096: a key of %d bytes (dense %d); a quiet host's %d", own, 5*4096*8, quiet)
	if own > 16<<10 || quiet != 1 {
		t.Errorf("keys of %d and %d bytes; want < 16 KiB for 1,000 keys and 1 for none", own, quiet)
	}
	if got := len(b.members[0].additiveWindow.seen[p]["a"]); int64(got) != own {
		t.Errorf("b remembers %d bytes of a's period, want the key's %d", got, own)
	}
	for i := range 1000 {
		k := fmt.Sprint("client-", i)
		if got, want := wb.EstimateString(k), wa.EstimateString(k); got != want || got == 0 {
			t.Fatalf("b estimates %q at %d, a at %d", k, got, want)
		}
	}
}

// TestSync_CountMinHostileValues: a Count-Min host key that does not
// decode fails the round (ErrMismatch) and leaves the fleet part as it
// was; the host's next push heals it.
func TestSync_CountMinHostileValues(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 2, Width: 64, Fleet: true, Seed: 0xb1}
	a, b := newAgent(t, rs, "a"), newAgent(t, rs, "b")
	ca := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	cb := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	if err := a.AddCountMin("hits", ca); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCountMin("hits", cb); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		cb.AddString(fmt.Sprint("k", i))
	}
	mustSync(t, b, a)
	unchanged := func(when string) {
		t.Helper()
		for i := range 50 {
			k := fmt.Sprint("k", i)
			if got, want := ca.EstimateString(k), cb.EstimateString(k); got != want {
				t.Fatalf("%s: a estimates %q at %d, b at %d", when, k, got, want)
			}
		}
		if got, want := ca.Stats().FleetTotal, cb.Total(); got != want {
			t.Errorf("%s: a's FleetTotal %d, b's total %d", when, got, want)
		}
	}
	unchanged("synced")
	ctx := context.Background()
	rc := rs.Client(t)
	for _, c := range []struct{ name, val string }{
		{"truncated gap", "s\x00\x01\x80"},
		{"count of 0", "s\x00\x00"},
		{"index past the add total", "s" + string(binary.AppendUvarint(nil, 2*64+1)) + "\x01"},
		{"dense without the add total", "d" + strings.Repeat("\x00", 2*64*8)},
		{"the dense export bare", strings.Repeat("\x00", 2*64*8+8)},
	} {
		rc.Set(ctx, "{f/hits}:host:b", c.val, 0)
		if err := a.Sync(ctx); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: a round = %v, want ErrMismatch", c.name, err)
		}
		unchanged(c.name + ", after the round")
		mustSync(t, b, a)
		unchanged(c.name + ", after b pushed again")
	}
}
