package prom_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/prom"
)

// A service exports every structure of its arena on /metrics; Prometheus
// scrapes each host and sums them: sum by (structure)
// (rate(sketch_adds_total[1m])).
func ExampleNewArenaCollector() {
	arena, err := sketch.OpenArena(sketch.Memory(), 4<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Close()
	clients, err := sketch.OpenCountMin(arena.Place("clients"), sketch.CountMinConfig{ErrorRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	clients.AddN([]byte("192.0.2.1"), 3)

	metrics := arena.Metrics()
	defer metrics.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewArenaCollector(metrics))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "sketch_adds_total") || strings.HasPrefix(l, "sketch_arena_structures") {
			fmt.Println(l)
		}
	}
	// Output:
	// sketch_adds_total{kind="countmin",structure="clients"} 3
	// sketch_arena_structures 1
}
