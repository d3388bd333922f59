package sketch

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func limitsWindow(t *testing.T) *CountMinWindow {
	t.Helper()
	w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func mustLimits(t *testing.T, ls ...Limit) *Limits {
	t.Helper()
	l, err := NewLimits(ls...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLimits_RefusalCountsInNone: a rate limiter (5 at once) and a window
// of 3: the window refuses the 4th request, which the rate limiter then
// has not counted (it has 2 left, not 1); the other way round, the rate
// limiter refuses and the window has not counted.
func TestLimits_RefusalCountsInNone(t *testing.T) {
	g := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 4, Rows: 4, Width: 64})
	w := limitsWindow(t)
	ls := mustLimits(t, g, WindowLimit{w, 3})
	for i := range 6 {
		d, err := ls.AllowString("k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; d.Allowed != want || (!want && (d.Refused != 1 || d.RetryAfter <= 0 || d.Overcounted)) {
			t.Fatalf("request %d: %+v, want allowed %v (else refused by limit 1 with a retry-after)", i+1, d, want)
		}
	}
	if p, _ := g.AllowString("k", 0); p.Remaining != 2 {
		t.Errorf("the rate limiter has %d left, want 2: the refused requests counted in it", p.Remaining)
	}
	if s := g.Stats(); s.Allowed != 3 || s.Refused != 0 {
		t.Errorf("the rate limiter decided %d allowed, %d refused; want 3 and 0", s.Allowed, s.Refused)
	}

	g2 := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 1, Rows: 4, Width: 64})
	w2 := limitsWindow(t)
	ls2 := mustLimits(t, WindowLimit{w2, 10}, g2)
	for i := range 5 {
		d, err := ls2.AllowString("k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 2; d.Allowed != want || (!want && (d.Refused != 1 || d.RetryAfter < 59*time.Minute)) {
			t.Fatalf("request %d: %+v, want allowed %v (else refused by limit 1, retry in about an hour)", i+1, d, want)
		}
	}
	if est := w2.EstimateString("k"); est != 2 {
		t.Errorf("the window counted %d, want 2: the refused requests counted in it", est)
	}
}

// TestLimits_LongestRetryAfter: when several limits refuse, the answer
// waits for the longest.
func TestLimits_LongestRetryAfter(t *testing.T) {
	fast := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Rows: 4, Width: 64})
	slow := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Hour}, Rows: 4, Width: 64})
	w := limitsWindow(t)
	ls := mustLimits(t, fast, slow, WindowLimit{w, 100})
	if d, err := ls.AllowString("k", 1); err != nil || !d.Allowed {
		t.Fatalf("first request: %+v, %v", d, err)
	}
	d, err := ls.AllowString("k", 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Refused != 0 || d.RetryAfter < 59*time.Minute || d.Overcounted {
		t.Errorf("second request: %+v, want refused by limit 0 with the slow limit's retry-after", d)
	}
	if est := w.EstimateString("k"); est != 1 {
		t.Errorf("the window counted %d, want 1", est)
	}
}

// TestLimits_LongestRetryAfterOfTheLast: when the first limit refuses,
// the last, which Allow would otherwise decide by counting, is read for
// its retry-after too: the answer waits for the slow limit in either
// place, and nothing is counted.
func TestLimits_LongestRetryAfterOfTheLast(t *testing.T) {
	for _, slowLast := range []bool{true, false} {
		fast := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Rows: 4, Width: 64})
		slow := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Hour}, Rows: 4, Width: 64})
		ls := mustLimits(t, fast, slow)
		if !slowLast {
			ls = mustLimits(t, slow, fast)
		}
		if d, err := ls.AllowString("k", 1); err != nil || !d.Allowed {
			t.Fatalf("slow last %v: first request: %+v, %v", slowLast, d, err)
		}
		d, err := ls.AllowString("k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.Refused != 0 || d.RetryAfter < 59*time.Minute || d.Overcounted {
			t.Errorf("slow last %v: second request: %+v, want refused by limit 0 with the slow limit's retry-after", slowLast, d)
		}
		if s := fast.Stats(); s.Allowed != 1 || s.Refused != 0 {
			t.Errorf("slow last %v: the fast limiter decided %d allowed, %d refused; want 1 and 0", slowLast, s.Allowed, s.Refused)
		}
		if s := slow.Stats(); s.Allowed != 1 || s.Refused != 0 {
			t.Errorf("slow last %v: the slow limiter decided %d allowed, %d refused; want 1 and 0", slowLast, s.Allowed, s.Refused)
		}
	}
}

// TestLimits_RacingNeverPastEither: goroutines of two handles decide one
// key against a rate limiter of 50 at once and a window of 80: never more
// than 50 allowed; the rate limiter counted exactly the allowed ones, and
// the window the allowed ones plus those refused after counting there
// (Overcounted).
func TestLimits_RacingNeverPastEither(t *testing.T) {
	path := tempPath(t, "gcra")
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 49, Rows: 4, Width: 64}
	w := limitsWindow(t)
	var lss [2]*Limits
	var gs [2]*GCRA
	for i := range lss {
		g, err := OpenGCRA(Path(path), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		gs[i], lss[i] = g, mustLimits(t, g, WindowLimit{w, 80})
	}
	var mu sync.Mutex
	allowed, over := 0, 0
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				d, err := lss[i%2].AllowString("k", 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					allowed++
				}
				if d.Overcounted {
					over++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed > 50 {
		t.Errorf("%d allowed, past the rate limiter's 50", allowed)
	}
	if s := gs[0].Stats(); s.Allowed != uint64(allowed) {
		t.Errorf("the rate limiter counted %d, want the %d allowed", s.Allowed, allowed)
	}
	if est := w.EstimateString("k"); est != uint64(allowed+over) {
		t.Errorf("the window counted %d, want %d allowed + %d overcounted", est, allowed, over)
	}
	t.Logf("%d allowed, %d overcounted", allowed, over)
}

// TestLimits_Refusals: what NewLimits and Allow refuse.
func TestLimits_Refusals(t *testing.T) {
	w := limitsWindow(t)
	g := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Rows: 2, Width: 16})
	var nilG *GCRA
	for _, bad := range [][]Limit{nil, {nil}, {nilG}, {WindowLimit{nil, 1}}, {WindowLimit{w, 0}}} {
		if _, err := NewLimits(bad...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewLimits(%v): %v, want ErrInvalidArgument", bad, err)
		}
	}
	ls := mustLimits(t, g, WindowLimit{w, 5})
	if _, err := ls.AllowString("k", 2); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a cost of 2 with a window: %v, want ErrInvalidArgument", err)
	}
	if s := g.Stats(); s.Allowed != 0 {
		t.Errorf("a refused call counted in the rate limiter")
	}
	g.Close()
	if _, err := ls.AllowString("k", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("with a closed limit: %v, want ErrClosed", err)
	}
}
