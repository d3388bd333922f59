package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// BenchmarkSync_GCRA: a round of a rate limiter of the default shape (4 x
// 32768 times) with that many keys busy (each key's whole burst used, so
// busy for the window, 2.1 s at 10/s), against a real Redis with two
// other hosts' times of the same size; bytes/push is the size of this
// host's export (what a round sends, and reads back per other host).
func BenchmarkSync_GCRA(b *testing.B) {
	rs := redistest.Start(b)
	for _, rate := range []sketch.Rate{{Count: 10, Per: time.Second}, {Count: 1, Per: time.Minute}} {
		for _, busy := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("rate=%v/busy=%d", rate, busy), func(b *testing.B) {
				cfg := sketch.GCRAConfig{Rate: rate, Burst: 20, Seed: 0x5}
				name := fmt.Sprintf("bench-%d-%d", rate.Count, busy)
				var agents []*Agent
				var gs []*sketch.GCRA
				for h := range 3 {
					a := newAgent(b, rs, fmt.Sprint("host", h))
					g := mustOpen(b, sketch.OpenGCRA, sketch.Memory(), cfg)
					if err := a.AddGCRA(name, g); err != nil {
						b.Fatal(err)
					}
					for i := range busy { // each key's whole burst: busy a window
						g.AllowString(fmt.Sprint(h, "-", i), cfg.Burst+1)
					}
					agents, gs = append(agents, a), append(gs, g)
				}
				exp, err := gs[0].ExportTimes()
				if err != nil {
					b.Fatal(err)
				}
				cells := gs[0].Stats().Busy
				mustSync(b, agents[1], agents[2])
				b.ResetTimer()
				for b.Loop() {
					if err := agents[0].Sync(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(exp)), "bytes/push")
				b.ReportMetric(float64(len(exp))/float64(cells), "bytes/busy-cell")
			})
		}
	}
}
