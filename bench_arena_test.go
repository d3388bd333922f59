//go:build linux

package sketch

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkArenaOpen opens a structure of an arena by name and closes it,
// in arenas of 16 and 256 structures: what a room's hold (an OFD lock and
// a look at the entry again) adds to an open.
func BenchmarkArenaOpen(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("structures=%d", n), func(b *testing.B) {
			a, err := OpenArena(Path(filepath.Join(b.TempDir(), "arena")), ArenaConfig{Size: 16 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			for i := range n {
				c, err := OpenCountMin(a.Place(fmt.Sprint("s", i)), CountMinConfig{Rows: 1, Width: 64})
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			name := fmt.Sprint("s", n-1)
			b.ReportAllocs()
			for b.Loop() {
				c, err := OpenCountMin(a.Place(name), CountMinConfig{})
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkArenaRemoveCreate removes a structure and creates it again in
// its room (the reuse path, under the write lock), in arenas of 16 and
// 256 structures: each Remove and reuse makes every handle read the
// directory again.
func BenchmarkArenaRemoveCreate(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("structures=%d", n), func(b *testing.B) {
			a, err := OpenArena(Path(filepath.Join(b.TempDir(), "arena")), ArenaConfig{Size: 16 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			for i := range n {
				c, err := OpenCountMin(a.Place(fmt.Sprint("s", i)), CountMinConfig{Rows: 1, Width: 64})
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			name := fmt.Sprint("s", n/2)
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Remove(name); err != nil {
					b.Fatal(err)
				}
				c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 1, Width: 64})
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			if st := a.Stats(); st.Removed != 0 || st.Entries != n {
				b.Fatalf("%+v: the room was not reused", st)
			}
		})
	}
}
