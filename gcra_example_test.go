package sketch_test

import (
	"fmt"
	"log"
	"time"

	"github.com/shmsketch/sketch"
)

// A rate limiter of one request a minute with a burst of 2: an idle
// client is allowed 3 at once, then told when to come back.
func ExampleOpenGCRA() {
	rate, err := sketch.ParseRate("1/m") // as nginx writes it: 1r/m
	if err != nil {
		log.Fatal(err)
	}
	g, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{Rate: rate, Burst: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC) // AllowAt: a fixed time, for the example
	for range 4 {
		d, err := g.AllowAt([]byte("198.51.100.7"), 1, at)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("allowed %v, %d left, retry after %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed true, 2 left, retry after 0s
	// allowed true, 1 left, retry after 0s
	// allowed true, 0 left, retry after 0s
	// allowed false, 0 left, retry after 1m0s
}

// Two limits decided together: 2 at once by a rate limiter, and 3 over a
// window. The third request is refused by the rate limiter and counts in
// neither.
func ExampleNewLimits() {
	g, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{Rate: sketch.Rate{Count: 1, Per: time.Hour}, Burst: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	w, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{
		Window: sketch.Window{Period: time.Hour, Keep: 2}, CountMin: sketch.CountMinConfig{ErrorRate: 0.001},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	limits, err := sketch.NewLimits(sketch.WindowLimit{Window: w, Limit: 3}, g)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		d, err := limits.AllowString("client", 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("allowed %v, refused by limit %d\n", d.Allowed, d.Refused)
	}
	fmt.Println("the window counted", w.EstimateString("client"))
	// Output:
	// allowed true, refused by limit -1
	// allowed true, refused by limit -1
	// allowed false, refused by limit 1
	// the window counted 2
}
