package cells

import "testing"

func TestParseCacheSize(t *testing.T) {
	for _, tc := range []struct {
		In   string
		Want uint64
		Ok   bool
	}{
		{"2048K", 2 << 20, true},
		{"512K", 512 << 10, true},
		{"1M", 1 << 20, true},
		{"4096", 4096, true},
		{"", 0, false},
		{"0K", 0, false},
		{"lots", 0, false},
	} {
		got, ok := parseCacheSize(tc.In)
		if got != tc.Want || ok != tc.Ok {
			t.Errorf("parseCacheSize(%q) = %d, %v, want %d, %v", tc.In, got, ok, tc.Want, tc.Ok)
		}
	}
	if l2 := L2Bytes(); l2 < 64<<10 || l2 > 1<<30 {
		t.Errorf("l2Bytes() = %d, not a plausible L2 size", l2)
	}
}
