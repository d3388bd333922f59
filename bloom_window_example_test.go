package sketch_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/shmsketch/sketch"
)

// Deduplicate over the last two periods: a job seen in this period or the
// one before is skipped, one seen only earlier runs again. Give a Period
// to turn periods by the clock, the same in every process, instead of by
// Rotate.
func ExampleOpenBloomWindow() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	seen, err := sketch.OpenBloomWindow(sketch.Path(filepath.Join(dir, "seen.bwin")), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{
		Capacity: 100_000, // distinct keys a period...
		FPRate:   0.0005,  // ...at which a period's filter reads an absent key present
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer seen.Close()

	run := func(id string) {
		if already, _ := seen.AddString(id); already {
			fmt.Println("skip", id)
			return
		}
		fmt.Println("run", id)
	}
	run("job-1") // period 0
	run("job-1")
	seen.Rotate()
	run("job-1") // period 1: period 0 is still in the window
	run("job-2")
	seen.Rotate()
	seen.Rotate()
	fmt.Println("periods 2-3 have job-2:", seen.ContainsString("job-2"))
	run("job-2") // period 3: period 1 left the window
	// Output:
	// run job-1
	// skip job-1
	// skip job-1
	// run job-2
	// periods 2-3 have job-2: false
	// run job-2
}

// Stats says which periods Contains covers and how full each slot is (a
// fixed seed keeps the output the same on every run).
func ExampleBloomWindow_Stats() {
	w, err := sketch.OpenBloomWindow(sketch.Memory(), sketch.BloomWindowConfig{Window: sketch.Window{Period: time.Hour, Keep: 3}, Bloom: sketch.BloomConfig{Capacity: 1000, Seed: 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	for i := range 500 {
		w.AddString(fmt.Sprint("key-", i))
	}
	s := w.Stats()
	fmt.Println("periods covered:", s.Current-s.Oldest+1)
	for _, sl := range s.Slots {
		if sl.State == "current" {
			fmt.Printf("current slot: %d adds, fill %.1f\n", sl.Adds, sl.Fill)
		}
	}
	fmt.Println("false-positive rate now under 1%:", s.FPRateNow < 0.01)
	// Output:
	// periods covered: 3
	// current slot: 500 adds, fill 0.3
	// false-positive rate now under 1%: true
}
