package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A part that cannot run says why and passes, except under CI=true.
func TestCannotRun_ViolationOnlyUnderCI(t *testing.T) {
	for _, ci := range []string{"", "false", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := cannotRun("a test", "no qemu")
			want := 0
			if ci == "true" {
				want = 1
			}
			if r.violations != want || !strings.Contains(r.figure, "no qemu") {
				t.Errorf("cannotRun under CI=%q = %+v, want %d violations and the reason", ci, r, want)
			}
		})
	}
}

// findCross says why a cross build cannot run: none given, a missing
// file, or a missing qemu-user.
func TestFindCross_Reasons(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "torture.arm64")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	saved := qemuFor["arm64"]
	t.Cleanup(func() { qemuFor["arm64"] = saved })
	qemuFor["arm64"] = "no-such-qemu-for-this-test"

	tests := []struct {
		name  string
		paths map[string]string
		want  string
	}{
		{"not given", map[string]string{}, "no -arm64 build given"},
		{"missing file", map[string]string{"arm64": bin + ".gone"}, "no such file"},
		{"no qemu", map[string]string{"arm64": bin}, "no-such-qemu-for-this-test not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, why := findCross(tt.paths, "arm64")
			if !strings.Contains(why, tt.want) {
				t.Errorf("findCross: %q, want it to say %q", why, tt.want)
			}
		})
	}
}

// A slow recovery, a live holder taken for dead, and a wrong START in PID
// mode are each a violation; a wrong START in OFD mode is not (the lock
// byte answers there), nor is /proc/self/stat lying.
func TestKillRows_Violations(t *testing.T) {
	plan := archPlanFile{Procs: []archProcess{{Who: whoArm64, Steps: 10, InFlight: []uint64{3}}}, Killed: true}
	timings := []killTiming{{took: time.Millisecond}, {took: 2 * slowRecovery, inClear: true, held: true}}
	tokens := []tokenFinding{
		{records: 1, self: 1, real: 2},                          // OFD, START wrong: the byte answers
		{records: 2, pidMode: 1, wrongPID: 1, self: 3, real: 3}, // PID mode, START wrong
		{records: 1, pidMode: 1, startRight: 1, self: 5, real: 4},
		{},
	}
	rows := killRows([]string{"counts", "lock", "token"}, plan, nil, map[string]error{"cgo": nil}, timings, tokens, 1, 10)
	if got := rows[0].violations; got != 0 {
		t.Errorf("counts row: %d violations, want 0", got)
	}
	if got := rows[1].violations; got != 2 {
		t.Errorf("lock row: %d violations, want 2 (one slow, one live holder taken for dead): %s", got, rows[1].figure)
	}
	if got := rows[2].violations; got != 2 {
		t.Errorf("token row: %d violations, want 2 (a wrong START in PID mode, a record not found): %s", got, rows[2].figure)
	}
	if !strings.Contains(rows[2].figure, "in 2 of 4 starts (1 instead of 2") {
		t.Errorf("token row figure %q does not count the made-up /proc/self/stat", rows[2].figure)
	}
}
