package sketch_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// Skip work another process already did: Add reports whether every bit
// of the key was already set.
func ExampleOpenBloom() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	seen, err := sketch.OpenBloom(sketch.Path(filepath.Join(dir, "seen.bloom")), sketch.BloomConfig{
		Capacity: 1_000_000, // distinct keys...
		FPRate:   0.001,     // ...at which one absent key in 1000 reads present
	})
	if err != nil {
		log.Fatal(err)
	}
	defer seen.Close()

	for _, id := range []string{"job-1", "job-2", "job-1"} {
		if already, _ := seen.AddString(id); already {
			fmt.Println("skip", id)
			continue
		}
		fmt.Println("run", id)
	}
	fmt.Println("job-3 seen:", seen.ContainsString("job-3"))
	st := seen.Stats()
	fmt.Printf("%d hashes, %.1f bits a key, adds %d, %d of them present\n", st.Hashes, float64(st.Bits)/float64(st.Capacity), st.Adds, st.AddsPresent)
	// Output:
	// run job-1
	// run job-2
	// skip job-1
	// job-3 seen: false
	// 9 hashes, 15.5 bits a key, adds 3, 1 of them present
}

// Filters filled apart (in other processes, or frozen on other hosts and
// shipped) merge into one that holds every key.
func ExampleBloom_Merge() {
	cfg := sketch.BloomConfig{Capacity: 10_000, FPRate: 0.01, Seed: 42} // one shape and seed
	a, _ := sketch.OpenBloom(sketch.Memory(), cfg)
	b, _ := sketch.OpenBloom(sketch.Memory(), cfg)
	defer a.Close()
	defer b.Close()

	a.AddBatch([][]byte{[]byte("alpha"), []byte("beta")}, nil)
	b.AddString("gamma")
	if err := a.Merge(b); err != nil {
		log.Fatal(err)
	}
	found := make([]bool, 3)
	a.ContainsBatch([][]byte{[]byte("alpha"), []byte("gamma"), []byte("delta")}, found)
	fmt.Println(found)

	other, _ := sketch.OpenBloom(sketch.Memory(), sketch.BloomConfig{Capacity: 10_000, FPRate: 0.01, Seed: 7})
	defer other.Close()
	fmt.Println(a.Merge(other) != nil)
	// Output:
	// [true true false]
	// true
}
