package sketch

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkCountMinLanes adds the zipf stream blind (AddBatch without
// estimates, 64 keys a call) to the default shape from 1 or 2 writers,
// goroutines each with a handle of its own on one file (as processes
// have) or of one handle, each at its own place in the stream, with 1
// lane (today's layout) and with 2 and 4. ns/op is wall time a key:
// writers=1 over writers=2 is the speed-up.
func BenchmarkCountMinLanes(b *testing.B) {
	z, _, _ := benchStreams()
	for _, lanes := range []int{1, 2, 4} {
		for _, mode := range []string{"handles", "onehandle"} {
			for _, writers := range []int{1, 2} {
				if mode == "onehandle" && writers == 1 {
					continue // the same as one handle
				}
				b.Run(fmt.Sprintf("lanes=%d/%s/writers=%d", lanes, mode, writers), func(b *testing.B) {
					benchLaneWriters(b, z.bytes, lanes, writers, mode == "onehandle")
				})
			}
		}
	}
}

func benchLaneWriters(b *testing.B, keys [][]byte, lanes, writers int, oneHandle bool) {
	path := filepath.Join(b.TempDir(), "lanes")
	cfg := CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes}
	hs := make([]*CountMin, writers)
	for i := range hs {
		if i > 0 && oneHandle {
			hs[i] = hs[0]
			continue
		}
		c, err := OpenCountMin(Path(path), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		hs[i] = c
	}
	const batch = 64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w, c := range hs {
		n := (w+1)*b.N/writers - w*b.N/writers
		off := w * len(keys) / writers
		wg.Go(func() {
			for done := 0; done < n; done += batch {
				at := (off + done) % (len(keys) - batch)
				c.AddBatch(keys[at:at+min(batch, n-done)], nil)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "keys/s")
	}
}

// BenchmarkCountMinLanesOneWriter is Add (which returns the estimate, so
// reads every lane) and Estimate on the default shape from one writer,
// with 1 lane and with 2 and 4: what lanes cost a read.
func BenchmarkCountMinLanesOneWriter(b *testing.B) {
	z, _, _ := benchStreams()
	keys, mask := z.bytes, z.mask()
	for _, lanes := range []int{1, 2, 4} {
		c, err := OpenCountMin(Memory(), CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.Run(fmt.Sprintf("lanes=%d/Add", lanes), func(b *testing.B) {
			var sum uint64
			for i := range b.N {
				v, _ := c.Add(keys[i&mask])
				sum += v
			}
			benchSink.Add(sum)
		})
		b.Run(fmt.Sprintf("lanes=%d/Estimate", lanes), func(b *testing.B) {
			var sum uint64
			for i := range b.N {
				sum += c.Estimate(keys[i&mask])
			}
			benchSink.Add(sum)
		})
	}
}
