package cells

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shmsketch/sketch/internal/xxh3golden"
	"github.com/zeebo/xxh3"
)

// The golden vectors of internal/xxh3golden pin XXH3-128 with a seed
// (upstream XXH3_128bits_withSeed). TestXXH3Golden checks zeebo/xxh3 against
// them, so a change of that dependency's output cannot go unnoticed, and the
// cgo tests check the C core against them. Regenerate (only on purpose) with
//
//	go test -run TestXXH3Golden -update-golden ./internal/cells
var updateGolden = flag.Bool("update-golden", false, "rewrite internal/xxh3golden/xxh3_golden.txt from zeebo/xxh3")

func writeXXH3Golden(t *testing.T) {
	lens := xxh3golden.Lens()
	in := xxh3golden.Input(lens[len(lens)-1])
	var sb strings.Builder
	sb.WriteString("# XXH3-128 with seed (XXH3_128bits_withSeed), generated from github.com/zeebo/xxh3 Hash128Seed\n")
	sb.WriteString("# by `go test -run TestXXH3Golden -update-golden` (xxh3_test.go).\n")
	sb.WriteString("# Input: the key of length len is bytes 0..len-1 of the pattern byte i = uint8(i*131+7).\n")
	sb.WriteString("# Columns, all hex: len seed lo hi (lo, hi = low and high 64 bits of the hash).\n")
	for _, n := range lens {
		for _, seed := range xxh3golden.Seeds {
			h := xxh3.Hash128Seed(in[:n], seed)
			fmt.Fprintf(&sb, "%x %x %016x %016x\n", n, seed, h.Lo, h.Hi)
		}
	}
	if err := os.WriteFile(xxh3golden.File, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestXXH3Golden(t *testing.T) {
	if *updateGolden {
		writeXXH3Golden(t)
	}
	vecs := xxh3golden.Read(t)
	in := xxh3golden.Input(65536 + 7)
	for _, v := range vecs {
		h := xxh3.Hash128Seed(in[:v.N], v.Seed)
		if h.Lo != v.Lo || h.Hi != v.Hi {
			t.Errorf("xxh3.Hash128Seed(len=%d, seed=%#x) = %#x %#x, want %#x %#x", v.N, v.Seed, h.Lo, h.Hi, v.Lo, v.Hi)
		}
	}
}
