// Command sketch-fleet syncs a host's sketch files with the other hosts of
// a fleet through Redis (package fleet): run one on each host, with the
// same -fleet and Redis, and every process of every host reads fleet-wide
// answers from its own files.
//
//	sketch-fleet -redis redis://10.0.0.5:6379/0 -fleet gateway [-host NAME] [-interval 1s] FILE...
//
// With -cluster, -redis names nodes of a Redis Cluster
// (redis://10.0.0.5:6379?addr=10.0.0.6:6379).
//
// Each FILE is an arena (every structure of it is synced under its name in
// the arena) or a standalone structure (synced under the file's base
// name). Structures of kinds not synced yet are named and left out. With
// -once it runs one round and exits 0 when every structure synced, 1 when
// one did not; without, it runs rounds until SIGINT or SIGTERM, logs each
// change of a structure's state (synced, local, refused; synced from the
// agent's memory of hosts whose keys Redis lost) to stderr, and
// with -metrics ADDR serves the agent's state to Prometheus at
// http://ADDR/metrics. Bad arguments exit 2; a file that cannot be
// synced (missing, not a sketch file, nothing of a synced kind) exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command until ctx is done (SIGINT, SIGTERM).
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("sketch-fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("redis", "redis://127.0.0.1:6379/0", "the fleet's Redis: redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path/to/socket")
	cluster := fs.Bool("cluster", false, "-redis is a node of a Redis Cluster: redis://host:port, more nodes as ?addr=host2:port2&addr=host3:port3")
	name := fs.String("fleet", "", "the fleet's name, the same on every host (required)")
	hostname, _ := os.Hostname()
	host := fs.String("host", hostname, "this host's name, unique in the fleet")
	interval := fs.Duration("interval", time.Second, "time between rounds")
	timeout := fs.Duration("timeout", 0, "bound of a round's Redis calls (0: the interval)")
	once := fs.Bool("once", false, "run one round and exit: 0 when every structure synced, 1 otherwise")
	metrics := fs.String("metrics", "", "serve the agent's state in Prometheus's text format at http://ADDR/metrics (host:port; empty: off)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sketch-fleet -fleet NAME [-redis URL [-cluster]] [-host NAME] [-interval D] [-once] [-metrics ADDR] FILE...\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || *name == "" {
		fs.Usage()
		return 2
	}
	client, err := newClient(*url, *cluster)
	if err != nil {
		fmt.Fprintf(stderr, "sketch-fleet: -redis %q: %v\n", *url, err)
		return 2
	}
	defer client.Close()
	a, err := fleet.New(fleet.Config{Redis: client, Fleet: *name, Host: *host, Interval: *interval, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "sketch-fleet: %v\n", err)
		return 2
	}
	defer a.Close()
	if code := addFiles(a, fs.Args(), stderr); code != 0 {
		return code
	}
	if *once {
		if err := a.Sync(ctx); err != nil {
			fmt.Fprintf(stderr, "sketch-fleet: %v\n", err)
			return 1
		}
		return 0
	}
	if *metrics != "" {
		stop, err := serveMetrics(a, *metrics, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "sketch-fleet: -metrics: %v\n", err)
			return 1
		}
		defer stop()
	}
	rounds(ctx, a, *interval, stderr)
	return 0
}

// newClient is the client of the Redis at url: one server, or with
// cluster a Redis Cluster, which the agent works on as on one server (a
// structure's keys share a hash tag).
func newClient(url string, cluster bool) (redis.UniversalClient, error) {
	if cluster {
		opt, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, err
		}
		opt.ContextTimeoutEnabled = true // the agent's -timeout bounds each call
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

// addFiles hands the agent each file, naming those it leaves out; 1 when
// a file cannot be opened or nothing is left to sync.
func addFiles(a *fleet.Agent, paths []string, stderr io.Writer) int {
	for _, path := range paths {
		if err := a.AddFile(path); errors.Is(err, fleet.ErrNotSynced) {
			fmt.Fprintf(stderr, "sketch-fleet: %s: %v\n", path, err)
		} else if err != nil {
			fmt.Fprintf(stderr, "sketch-fleet: %v\n", err)
			return 1
		}
	}
	if len(a.Stats().Structures) == 0 {
		fmt.Fprintf(stderr, "sketch-fleet: nothing to sync (kinds synced: %v)\n", fleet.SyncedKinds())
		return 1
	}
	return 0
}

// serveMetrics serves the agent's state at http://addr/metrics until stop.
func serveMetrics(a *fleet.Agent, addr string, stderr io.Writer) (stop func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "sketch-fleet: metrics at http://%s/metrics\n", ln.Addr())
	return srv.Close, nil
}

// rounds runs the rounds of Agent.Run, each followed by its log lines,
// until ctx is done.
func rounds(ctx context.Context, a *fleet.Agent, every time.Duration, stderr io.Writer) {
	seen := map[string]string{}
	if every == 0 {
		every = time.Second // the agent's default (fleet.Config.Interval)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		a.Sync(ctx)
		logChanges(a, seen, stderr)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// logChanges writes each change of a structure's state since the last
// call (seen), with its error, or with the hosts a good round summed from
// the agent's memory (their keys gone from Redis).
func logChanges(a *fleet.Agent, seen map[string]string, w io.Writer) {
	for _, s := range a.Stats().Structures {
		state := s.State
		if s.State == fleet.StateSynced && s.Remembered > 0 {
			state = fmt.Sprintf("%s (%d hosts' counts from memory, their keys gone from Redis)", s.State, s.Remembered)
			if s.Remembered == 1 {
				state = s.State + " (1 host's counts from memory, its key gone from Redis)"
			}
		}
		if state == seen[s.Name] || s.State == fleet.StateIdle {
			continue
		}
		seen[s.Name] = state
		if s.LastError != "" {
			fmt.Fprintf(w, "sketch-fleet: %s %q: %s: %s\n", s.Kind, s.Name, state, s.LastError)
		} else {
			fmt.Fprintf(w, "sketch-fleet: %s %q: %s\n", s.Kind, s.Name, state)
		}
	}
}
