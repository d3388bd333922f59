package sketch_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/shmsketch/sketch"
)

// A window counts the last Keep periods: here two, turned by Rotate (give
// a Period to turn them by the clock instead, the same in every process).
func ExampleOpenCountMinWindow() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	w, err := sketch.OpenCountMinWindow(sketch.Path(filepath.Join(dir, "logins.cmw")), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{}})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	w.AddN([]byte("alice"), 3) // period 0
	w.Rotate()
	n, _ := w.AddString("alice") // period 1: the window is periods 0 and 1
	fmt.Println("periods 0-1:", n)
	w.Rotate()
	fmt.Println("periods 1-2:", w.EstimateString("alice"))
	w.Rotate()
	fmt.Println("periods 2-3:", w.EstimateString("alice"))
	// Output:
	// periods 0-1: 4
	// periods 1-2: 1
	// periods 2-3: 0
}

// Stats says which periods an estimate covers.
func ExampleCountMinWindow_Stats() {
	w, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{Window: sketch.Window{Period: time.Minute, Keep: 5}, CountMin: sketch.CountMinConfig{}})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	w.AddString("203.0.113.7")
	s := w.Stats()
	fmt.Println("periods covered:", s.Current-s.Oldest+1)
	fmt.Println("current period started less than a period ago:", time.Since(s.Start) < s.Period)
	fmt.Println("total:", s.Total)
	// Output:
	// periods covered: 5
	// current period started less than a period ago: true
	// total: 1
}

// Sketches frozen on several hosts (the same shape and seed) are shipped
// and merged into one.
func ExampleCountMin_Merge() {
	cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Seed: 0x5eed}
	east, _ := sketch.OpenCountMin(sketch.Memory(), cfg)
	west, _ := sketch.OpenCountMin(sketch.Memory(), cfg)
	all, _ := sketch.OpenCountMin(sketch.Memory(), cfg)
	defer east.Close()
	defer west.Close()
	defer all.Close()

	east.AddN([]byte("/login"), 40)
	west.AddN([]byte("/login"), 2)
	west.AddString("/search")
	if err := all.Merge(east, west); err != nil {
		log.Fatal(err)
	}
	fmt.Println(all.EstimateString("/login"), all.EstimateString("/search"), all.Total())
	// Output:
	// 42 1 43
}

// Allow counts a request and decides it against a limit in one call; a
// refusal says how many turns (and, on a window that follows the clock,
// how long) until one more request fits.
func ExampleCountMinWindow_Allow() {
	w, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	client := []byte("10.0.0.7")
	for range 3 {
		d, _ := w.Allow(client, 3, false) // false: refused requests do not count
		fmt.Println(d.Allowed(), d.Estimate())
	}
	d, _ := w.Allow(client, 3, false)
	fmt.Println(d.Allowed(), d.Counted(), d.Estimate(), d.Turns())
	w.Rotate() // the 3 requests are in the older period still
	d, _ = w.Allow(client, 3, false)
	fmt.Println(d.Allowed(), d.Turns())
	w.Rotate() // now they have left the window
	d, _ = w.Allow(client, 3, false)
	fmt.Println(d)
	// Output:
	// true 1
	// true 2
	// true 3
	// false false 3 2
	// false 1
	// allowed, counted: estimate 1 (low 0) in period 2
}

// AllowString decides a request keyed by a string as the server holds it
// (a header, an address), without a copy.
func ExampleCountMinWindow_AllowString() {
	w, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	for range 3 {
		d, _ := w.AllowString("token-17", 2, true) // true: refused requests count too
		fmt.Println(d.Allowed(), d.Counted(), d.Estimate())
	}
	// Output:
	// true true 1
	// true true 2
	// false true 3
}
