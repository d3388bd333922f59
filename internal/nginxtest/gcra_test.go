package nginxtest

import (
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// TestNginx_GCRAKindDecidesAsNginx replays a seeded trace through a real
// nginx (limit_req rate=10r/s burst=20 nodelay) and feeds nginx's times
// to the library's rate limiter (sketch.GCRA) at the same rate and burst,
// twice:
//
//   - in a grid far wider than the trace's keys, every decision is
//     nginx's. A request within the clocks' slack of a boundary (see
//     TestNginx_LimitReqMatchesGCRA) is decided at its time moved by the
//     slack towards nginx's answer, which the model says is enough.
//   - in a grid of 1 x 2 cells, where the keys collide, the limiter is
//     never more lenient than the algorithm applied to the requests it
//     allowed; the decisions stricter than nginx's are counted.
func TestNginx_GCRAKindDecidesAsNginx(t *testing.T) {
	res := Replay(t, GenerateTrace(1))
	cfg := sketch.GCRAConfig{Rate: sketch.Rate{Count: 10, Per: time.Second}, Burst: Burst}
	if cfg.Rate.Interval() != Interval {
		t.Fatalf("the limiter's interval %v, nginx's %v", cfg.Rate.Interval(), Interval)
	}
	wide := openGCRA(t, cfg, 4, 1<<16)
	nginx := newGCRAModel(Interval, Burst) // follows nginx
	ms := int64(time.Millisecond)
	shifted := 0
	for i, r := range res {
		now := r.MS * ms
		newTat, margin := nginx.margin(r.Key, now, 1)
		if slack := (2 + r.Spread) * ms; -slack <= margin && margin <= slack {
			shifted++
			if r.Allowed {
				now += slack
			} else {
				now -= slack
			}
		}
		d, err := wide.AllowAt([]byte(r.Key), 1, time.Unix(0, now))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != r.Allowed {
			t.Errorf("request %d (%q at %d ms): nginx allowed = %v, the limiter %v (%+v)", i, r.Key, r.MS, r.Allowed, d.Allowed, d)
		}
		nginx.follow(r.Key, newTat, r.Allowed)
	}
	tiny := openGCRA(t, cfg, 1, 2)
	own := newGCRAModel(Interval, Burst) // follows the tiny grid's decisions
	stricter := 0
	for i, r := range res {
		now := r.MS * ms
		d, err := tiny.AllowAt([]byte(r.Key), 1, time.Unix(0, now))
		if err != nil {
			t.Fatal(err)
		}
		newTat, margin := own.margin(r.Key, now, 1)
		if d.Allowed && margin > 0 {
			t.Errorf("request %d (%q at %d ms): the colliding limiter allowed what the key alone would not (margin %v)", i, r.Key, r.MS, time.Duration(margin))
		}
		if !d.Allowed && r.Allowed {
			stricter++
		}
		own.follow(r.Key, newTat, d.Allowed)
	}
	t.Logf("%d requests; in the wide grid all as nginx (%d near a boundary decided at a time moved by the slack); in a 1 x 2 grid %d refused that nginx allowed",
		len(res), shifted, stricter)
	if stricter == 0 {
		t.Errorf("no collision in a 1 x 2 grid made the limiter stricter: the check tests nothing")
	}
}

func openGCRA(t *testing.T, cfg sketch.GCRAConfig, rows, width int) *sketch.GCRA {
	t.Helper()
	cfg.Rows, cfg.Width = rows, width
	g, err := sketch.OpenGCRA(sketch.Memory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}
