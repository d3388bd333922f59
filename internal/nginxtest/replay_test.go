package nginxtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		i    int
		want Result
	}{
		{"0 burst 200 1700000000.123 0.000", 0, Result{Key: "burst", MS: 1700000000123, Allowed: true}},
		{"17 a%2Fb 429 1700000001.005 0.002", 17, Result{Key: "a/b", MS: 1700000001003, Spread: 2}},
	}
	for _, tt := range tests {
		i, got, err := parseLine(tt.line)
		if err != nil || i != tt.i {
			t.Errorf("parseLine(%q) = %d, _, %v, want %d, nil", tt.line, i, err, tt.i)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseLine(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
	for _, line := range []string{
		"", "0 k 200 1700000000.123", "x k 200 1700000000.123 0.000",
		"0 k 503 1700000000.123 0.000", "0 k 200 1700000000.12 0.000", "0 k 200 1700000000 0.000",
	} {
		if _, _, err := parseLine(line); err == nil {
			t.Errorf("parseLine(%q) succeeded, want an error", line)
		}
	}
}
