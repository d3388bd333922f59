package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestRun_Cluster: with -cluster, -redis names nodes of a Redis Cluster
// (two of its three), and two hosts' rounds through it make each find the
// other's keys.
func TestRun_Cluster(t *testing.T) {
	c := redistest.StartCluster(t)
	url := "redis://" + c.Addrs[0] + "?addr=" + c.Addrs[1] + "&" + slowURL
	cfg := sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 0xc1}
	var paths []string
	for h := range 2 {
		path := filepath.Join(t.TempDir(), "seen")
		b, err := sketch.OpenBloom(sketch.Path(path), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b.AddString("id-" + string(rune('a'+h)))
		b.Close()
		paths = append(paths, path)
	}
	for _, h := range []int{0, 1, 0} {
		var stderr bytes.Buffer
		if code := run(context.Background(), append(slow, "-cluster", "-redis", url, "-fleet", "test", "-host", string(rune('a'+h)), "-once", paths[h]), &stderr); code != 0 {
			t.Fatalf("host %d: exit %d: %s", h, code, stderr.String())
		}
	}
	for h, path := range paths {
		b, err := sketch.OpenBloom(sketch.Path(path), sketch.BloomConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		for _, k := range []string{"id-a", "id-b"} {
			if !b.ContainsString(k) {
				t.Errorf("host %d: %s not found after rounds through the cluster", h, k)
			}
		}
	}
}
