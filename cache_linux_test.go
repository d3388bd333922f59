package sketch

import "testing"

func TestParseCacheSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"2048K", 2 << 20, true},
		{"512K", 512 << 10, true},
		{"1M", 1 << 20, true},
		{"4096", 4096, true},
		{"", 0, false},
		{"0K", 0, false},
		{"lots", 0, false},
	} {
		got, ok := parseCacheSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCacheSize(%q) = %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if l2 := l2Bytes(); l2 < 64<<10 || l2 > 1<<30 {
		t.Errorf("l2Bytes() = %d, not a plausible L2 size", l2)
	}
}

// TestBatchCore checks which core serves a batch: Go for small batches
// and grids that fit in L2, the default core past L2.
func TestBatchCore(t *testing.T) {
	small := mustOpen(t, tempPath(t, "small"), CountMinConfig{Rows: 2, Width: 64})
	if got := small.batchCore(1000).name(); got != "purego" {
		t.Errorf("batch core on a grid in L2 = %s, want purego", got)
	}
	big := mustOpen(t, tempPath(t, "big"), CountMinConfig{Rows: 1, Width: int(l2Bytes()/8) * 2})
	if !big.l.prefetch {
		t.Fatalf("a grid of twice L2 does not fetch ahead")
	}
	if got := big.batchCore(1000).name(); got != buildCores.countMin.name() {
		t.Errorf("batch core past L2 = %s, want %s", got, buildCores.countMin.name())
	}
	if got := big.batchCore(countMinMinBatch - 1).name(); got != "purego" {
		t.Errorf("batch core for %d keys = %s, want purego", countMinMinBatch-1, got)
	}
}
