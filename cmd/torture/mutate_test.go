package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

func TestSentinelName(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("sketch: open x: %w", sketch.ErrChecksum), "ErrChecksum"},
		{fmt.Errorf("sketch: open x: %w: short", sketch.ErrCorrupt), "ErrCorrupt"},
		{fmt.Errorf("sketch: check x: %w", sketch.ErrTornAdd), "ErrTornAdd"},
		{fmt.Errorf("sketch: check x: %w", sketch.ErrDamaged), "ErrDamaged"},
		{sketch.ErrInconsistent, "ErrInconsistent"},
		{fmt.Errorf("sketch: open x: %w", sketch.ErrByteOrder), "ErrByteOrder"},
		{errors.New("mmap: invalid argument"), unclassified},
	}
	for _, tt := range tests {
		if got := sentinelName(tt.err); got != tt.want {
			t.Errorf("sentinelName(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestClassifyExit(t *testing.T) {
	exit2 := errors.New("exit status 2")
	tests := []struct {
		name    string
		err     error
		stderr  string
		want    childExit
		harness bool
	}{
		{"runtime fault", exit2, "unexpected fault address 0x7f0000001000\nfatal error: fault\n[signal SIGBUS: bus error code=0x2 addr=0x7f0000001000 pc=0x4a1b2c]\n\ngoroutine 1 [running]:\n",
			childExit{"signal", "SIGBUS: unexpected fault address 0x7f0000001000"}, false},
		{"segfault in C", exit2, "SIGSEGV: segmentation violation\nPC=0x7f3 m=0 sigcode=1\nsignal arrived during cgo execution\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x7f3]\n",
			childExit{"signal", "SIGSEGV: SIGSEGV: segmentation violation"}, false},
		{"unrecovered panic", exit2, "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 7 [running]:\n",
			childExit{"panic", "panic: runtime error: index out of range [5] with length 3"}, false},
		{"deadlock", exit2, "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n",
			childExit{"crash", "fatal error: all goroutines are asleep - deadlock!"}, false},
		{"the role failed", errors.New("exit status 1"), "torture hostile (purego): open /x: no such file or directory\n",
			childExit{"crash", "torture hostile (purego): open /x: no such file or directory"}, true},
		{"quiet exit", nil, "", childExit{"crash", "ended without a word about the rest of its files"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, harness := classifyExit(tt.err, tt.stderr)
			if got != tt.want || harness != tt.harness {
				t.Errorf("classifyExit = %+v, %v; want %+v, %v", got, harness, tt.want, tt.harness)
			}
		})
	}
}

// Every kind of violation counts, in the row of its build, and the run
// fails; errors the opens return do not.
func TestMutateRows_Violations(t *testing.T) {
	clean := hostileResult{Opens: 12, Opened: 2, Errs: map[string]int{"ErrIncompatible": 10}, Calls: 20}
	tests := []struct {
		name string
		add  func(tl *mutateTally)
		want int
	}{
		{"errors only", func(tl *mutateTally) {
			tl.add(clean, mutant{index: 1})
			tl.add(hostileResult{Opens: 12, Errs: map[string]int{"ErrChecksum": 12}}, mutant{index: 2})
		}, 0},
		{"a recovered panic", func(tl *mutateTally) {
			tl.add(hostileResult{Opens: 12, Opened: 1, Panics: []string{"rw countmin: Add: runtime error"}}, mutant{index: 3})
		}, 1},
		{"a hang and a signal", func(tl *mutateTally) {
			tl.violation(childExit{"hang", "no answer"}, mutant{index: 4})
			tl.violation(childExit{"signal", "SIGBUS"}, mutant{index: 5})
		}, 2},
		{"a crash", func(tl *mutateTally) { tl.violation(childExit{"crash", "fatal error: x"}, mutant{index: 6}) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newMutateTally("purego", ""), newMutateTally("cgo", "")
			a.add(clean, mutant{index: 0})
			tt.add(b)
			var out strings.Builder
			if got := printSummary(&out, mutateRows([]*mutateTally{a, b}, 3, 0, "")); got != tt.want {
				t.Errorf("violations = %d, want %d; table:\n%s", got, tt.want, out.String())
			}
			if tt.want > 0 && !strings.Contains(out.String(), "first: #") {
				t.Errorf("table does not name the first violation:\n%s", out.String())
			}
		})
	}
}

func TestMutateTally_Counts(t *testing.T) {
	tl := newMutateTally("purego", "")
	tl.add(hostileResult{Opens: 12, Opened: 2, Errs: map[string]int{"ErrCorrupt": 4, "ErrIncompatible": 6}, Calls: 5, CallErrs: map[string]int{"ErrFrozen": 1}}, mutant{index: 0})
	tl.add(hostileResult{Opens: 12, Errs: map[string]int{"ErrCorrupt": 11, unclassified: 1}, Odd: "mmap: no"}, mutant{index: 1, what: "countmin-empty: cut to 7"})
	if tl.files != 2 || tl.opens != 24 || tl.opened != 2 || tl.calls != 5 || tl.errs["ErrCorrupt"] != 15 || tl.odd != 1 {
		t.Errorf("tally = %+v", tl)
	}
	if got, want := countsOf(tl.errs), "ErrCorrupt 15, ErrIncompatible 6, unclassified 1"; got != want {
		t.Errorf("countsOf = %q, want %q", got, want)
	}
	if !strings.Contains(tl.firstOdd, "cut to 7") || !strings.Contains(tl.firstOdd, "mmap: no") {
		t.Errorf("firstOdd = %q", tl.firstOdd)
	}
}

// Mutation i of a seed is the same every time, so -seed replays a file.
func TestMutate_Replays(t *testing.T) {
	data := randomBytes(rand.New(rand.NewPCG(1, 2)), 3*fmtPage)
	sp := specimen{name: "x", data: data, hot: hotSpans(data)}
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		a, whatA := mutate(sp, 7, i)
		b, whatB := mutate(sp, 7, i)
		if !bytes.Equal(a, b) || whatA != whatB {
			t.Fatalf("mutation %d differs between two calls: %s / %s", i, whatA, whatB)
		}
		seen[string(a)] = true
	}
	if len(seen) < 45 {
		t.Errorf("50 mutations made only %d different files", len(seen))
	}
	if !bytes.Equal(sp.data, data) {
		t.Errorf("mutate changed its specimen")
	}
}
