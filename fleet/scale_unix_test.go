//go:build unix

package fleet

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user and system CPU time of this process (every
// agent, and the test), in seconds. Keep in sync with
// scale_other_test.go.
func processCPU(t *testing.T) float64 {
	var ru syscall.Rusage
	must(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
