package sketch

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

var reexec struct {
	once sync.Once
	ok   bool
}

// canReexec reports whether this test binary can start itself again. Under
// qemu-user without binfmt_misc (how the cross-compiled builds run) it
// cannot, and the multi-process tests skip.
func canReexec(t testing.TB) bool {
	reexec.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		reexec.ok = exec.Command(exe, "-test.run=^$").Run() == nil
	})
	return reexec.ok
}
