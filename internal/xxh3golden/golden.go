// Package xxh3golden reads the golden vectors that pin XXH3-128 with a
// seed (upstream XXH3_128bits_withSeed) for the tests of both cores: the
// Go core's (internal/cells, which also checks zeebo/xxh3 against them and
// regenerates them) and the C core's (internal/cellsc).
package xxh3golden

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// File is the golden file's path: xxh3_golden.txt beside this source.
var File = func() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "xxh3_golden.txt")
}()

// Seeds are the seeds of the golden file.
var Seeds = []uint64{0, 1, 0x9E3779B97F4A7C15, 0xFFFFFFFFFFFFFFFF, 0x0123456789ABCDEF}

// Lens are the key lengths of the golden file: every length up to 1024
// (all short paths, 129..240, the long path's first blocks) plus a few
// multi-block lengths.
func Lens() []int {
	var lens []int
	for n := 0; n <= 1024; n++ {
		lens = append(lens, n)
	}
	return append(lens, 2048, 4096, 10000, 65536+7)
}

// Input is the input of the golden file: the key of length n is its
// first n bytes, byte i = uint8(i*131+7).
func Input(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = uint8(i*131 + 7)
	}
	return b
}

// Vector is one line of the golden file: the hash of Input(N) with Seed.
type Vector struct {
	N      int
	Seed   uint64
	Lo, Hi uint64
}

// Read returns every vector of the golden file, failing t when the file
// is not whole.
func Read(t testing.TB) []Vector {
	t.Helper()
	f, err := os.Open(File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Vector
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		if len(fields) != 4 {
			t.Fatalf("%s:%d: want 4 fields, got %q", File, line, s)
		}
		var v [4]uint64
		for i, fs := range fields {
			if v[i], err = strconv.ParseUint(fs, 16, 64); err != nil {
				t.Fatalf("%s:%d: %v", File, line, err)
			}
		}
		out = append(out, Vector{N: int(v[0]), Seed: v[1], Lo: v[2], Hi: v[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if want := len(Lens()) * len(Seeds); len(out) != want {
		t.Fatalf("%s: %d vectors, want %d", File, len(out), want)
	}
	return out
}
