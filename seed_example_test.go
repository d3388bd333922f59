package sketch_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// Sketches merge only when they hash with one seed. Each host creates its
// file with the fleet's seed (here the first file's: its Seed), counts,
// freezes and ships it; a collector creates its sketch with the same seed
// (the config's Seed) and merges the copies, read-only.
func ExampleHandle_Seed() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	cfg := sketch.CountMinConfig{ErrorRate: 0.001}

	east, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "east.cms")), cfg) // a random seed
	if err != nil {
		log.Fatal(err)
	}
	defer east.Close()
	fleet := cfg
	fleet.Seed = east.Seed() // a secret: keep it out of logs and command lines
	west, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "west.cms")), fleet)
	if err != nil {
		log.Fatal(err)
	}
	defer west.Close()

	east.AddN([]byte("/login"), 40)
	west.AddN([]byte("/login"), 2)
	west.AddString("/search")
	for _, host := range []*sketch.CountMin{east, west} {
		if err := host.Freeze(); err != nil { // then ship the file
			log.Fatal(err)
		}
	}

	total, err := sketch.OpenCountMin(sketch.Memory(), fleet)
	if err != nil {
		log.Fatal(err)
	}
	defer total.Close()
	for _, name := range []string{"east.cms", "west.cms"} {
		shipped, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, name)), sketch.CountMinConfig{}, sketch.WithReadOnly())
		if err != nil {
			log.Fatal(err)
		}
		err = total.Merge(shipped)
		shipped.Close()
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("/login:", total.EstimateString("/login"), "/search:", total.EstimateString("/search"))

	other, _ := sketch.OpenCountMin(sketch. // its own random seed
						Memory(), cfg)
	defer other.Close()
	fmt.Println("another seed merges:", other.Merge(east) == nil)
	// Output:
	// /login: 42 /search: 1
	// another seed merges: false
}
