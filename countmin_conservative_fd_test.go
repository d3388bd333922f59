//go:build linux

package sketch

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestCountMinConservative_DescriptorHandle: a handle opened from a
// descriptor that shares the first handle's open file description (File
// hands out a dup) gets a liveness token of its own, so it never takes
// the first handle's lane for dead: each owns one lane, and raising one
// key from both at once loses no add.
func TestCountMinConservative_DescriptorHandle(t *testing.T) {
	for _, at := range []struct {
		name string
		at   func(t *testing.T) Place
	}{
		{"path", func(t *testing.T) Place { return Path(filepath.Join(t.TempDir(), "cm")) }},
		{"memfd", func(t *testing.T) Place { return Memfd("cu-fd") }},
	} {
		t.Run(at.name, func(t *testing.T) {
			cfg := CountMinConfig{Rows: 2, Width: 64, Lanes: 2, ConservativeUpdate: true}
			a := mustCountMin(t, at.at(t), cfg)
			defer a.Close()
			f, err := a.File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := mustCountMin(t, Inherited(f.Fd()), CountMinConfig{})
			defer b.Close()
			sa, sb := a.Stats(), b.Stats()
			if !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
				t.Fatalf("lanes: %d (owned %v) and %d (owned %v), want one each", sa.Lane, sa.LaneOwned, sb.Lane, sb.LaneOwned)
			}
			const n = 100000
			var wg sync.WaitGroup
			for _, c := range []*CountMin{a, b} {
				wg.Go(func() {
					for range n {
						if _, err := c.Add([]byte("k")); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if v := b.Estimate([]byte("k")); v < 2*n {
				t.Errorf("Estimate(%q) = %d, want >= %d", "k", v, 2*n)
			}
		})
	}
}
