package sketch_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/shmsketch/sketch"
)

// An arena's metrics serve every structure's stats as JSON: publish them
// with expvar (expvar.Publish("sketch", metrics)) or serve them on a path
// of their own, as here. A monitoring process that may only read the file
// opens the arena with sketch.WithReadOnly() and does the same.
func ExampleArena_Metrics() {
	arena, err := sketch.OpenArena(sketch.Memory(), sketch.ArenaConfig{Size: 4 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Close()
	clients, err := sketch.OpenCountMin(arena.Place("clients"), sketch.CountMinConfig{ErrorRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	clients.AddString("192.0.2.1")
	clients.AddString("192.0.2.1")
	banned, err := sketch.OpenCountingBloom(arena.Place("banned"), sketch.CountingBloomConfig{Capacity: 10_000})
	if err != nil {
		log.Fatal(err)
	}
	defer banned.Close()
	banned.AddString("key-7")

	metrics := arena.Metrics()
	defer metrics.Close()
	mux := http.NewServeMux()
	mux.Handle("/debug/sketch", metrics)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/debug/sketch")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var scrape struct {
		Arena      struct{ Entries int }
		Structures []struct {
			Name  string
			Kind  string
			Stats map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&scrape); err != nil {
		log.Fatal(err)
	}
	fmt.Println("structures:", scrape.Arena.Entries)
	for _, s := range scrape.Structures {
		switch s.Kind {
		case "countmin":
			fmt.Printf("%s (%s): total %v, error bound %v\n", s.Name, s.Kind, s.Stats["total"], s.Stats["error_bound"])
		case "countingbloom":
			fmt.Printf("%s (%s): %v counters set\n", s.Name, s.Kind, s.Stats["set"])
		}
	}
	// Output:
	// structures: 2
	// clients (countmin): total 2, error bound 1
	// banned (countingbloom): 7 counters set
}
