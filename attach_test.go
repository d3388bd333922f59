//go:build linux

package sketch

// Tests of the paths around attaching that once needed a lock, a scan or a
// check-then-act: a reader's flock, huge sparse files, and Unlink racing a
// replacement.

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpen_ReaderLockDoesNotBlock: whoever may only read a sketch file can
// hold an exclusive flock on it; attaching a complete file takes no lock,
// so a writer's open is not delayed.
func TestOpen_ReaderLockDoesNotBlock(t *testing.T) {
	path, _ := otMakeFile(t, otCfg)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	rd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := unix.Flock(int(rd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("flock -x on a read-only descriptor: %v", err)
	}
	c, err := OpenCountMin(Path(path), otCfg, WithWaitTimeout(time.Millisecond))
	if err != nil {
		t.Fatalf("OpenCountMin while a reader holds flock -x = %v, want it attached", err)
	}
	otWorks(t, c)
}

// TestOpen_ReaderLockDelaysAdoption pins what the docs say of the one path
// that still locks: adopting an empty file waits for the flock, so a
// process that may open it (only its owner's, since one every user may
// open is refused: TestOpen_ReaderLockBlocksAdoption) and holds the flock
// makes the adopter time out, and the file stays empty.
func TestOpen_ReaderLockDelaysAdoption(t *testing.T) {
	path := tempPath(t, "cms")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := unix.Flock(int(rd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	otWantErr(t, otOpenErr(t, path, otCfg, WithWaitTimeout(20*time.Millisecond)), path, ErrTimeout)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("file after a timed-out adoption: %v, %v; want it still empty", fi, err)
	}
	unix.Flock(int(rd.Fd()), unix.LOCK_UN)
	otWorks(t, mustOpen(t, path, otCfg))
}

// otSparseZero makes a sparse all-zero file of size bytes.
func otSparseZero(t *testing.T, size int64) string {
	t.Helper()
	path := tempPath(t, "cms")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("cannot make a sparse file of %d bytes here: %v", size, err)
	}
	return path
}

// TestOpen_HugeSparseZeroFile: a zero-magic file is judged by its size
// before anything reads it, and the all-zero scan that adoption needs stops
// at the wait deadline. The bytes this process read (the kernel's count,
// not the time taken) show that no answer below scanned the whole 16 GiB.
func TestOpen_HugeSparseZeroFile(t *testing.T) {
	const huge = 16 << 30
	// A shape that needs exactly a 16 GiB file: 1 x 2^31 counters.
	width := 1
	width <<= 31 // at run time: the constant overflows int on 32-bit platforms
	big := CountMinConfig{Rows: 1, Width: width}
	sp, err := big.spec()
	if err != nil {
		t.Skipf("this platform cannot map the test's 16 GiB shape: %v", err)
	}
	need := int64(newLayout(1, []entry{{kind: sp.kind, size: sp.size}}).fileSize)
	if need < huge || need > huge+1<<20 {
		t.Fatalf("the test's shape needs %d bytes, want about 16 GiB", need)
	}
	bounded := func(t *testing.T, path string, cfg CountMinConfig, want error, opts ...Option) {
		t.Helper()
		before := bytesRead(t)
		otWantErr(t, otOpenErr(t, path, cfg, opts...), path, want)
		// A scan stopped at the deadline reads what 200 ms allow, far
		// less than half the file on any machine.
		if n := bytesRead(t) - before; n > huge/2 {
			t.Errorf("the answer read %d bytes: the file was scanned", n)
		}
	}
	t.Run("another shape", func(t *testing.T) {
		bounded(t, otSparseZero(t, huge), otCfg, ErrInterruptedCreate)
	})
	t.Run("WithoutCreate", func(t *testing.T) {
		bounded(t, otSparseZero(t, need), big, ErrInterruptedCreate, WithoutCreate())
	})
	t.Run("the requested shape", func(t *testing.T) {
		bounded(t, otSparseZero(t, need), big, ErrTimeout, WithWaitTimeout(200*time.Millisecond))
	})
}

// bytesRead is what this process has read by read calls so far
// (/proc/self/io's rchar).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatalf("the test counts bytes read in /proc/self/io: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("/proc/self/io: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/self/io:\n%s", b)
	return 0
}

