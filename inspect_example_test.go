package sketch_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// Inspect reads any sketch file without writing to it or locking it: what
// it holds, and who holds its lock.
func ExampleInspect() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "banned.cbf")
	cbf, err := sketch.OpenCountingBloom(sketch.Path(path), sketch.CountingBloomConfig{Capacity: 10_000, FPRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	defer cbf.Close()

	fi, err := sketch.Inspect(path)
	if err != nil {
		log.Fatal(err)
	}
	e := fi.Entries[0]
	fmt.Printf("format %d: %s, %v counters, %v hashes\n", fi.FormatVersion, e.Description, e.Params["counters"], e.Params["hashes"])
	fmt.Printf("lock held by a writer: %v; open handles: %d\n", fi.Lock.Writer, fi.Lock.Handles)
	// Output:
	// format 2: counting Bloom filter, 131072 counters, 7 hashes
	// lock held by a writer: false; open handles: 1
}
