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

// Loud keys come from clients (addresses, e-mails, session ids): with
// WithHashedKeys the heavy-hitter series carry a keyed hash of each key,
// which whoever holds the secret can compute for a client they look for.
func ExampleWithHashedKeys() {
	arena, err := sketch.OpenArena(sketch.Memory(), sketch.ArenaConfig{Size: 4 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Close()
	clients, err := sketch.OpenCountMin(arena.Place("clients"), sketch.CountMinConfig{ErrorRate: 0.001, Candidates: 10})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	clients.AddN([]byte("alice@example.org"), 30)

	secret := []byte("32 random bytes, on every host..") // from the service's secrets
	metrics := arena.Metrics()
	defer metrics.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewArenaCollector(metrics, prom.WithHashedKeys(secret)))
	fams, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "sketch_heavy_hitter_estimate" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "key" {
					fmt.Println(l.GetValue(), m.GetGauge().GetValue())
				}
			}
		}
	}
	fmt.Println(prom.HashKey(secret, "alice@example.org"))
	// Output:
	// cf587ba85e9bbe64 30
	// cf587ba85e9bbe64
}
