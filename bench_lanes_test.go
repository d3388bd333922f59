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
// lane (today's layout) and with 2 and 4, and 4 writers, more than the
// machine's cores when it has two. ns/op is wall time a key: writers=1
// over writers=2 is the speed-up.
func BenchmarkCountMinLanes(b *testing.B) {
	z, _, _ := benchStreams()
	for _, lanes := range []int{1, 2, 4} {
		for _, mode := range []string{"handles", "onehandle"} {
			for _, writers := range []int{1, 2, 4} {
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

// BenchmarkCountMinConservative is BenchmarkCountMinLanes's blind
// writers, handles each, and BenchmarkCountMinLanesOneWriter's Add, with
// plain adds and with conservative update (a load and a store a counter,
// in the Go core in both builds), at 1, 2 and 4 lanes.
func BenchmarkCountMinConservative(b *testing.B) {
	z, _, _ := benchStreams()
	keys, mask := z.bytes, z.mask()
	for _, lanes := range []int{1, 2, 4} {
		for _, cu := range []bool{false, true} {
			if lanes == 1 && !cu {
				continue // BenchmarkCountMinLanes's one grid
			}
			name := fmt.Sprintf("lanes=%d/conservative=%v", lanes, cu)
			for _, writers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/blind/writers=%d", name, writers), func(b *testing.B) {
					benchLaneWritersCfg(b, keys, CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes, ConservativeUpdate: cu}, writers, false)
				})
			}
			b.Run(name+"/Add", func(b *testing.B) {
				c, err := OpenCountMin(Memory(), CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes, ConservativeUpdate: cu})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				var sum uint64
				for i := range b.N {
					v, _ := c.Add(keys[i&mask])
					sum += v
				}
				benchSink.Add(sum)
			})
		}
	}
}

func benchLaneWriters(b *testing.B, keys [][]byte, lanes, writers int, oneHandle bool) {
	benchLaneWritersCfg(b, keys, CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes}, writers, oneHandle)
}

func benchLaneWritersCfg(b *testing.B, keys [][]byte, cfg CountMinConfig, writers int, oneHandle bool) {
	path := filepath.Join(b.TempDir(), "lanes")
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

// BenchmarkWritersWithoutLanes adds the zipf and uniform streams to a
// Bloom filter and a distinct count from 1 or 2 writers, goroutines each
// with a handle of its own on one file, by Add and by AddBatch x64: the
// kinds that keep no lanes (docs/DESIGN.md, "Lanes"). A set bit or a
// register at its rank is not written again, and each handle counts its
// adds in a stripe of its own, so writers share lines read-only and
// scale without lanes. ns/op is wall time a key.
func BenchmarkWritersWithoutLanes(b *testing.B) {
	z, u, _ := benchStreams()
	for _, st := range []*benchStream{z, u} {
		for _, kind := range []string{"bloom", "distinct"} {
			for _, op := range []string{"Add", "AddBatch"} {
				for _, writers := range []int{1, 2} {
					b.Run(fmt.Sprintf("%s/%s/%s/writers=%d", st.name, kind, op, writers), func(b *testing.B) {
						benchWritersWithoutLanes(b, st.bytes, kind, op == "AddBatch", writers)
					})
				}
			}
		}
	}
}

func benchWritersWithoutLanes(b *testing.B, keys [][]byte, kind string, batched bool, writers int) {
	path := filepath.Join(b.TempDir(), kind)
	adds := make([]func([]byte) error, writers)
	batches := make([]func([][]byte) error, writers)
	for i := range writers {
		switch kind {
		case "bloom":
			f, err := OpenBloom(Path(path), BloomConfig{Capacity: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			adds[i] = func(k []byte) error { _, err := f.Add(k); return err }
			batches[i] = func(k [][]byte) error { return f.AddBatch(k, nil) }
		default:
			d, err := OpenDistinct(Path(path), DistinctConfig{Precision: 14})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			adds[i], batches[i] = d.Add, d.AddBatch
		}
	}
	const batch = 64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		n := (w+1)*b.N/writers - w*b.N/writers
		off := w * len(keys) / writers
		wg.Go(func() {
			for done := 0; done < n; done += batch {
				at := (off + done) % (len(keys) - batch)
				ks := keys[at : at+min(batch, n-done)]
				if batched {
					if err := batches[w](ks); err != nil {
						b.Error(err)
						return
					}
					continue
				}
				for _, k := range ks {
					if err := adds[w](k); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
