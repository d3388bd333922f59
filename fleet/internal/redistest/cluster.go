package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster started by a test: three redis-server
// masters on loopback ports, each serving a third of the 16384 slots
// (Slots), stopped by their PIDs at the test's end.
type Cluster struct {
	// Addrs are the masters' addresses (127.0.0.1:port): Addrs[i] serves
	// Slots[i].
	Addrs []string
	nodes []*node
}

// Slots are the first and last slot each master of a Cluster serves.
var Slots = [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

// node is one redis-server of a cluster.
type node struct {
	cmd       *exec.Cmd
	out       bytes.Buffer // read only once exited is closed
	exited    chan struct{}
	port, bus int
}

// clusterDeadline bounds each wait for the cluster: a node answering,
// the nodes agreeing. Generous, for a loaded machine; the waits poll.
const clusterDeadline = 60 * time.Second

// StartCluster starts a Redis Cluster for the test and waits until every
// node says cluster_state:ok. Without redis-server the test skips, and
// fails under CI=true, as Start does.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	exe := serverPath(t)
	c := &Cluster{}
	t.Cleanup(func() {
		for i, n := range c.nodes {
			n.stop()
			if t.Failed() {
				t.Logf("redis-server %d (%s) output:\n%s", i, c.Addrs[i], n.out.String())
			}
		}
	})
	ctx := context.Background()
	var clients []*redis.Client
	for i := range Slots {
		n := c.startNode(t, exe, filepath.Join(t.TempDir(), "nodes.conf"))
		cl := nodeClient(t, c.Addrs[i])
		if err := cl.ClusterAddSlotsRange(ctx, Slots[i][0], Slots[i][1]).Err(); err != nil {
			t.Fatalf("redis-server %d: CLUSTER ADDSLOTSRANGE %d %d: %v", i, Slots[i][0], Slots[i][1], err)
		}
		if i > 0 {
			// The bus port is not port+10000 here: MEET names it.
			if err := clients[0].Do(ctx, "cluster", "meet", "127.0.0.1", n.port, n.bus).Err(); err != nil {
				t.Fatalf("redis-server 0: CLUSTER MEET %s: %v", c.Addrs[i], err)
			}
		}
		clients = append(clients, cl)
	}
	waitClusterOK(t, clients)
	return c
}

// Client is a cluster client of the cluster, closed at the test's end.
// Its reads and writes wait up to IOTimeout.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, DialTimeout: 5 * time.Second,
		ReadTimeout: IOTimeout, WriteTimeout: IOTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// Node is the index in Addrs of the master serving slot.
func (c *Cluster) Node(slot int) int {
	for i, r := range Slots {
		if slot >= r[0] && slot <= r[1] {
			return i
		}
	}
	return -1
}

// startNode starts a cluster node on free loopback ports, with its
// cluster state in conf, and waits until it answers. A port taken between
// choosing it and the bind is chosen again.
func (c *Cluster) startNode(t testing.TB, exe, conf string) *node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := freePorts(t, 2)
		n := &node{port: ports[0], bus: ports[1], exited: make(chan struct{})}
		n.cmd = exec.Command(exe, "--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-port", strconv.Itoa(n.bus),
			"--cluster-announce-ip", "127.0.0.1", "--dir", filepath.Dir(conf),
			"--save", "", "--appendonly", "no", "--daemonize", "no")
		n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		go func() { n.cmd.Wait(); close(n.exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))
		err := n.waitUp(addr)
		if err == nil {
			c.nodes, c.Addrs = append(c.nodes, n), append(c.Addrs, addr)
			return n
		}
		n.stop()
		if !strings.Contains(n.out.String(), "already in use") || attempt == 5 {
			t.Fatalf("redis-server on %s: %v; its output:\n%s", addr, err, n.out.String())
		}
		os.Remove(conf) // the failed node's identity: the next is a new node
	}
}

// waitUp polls the node until it answers, exits or the deadline passes.
// Each ping has a second: a port taken by another process may accept
// and never answer.
func (n *node) waitUp(addr string) error {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	defer cl.Close()
	deadline := time.Now().Add(clusterDeadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := cl.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-n.exited:
			return errors.New("exited before it answered")
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("did not answer within %v: %v", clusterDeadline, err)
		}
	}
}

// stop kills the node by its PID and waits for it.
func (n *node) stop() {
	n.cmd.Process.Kill()
	<-n.exited
}

// freePorts picks n distinct free loopback ports: each listener is held
// until all are picked, so that no two are the same.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("a free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// nodeClient is a client of one node, closed at the test's end. Its
// reads and writes wait up to IOTimeout.
func nodeClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second,
		ReadTimeout: IOTimeout, WriteTimeout: IOTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClusterOK polls every node's CLUSTER INFO until each says the
// cluster is ok and knows every node, so that each knows every slot's
// master.
func waitClusterOK(t testing.TB, clients []*redis.Client) {
	t.Helper()
	want := []string{"cluster_state:ok", "cluster_known_nodes:" + strconv.Itoa(len(clients))}
	deadline := time.Now().Add(clusterDeadline)
	for {
		bad, why := -1, ""
		for i, c := range clients {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, want[0]) || !strings.Contains(info, want[1]) {
				bad, why = i, fmt.Sprintf("%v\n%s", err, info)
				break
			}
		}
		if bad < 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %d: not %q within %v: CLUSTER INFO: %s", bad, want, clusterDeadline, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
