//go:build linux

package sketch

// Tests of files with holes (trust_linux.go, checkBacked): another user's
// sparse file is refused by every route that opens or attaches, on disk
// and on tmpfs, before anything walks it.

import (
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of the given size (a mount option such as
// "64m") on a new directory, and skips when it cannot.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// holesCfg is the shape of the planted file: 1 x 2^27 counters, 1 GiB.
var holesCfg = CountMinConfig{Rows: 1, Width: 1 << 27}

// plantSparse makes a valid 1 GiB Count-Min file at path of which only the
// header is allocated, owned by nobody (mode 0644) unless own is set.
func plantSparse(t *testing.T, path string, own bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := craftSparse(int(f.Fd()), holesCfg); err != nil {
		t.Skipf("cannot make a sparse 1 GiB file here: %v", err)
	}
	if !own {
		if err := f.Chown(nobodyUID, nobodyUID); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size < 1<<30 || st.Blocks*512 > 1<<20 {
		t.Fatalf("planted file: %d bytes, %d allocated; want 1 GiB with almost nothing allocated", st.Size, st.Blocks*512)
	}
}

// TestOpen_SparseFileOfAnotherUser: a 1 GiB file with a valid header and
// nothing else allocated, planted by nobody, is refused with ErrSparse by
// every route (read-write, read-only, Inspect, an arena's open, attach by
// descriptor), at once, on disk and on tmpfs; files the library made and
// gave to nobody, and a sparse file of the caller's own, still open.
func TestOpen_SparseFileOfAnotherUser(t *testing.T) {
	requireRoot(t)
	if bits.UintSize < 64 {
		t.Skip("a 1 GiB mapping needs a 64-bit address space")
	}
	dirs := map[string]string{"disk": t.TempDir(), "tmpfs": mountTmpfs(t, "64m")}
	trust := WithOwner(nobodyUID)
	routes := map[string]func(path string) error{
		"read-write": func(path string) error { return otOpenErr(t, path, holesCfg, trust) },
		"any shape":  func(path string) error { return otOpenErr(t, path, CountMinConfig{}, trust, WithoutCreate()) },
		"read-only":  func(path string) error { return otOpenErr(t, path, holesCfg, WithReadOnly()) },
		"Inspect":    func(path string) error { _, err := Inspect(path); return err },
		"arena": func(path string) error {
			a, err := OpenArena(Path(path), ArenaConfig{}, trust)
			if err == nil {
				a.Close()
			}
			return err
		},
		"attach": func(path string) error { return attachPathErr(path, os.O_RDWR, trust) },
		"attach read-only": func(path string) error {
			return attachPathErr(path, os.O_RDONLY, WithReadOnly())
		},
	}
	for fs, dir := range dirs {
		t.Run(fs, func(t *testing.T) {
			path := filepath.Join(dir, "planted.cms")
			plantSparse(t, path, false)
			for name, open := range routes {
				start := time.Now()
				err := open(path)
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("%s: the answer took %v: the file was walked", name, d)
				}
				if !errors.Is(err, ErrSparse) || !strings.Contains(err.Error(), "holes") {
					t.Errorf("%s: error = %v, want ErrSparse", name, err)
				}
			}
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil || st.Blocks*512 > 1<<20 {
				t.Errorf("the refused file: %v, %d bytes allocated; want it untouched", err, st.Blocks*512)
			}

			// The library's own file, given to nobody, has its blocks.
			made := filepath.Join(dir, "made.cms")
			c := mustOpen(t, made, otCfg)
			c.Close()
			if err := os.Chown(made, nobodyUID, nobodyUID); err != nil {
				t.Fatal(err)
			}
			otWorks(t, mustOpen(t, made, otCfg, trust))
			if _, err := Inspect(made); err != nil {
				t.Errorf("Inspect(%s) = %v", made, err)
			}

			// The caller's own holes are its own to pay for.
			own := filepath.Join(dir, "own.cms")
			plantSparse(t, own, true)
			if fi, err := Inspect(own); err != nil || fi.Bytes < 1<<30 {
				t.Errorf("Inspect of the caller's own sparse file = %v, %v", fi.Bytes, err)
			}
			os.Remove(own)
		})
	}
}

// attachPathErr attaches to the file at path through a descriptor opened
// with flag, as a descriptor handed over would be.
func attachPathErr(path string, flag int, opts ...Option) error {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := OpenCountMin(Inherited(f.Fd()), CountMinConfig{}, opts...)
	if err == nil {
		c.Close()
	}
	return err
}

// TestOpen_InheritedMemfdLargerThanMemory: a sealed memfd with a valid
// header and holes, larger than the machine's memory, is refused at attach
// as a create of that size is (ErrNoSpace), even from the caller itself,
// before anything could fault its pages in.
func TestOpen_InheritedMemfdLargerThanMemory(t *testing.T) {
	if bits.UintSize < 64 {
		t.Skip("needs a 64-bit address space")
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Skipf("sysinfo: %v", err)
	}
	ram := uint64(si.Totalram) * uint64(si.Unit)
	width := 1 << bits.Len64(ram/8) // the smallest power of two of counters above the memory
	cfg := CountMinConfig{Rows: 1, Width: width}
	fd, err := unix.MemfdCreate("huge", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "huge")
	defer f.Close()
	if err := craftSparse(fd, cfg); err != nil {
		t.Skipf("cannot make a sparse memfd of %d counters: %v", width, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {WithReadOnly()}} {
		c, err := OpenCountMin(Inherited(f.Fd()), cfg, opts...)
		if err == nil {
			c.Close()
			t.Fatalf("OpenCountMin(Inherited) of a %s memfd on a machine with %d bytes of memory succeeded, want ErrNoSpace", holesIn(fd), ram)
		}
		if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "memory") {
			t.Errorf("OpenCountMin(Inherited) of a %s memfd = %v, want ErrNoSpace naming the memory", holesIn(fd), err)
		}
	}
}
