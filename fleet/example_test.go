package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet"
)

// An agent on each host syncs the gateway's arena through the fleet's
// Redis: every process of the host then answers for the fleet (limits,
// bans, replays, distinct clients) through the ordinary API. It needs a
// Redis, so it is compiled, not run; TestGateway_TwoHosts runs the same
// on two hosts against a real redis-server.
func Example() {
	// The gateway's arena, created on every host with the fleet's seed
	// (ArenaConfig.Seed, read from a file of the fleet's, never a command
	// line); the zero config attaches to it.
	arena, err := sketch.OpenArena(sketch.Path("/dev/shm/gateway.arena"), sketch.ArenaConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Close()

	rdb := redis.NewClient(&redis.Options{Addr: "10.0.0.5:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	host, _ := os.Hostname()
	agent, err := fleet.New(fleet.Config{Redis: rdb, Fleet: "gateway", Host: host, Interval: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close() // before the arena and the client
	// Every structure of a kind the agent syncs; the others are named in
	// an ErrNotSynced error and left out.
	if err := agent.AddArena(arena); err != nil && !errors.Is(err, fleet.ErrNotSynced) {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go agent.Run(ctx)                             // a round every Interval
	http.Handle("/metrics/fleet", agent)          // sketch_fleet_state and the rest
	for _, st := range agent.Stats().Structures { // synced, local (Redis unreachable) or refused
		fmt.Println(st.Name, st.State)
	}
	// The fleet's 10 loudest clients of a Count-Min window with
	// candidates and a fleet part, never below their fleet-wide counts.
	loud, err := agent.Top(ctx, "requests", 10)
	if err != nil {
		log.Print(err)
	}
	for _, h := range loud {
		fmt.Printf("%s\t%d (at least %d)\n", h.Key, h.Estimate, h.Low)
	}
}
