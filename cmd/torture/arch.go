package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// The arch part runs this program's pure-Go build for other architectures
// under qemu-user, beside the native builds: a big-endian (s390x) build's
// files must be refused by the native builds with ErrByteOrder and the
// reverse (arch_byteorder.go), and a 64-bit arm process must share one
// arena with native processes of both builds, killed or not
// (arch_shared.go). The emulator is named explicitly, so that a machine
// without binfmt_misc runs them too.

// crossArchs are the architectures the part knows, with the qemu-user that
// runs each.
var (
	crossArchs = []string{"s390x", "arm64", "arm"}
	qemuFor    = map[string]string{"s390x": "qemu-s390x-static", "arm64": "qemu-aarch64-static", "arm": "qemu-arm-static"}
)

// A runner starts processes of one build of this program: a native one,
// or a cross build through its qemu-user (prefix holds the binary).
type runner struct {
	name   string // "purego", "cgo", or the GOARCH of a cross build
	b      build
	prefix []string
}

func nativeRunner(b build) runner { return runner{name: b.backend, b: b} }

func (r runner) start(stdin io.Reader, stdout io.Writer, args ...string) (*child, error) {
	return startChild(r.b, stdin, stdout, append(append([]string{}, r.prefix...), args...)...)
}

// output runs args to their end and returns what they printed; a process
// that failed is an error naming the runner.
func (r runner) output(args ...string) ([]byte, error) {
	var out bytes.Buffer
	c, err := r.start(nil, &out, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.name, args[0], err)
	}
	if err := c.wait(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.name, strings.Join(args, " "), err)
	}
	return out.Bytes(), nil
}

// outputsAtOnce runs a process of each runner at once, with the arguments
// args gives, and decodes what each printed; qemu's starts then overlap.
func outputsAtOnce[T any](rs []runner, args func(runner) ([]string, func([]byte) (T, error))) ([]T, error) {
	type done struct {
		v   T
		err error
	}
	ch := make([]chan done, len(rs))
	for i, r := range rs {
		ch[i] = make(chan done, 1)
		a, decode := args(r)
		go func() {
			out, err := r.output(a...)
			if err != nil {
				ch[i] <- done{err: err}
				return
			}
			v, err := decode(out)
			ch[i] <- done{v, err}
		}()
	}
	var out []T
	var errs []error
	for i := range rs {
		d := <-ch[i]
		out = append(out, d.v)
		errs = append(errs, d.err)
	}
	return out, errors.Join(errs...)
}

// findCross returns the runner of the build for arch, or why there is
// none: no build given, or no qemu-user.
func findCross(paths map[string]string, arch string) (runner, string) {
	path := paths[arch]
	if path == "" {
		return runner{}, fmt.Sprintf("no -%s build given (make torture builds .build/torture.%s)", arch, arch)
	}
	if _, err := os.Stat(path); err != nil {
		return runner{}, err.Error()
	}
	q, err := exec.LookPath(qemuFor[arch])
	if err != nil {
		return runner{}, qemuFor[arch] + " not found; install qemu-user-static"
	}
	// The build is not asked for its backend, to spare a start of qemu:
	// its checkers report it.
	return runner{name: arch, b: build{path: q, backend: "purego"}, prefix: []string{path}}, ""
}

func runArch(s setting) ([]row, error) {
	rows, err := runByteOrder(s)
	if err != nil {
		return nil, fmt.Errorf("byte order: %w", err)
	}
	shared, err := runArchShared(s)
	if err != nil {
		return nil, fmt.Errorf("shared file: %w", err)
	}
	return append(rows, shared...), nil
}

// archRoles are the arch part's processes, one role of the program
// ("torture arch NAME ...").
var archRoles = map[string]func(fs *flag.FlagSet, args []string) error{
	"make":  roleByteOrderMake,
	"opens": roleByteOrderOpens,
	"adder": roleArchAdder,
	"check": roleArchCheck,
}

func runArchRole(args []string) error {
	if len(args) == 0 || archRoles[args[0]] == nil {
		return fmt.Errorf("arch: want one of make, opens, adder, check")
	}
	return archRoles[args[0]](flag.NewFlagSet("arch "+args[0], flag.ExitOnError), args[1:])
}
