package sketch_test

import (
	"fmt"
	"log"

	"github.com/shmsketch/sketch"
)

// Requests by status code, counted exactly by every process that opens
// the structure: a server resolves each name once and adds with one
// atomic add; anything else reads the totals.
func ExampleOpenCounters() {
	codes, err := sketch.OpenCounters(sketch.Memory(), sketch.CountersConfig{
		Names: []string{"2xx", "4xx", "5xx"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer codes.Close()

	ok, err := codes.Counter("2xx") // resolved once, for the hot path
	if err != nil {
		log.Fatal(err)
	}
	for range 41 {
		ok.Add(1)
	}
	codes.Add("4xx", 2)
	if err := codes.Add("3xx", 1); err != nil {
		fmt.Println(err)
	}
	for _, c := range codes.Values() {
		fmt.Printf("%s %d\n", c.Name, c.Value)
	}
	// Output:
	// sketch: add in-memory sketch: invalid argument: no counter named "3xx"
	// 2xx 41
	// 4xx 2
	// 5xx 0
}
