package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestStartCluster: a key is stored on the master Node names for its
// slot, so that keys of the three masters' slots leave one key on each,
// and a call over two slots is refused (CROSSSLOT), as on any Redis
// Cluster.
func TestStartCluster(t *testing.T) {
	c := StartCluster(t)
	cl := c.Client(t)
	ctx := context.Background()
	seen := map[int]string{}
	for i := 0; len(seen) < len(c.Addrs) && i < 1000; i++ {
		key := fmt.Sprint("k", i)
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		if _, ok := seen[c.Node(int(slot))]; !ok {
			seen[c.Node(int(slot))] = key
		}
	}
	for _, key := range seen {
		if err := cl.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}
	for i, addr := range c.Addrs {
		n, err := nodeClient(t, addr).DBSize(ctx).Result()
		if err != nil || n != 1 {
			t.Errorf("DBSIZE of node %d = %d, %v; want 1, its key %s", i, n, err, seen[i])
		}
	}
	err := cl.Do(ctx, "eval", "return redis.call('GET', KEYS[1])", 2, seen[0], seen[1]).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL over keys of two nodes = %v, want CROSSSLOT", err)
	}
}
