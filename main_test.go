//go:build linux

package sketch

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// builtBinaries caches the test binaries built for another backend, so that
// the tests that mix backends build each once per run.
var builtBinaries struct {
	sync.Mutex
	dir  string
	exes map[string]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinaries.dir != "" {
		os.RemoveAll(builtBinaries.dir)
	}
	os.Exit(code)
}

// backendBinary returns this package's test binary built for backend,
// building it on first use; it skips t where that cannot be done.
func backendBinary(t *testing.T, backend string) string {
	t.Helper()
	b := &builtBinaries
	b.Lock()
	defer b.Unlock()
	if exe := b.exes[backend]; exe != "" {
		return exe
	}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "sketch-backends-")
		if err != nil {
			t.Fatal(err)
		}
		b.dir, b.exes = dir, map[string]string{}
	}
	exe := buildTestBinary(t, b.dir, backend)
	b.exes[backend] = exe
	return exe
}

// canBuildBackend reports whether backendBinary can build backend here:
// a go command, and a C compiler for cgo.
func canBuildBackend(backend string) bool {
	if _, err := exec.LookPath("go"); err != nil {
		if _, err := os.Stat(filepath.Join(runtime.GOROOT(), "bin", "go")); err != nil {
			return false
		}
	}
	if backend == "cgo" {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		if _, err := exec.LookPath(cc); err != nil {
			return false
		}
	}
	return true
}
