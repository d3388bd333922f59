package sketch

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// TestDecision_FitsRegisters: a Decision stays a struct the compiler keeps
// in registers on 64-bit machines (at most four fields and 32 bytes), or
// every caller of Allow pays a copy through memory again (see Decision).
func TestDecision_FitsRegisters(t *testing.T) {
	if n, size := reflect.TypeFor[Decision]().NumField(), unsafe.Sizeof(Decision{}); n > 4 || size > 32 {
		t.Fatalf("Decision has %d fields in %d bytes, want at most 4 in 32 bytes", n, size)
	}
}

// TestDecision_Packs: every figure comes back as given, at the largest a
// window makes, and the zero Decision is a refusal of nothing.
func TestDecision_Packs(t *testing.T) {
	var zero Decision
	if zero.Allowed() || zero.Counted() || zero.Estimate() != 0 || zero.Low() != 0 || zero.Turns() != 0 || zero.RetryAfter() != 0 || zero.Period() != 0 {
		t.Fatalf("zero Decision = %v", zero)
	}
	for _, c := range []struct {
		allowed, counted bool
		est, low         uint64
		turns            int
		after            time.Duration
		period           uint64
	}{
		{true, true, 1, 0, 0, 0, 0},
		{false, true, cells.MaxCount, cells.MaxCount - 1, MaxWindowKeep, time.Duration(1<<63 - 1), maxPeriod},
		{false, false, 7, 3, 1, time.Second, 1<<47 - 1},
		{true, false, 0, 0, MaxWindowKeep - 1, 0, 12345},
	} {
		d := newDecision(c.allowed, c.counted, c.est, c.low, c.turns, c.after, c.period)
		if d.Allowed() != c.allowed || d.Counted() != c.counted || d.Estimate() != c.est || d.Low() != c.low ||
			d.Turns() != c.turns || d.RetryAfter() != c.after || d.Period() != c.period {
			t.Errorf("newDecision(%+v) reads back as %v", c, d)
		}
	}
}

// TestDecision_JSON: a decision marshals as what its methods say.
func TestDecision_JSON(t *testing.T) {
	d := newDecision(false, true, 12, 9, 2, 1500*time.Millisecond, 41)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"allowed":false,"counted":true,"estimate":12,"low":9,"turns":2,"retry_after":1500000000,"period":41}`
	if string(b) != want {
		t.Fatalf("json.Marshal = %s, want %s", b, want)
	}
	if got, want := d.String(), "refused, counted: estimate 12 (low 9) in period 41, 2 turns, retry after 1.5s"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}