// TestOpen_UnlinkRacesReplacement: a file that replaces the sketch's
// between Unlink's check and its removal is put back, not deleted.
func TestOpen_UnlinkRacesReplacement(t *testing.T) {
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	var newer os.FileInfo
	testHookBeforeUnlinkRename = func() {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte("a newer file"), 0o600); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Error(err)
		}
		newer, _ = os.Stat(path)
	}
	defer func() { testHookBeforeUnlinkRename = nil }()
	if err := c.Unlink(); err != nil {
		t.Fatalf("Unlink() = %v, want nil", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("Unlink removed the file that replaced the sketch: %v", err)
	}
	if !os.SameFile(fi, newer) {
		t.Errorf("the file at the path is not the one that replaced the sketch")
	}
	otOnlyFile(t, path)

	// Without a replacement, the sketch's own file goes, and no debris stays.
	testHookBeforeUnlinkRename = nil
	os.Remove(path)
	d := mustOpen(t, path, otCfg)
	if err := d.Unlink(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Unlink, Lstat = %v, want ErrNotExist", err)
	}
	otOnlyFile(t, "")
	otWorks(t, d)
}

// otOnlyFile fails unless path's directory holds just path (or nothing,
// when path is ""): no file set aside was left behind.
func otOnlyFile(t *testing.T, path string) {
	t.Helper()
	dir := filepath.Dir(path)
	if path == "" {
		dir = t.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Join(dir, e.Name()) != path {
			t.Errorf("left in the directory: %s", e.Name())
		}
	}
}

// TestOpen_InheritedZeroMagic: a descriptor whose file never got its
// magic is an interrupted create, as it is by path.
func TestOpen_InheritedZeroMagic(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	for name, data := range map[string][]byte{
		"all zero":         make([]byte, len(tmpl)),
		"header, no magic": append(make([]byte, 8), tmpl[8:]...),
		"empty":            nil,
	} {
		t.Run(name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c, err := OpenCountMin(Inherited(f.Fd()), CountMinConfig{})
			if err == nil {
				c.Close()
				t.Fatal("OpenCountMin(Inherited) succeeded on a file without a magic")
			}
			var want error = ErrInterruptedCreate
			if len(data) == 0 {
				want = ErrCorrupt
			}
			if !errors.Is(err, want) {
				t.Errorf("OpenCountMin(Inherited) = %v, want %v", err, want)
			}
		})
	}
}

// TestOpen_CreateUnderPrivateName: where O_TMPFILE cannot be used, the
// file is built under a hidden private name and linked: the result is the
// same file, at the same mode, with no debris left.
func TestOpen_CreateUnderPrivateName(t *testing.T) {
	path := tempPath(t, "cms")
	sp, err := otCfg.spec()
	if err != nil {
		t.Fatal(err)
	}
	o, _ := buildOptions([]Option{WithMode(0o640)})
	m, err := createAs(path, sp, o, false)
	if err != nil {
		t.Fatalf("createAs with a private name: %v", err)
	}
	c, err := newCountMin(m)
	if err != nil {
		t.Fatal(err)
	}
	otWorks(t, c)
	if got := otMode(t, path); got != 0o640 {
		t.Errorf("mode = %v, want 0640", got)
	}
	otOnlyFile(t, path)
	// A second create at the taken path loses the link and cleans up.
	if _, err := createAs(path, sp, o, false); !errors.Is(err, os.ErrExist) {
		t.Errorf("second createAs = %v, want ErrExist", err)
	}
	otOnlyFile(t, path)
}
