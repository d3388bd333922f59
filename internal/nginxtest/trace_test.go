package nginxtest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGenerateTrace_Seeded(t *testing.T) {
	a, b := GenerateTrace(1), GenerateTrace(1)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("GenerateTrace(1) twice differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(a, GenerateTrace(2)); diff == "" {
		t.Fatalf("GenerateTrace(1) and GenerateTrace(2) are the same trace")
	}
	if len(a) < 300 || len(a) > 2000 {
		t.Errorf("GenerateTrace(1) has %d requests, want 300 to 2000", len(a))
	}
	keys := make(map[string]int)
	for i, r := range a {
		if r.At < 0 || r.At >= 15*time.Second || (i > 0 && r.At < a[i-1].At) {
			t.Fatalf("request %d at %v: want ordered offsets in [0, 15s)", i, r.At)
		}
		keys[r.Key]++
	}
	for _, k := range []string{"burst", "over", "edge", "idle", "mixed0", "mixed1", "mixed2"} {
		if keys[k] == 0 {
			t.Errorf("GenerateTrace(1) has no request on %q (keys: %v)", k, keys)
		}
	}
}
