package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

func TestFaultRow_ProblemsAndFailuresAreViolations(t *testing.T) {
	clean := *newFaultReport()
	bad := *newFaultReport()
	bad.problem("cm: answer(%q) = %d, want %d", "k", 2, 1)
	bad.problem("bloom: Check: %v", "damage")
	tests := []struct {
		name      string
		reps      []faultReport
		failures  []string
		want      int
		wantFirst string
	}{
		{"clean", []faultReport{clean, clean}, nil, 0, ""},
		{"two problems", []faultReport{clean, bad}, nil, 2, `answer("k") = 2, want 1`},
		{"a child that died", []faultReport{clean}, []string{"cgo child fds: signal: segmentation fault"}, 1, "segmentation fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := faultRow("1 run", tt.reps, tt.failures, "figure")
			if r.violations != tt.want {
				t.Errorf("violations = %d, want %d", r.violations, tt.want)
			}
			if !strings.Contains(r.figure, tt.wantFirst) {
				t.Errorf("figure %q lacks the first problem %q", r.figure, tt.wantFirst)
			}
		})
	}
}

func TestStopRow_Verdicts(t *testing.T) {
	c := stopCases[0]
	ok := stopRound{c: c, holder: "purego", waiter: "cgo", stops: 1, resumed: 5 * time.Millisecond}
	in, lost, gaveUp, slow := ok, ok, ok, ok
	in.inWhileStopped = true
	lost.lostLock = true
	gaveUp.waiterErr = "waiter (cgo): exit status 1"
	slow.resumed = 3 * slowRecovery
	looping := slow
	looping.c = stopCases[2]
	busy := ok // the holder itself slow to finish its call: not the lock's doing
	busy.finished, busy.resumed = 2*slowRecovery, 2*slowRecovery+time.Millisecond
	tests := []struct {
		name  string
		round stopRound
		want  int
	}{
		{"prompt", ok, 0},
		{"in while stopped", in, 1},
		{"lock lost during the stop", lost, 1},
		{"waiter gave up", gaveUp, 1},
		{"slow hand-over", slow, 1},
		{"slow holder, prompt hand-over", busy, 0},
		{"slow hand-over to a looping holder", looping, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := stopRow([]stopRound{ok, tt.round}, time.Second)
			if r.violations != tt.want {
				t.Errorf("violations = %d, want %d; figure: %s", r.violations, tt.want, r.figure)
			}
		})
	}
}

func TestErrorClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("sketch: open /x: %w: 1 bytes: %w", sketch.ErrNoSpace, syscall.ENOSPC), "ErrNoSpace"},
		{fmt.Errorf("sketch: open /x: %w", syscall.ENOSPC), "ENOSPC"},
		{fmt.Errorf("sketch: open /x: %w", syscall.EMFILE), "EMFILE"},
		{fmt.Errorf("sketch: add /x: %w", sketch.ErrReadOnly), "ErrReadOnly"},
		{fmt.Errorf("sketch: open /x: %w", syscall.EROFS), "EROFS"},
		{errors.New("something else"), "other"},
	}
	for _, tt := range tests {
		if got := errorClass(tt.err); got != tt.want {
			t.Errorf("errorClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// The shapes a fault asks for reach the size it means, and no more than
// the next step of the kind's geometry.
func TestCapacityFor(t *testing.T) {
	for _, size := range []uint64{16 << 10, 100 << 10, 3 << 20} {
		cfg := bloomFor(size)
		got, err := cfg.Bytes()
		if err != nil || got < size {
			t.Errorf("bloomFor(%d).Bytes() = %d, %v; want >= %d", size, got, err, size)
		}
		less, _ := sketch.BloomConfig{Capacity: cfg.Capacity - 1, FPRate: cfg.FPRate}.Bytes()
		if less >= size {
			t.Errorf("bloomFor(%d) = capacity %d, but %d reaches %d bytes already", size, cfg.Capacity, cfg.Capacity-1, less)
		}
	}
}

func TestGuarded_PanicIsError(t *testing.T) {
	err := guarded(func() error { panic("boom") })
	if !errors.Is(err, errPanic) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("guarded(panic) = %v, want errPanic with the value", err)
	}
	if err := guarded(func() error { return nil }); err != nil {
		t.Errorf("guarded(nil) = %v", err)
	}
}
