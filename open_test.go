//go:build linux

package sketch

// Tests of OpenCountMin's create-or-attach protocol against files that are
// all zero, empty, owned by someone else, in the way, or on a full
// filesystem, or of another shape. The files every kind refuses as damaged
// are corrupt_test.go's table; the helpers, prefixed "ot", are in
// helpers_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpen_AllZero checks that an all-zero file of exactly the size the
// requested shape needs, which a creator killed between sizing the file and
// writing the header leaves, is initialised.
func TestOpen_AllZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  CountMinConfig
	}{
		{"explicit shape", otCfg},
		{"default shape", CountMinConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tmpl := otMakeFile(t, tc.cfg)
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, make([]byte, len(tmpl)), 0o600); err != nil {
				t.Fatal(err)
			}
			c := mustOpen(t, path, tc.cfg, WithMode(0o640))
			if m := otMode(t, path); m != 0o640 {
				t.Errorf("mode of the adopted file = %v, want %v", m, fs.FileMode(0o640))
			}
			want := native.Uint64(tmpl[otDirOff+entParams:])
			if c.Config().Rows != int(want) {
				t.Errorf("Rows() = %d, want %d", c.Config().Rows, want)
			}
			if tc.cfg.Seed != 0 && c.Seed() != tc.cfg.Seed {
				t.Errorf("Seed = %#x, want %#x", c.Seed(), tc.cfg.Seed)
			}
			otWorks(t, c)
			c.AddString("kept")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			d := mustOpen(t, path, CountMinConfig{})
			if got := d.EstimateString("kept"); got < 1 {
				t.Errorf("reopened sketch estimates %d for a counted key", got)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(tmpl)) {
				t.Errorf("size after adoption = %v (%v), want %d", fi.Size(), err, len(tmpl))
			}
		})
	}
}

func TestOpen_EmptyFile(t *testing.T) {
	path := tempPath(t, "cms")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, otCfg, WithMode(0o660))
	if m := otMode(t, path); m != 0o660 {
		t.Errorf("mode of the adopted empty file = %v, want %v", m, fs.FileMode(0o660))
	}
	if c.Config().Rows != otCfg.Rows || c.Config().Width != otCfg.Width {
		t.Errorf("shape = %d x %d, want %d x %d", c.Config().Rows, c.Config().Width, otCfg.Rows, otCfg.Width)
	}
	otWorks(t, c)
}

func TestOpen_Directory(t *testing.T) {
	path := tempPath(t, "cms")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrCorrupt)
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrCorrupt)
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory at the path was disturbed: %v", err)
	}
}

func TestOpen_ErrSymlink(t *testing.T) {
	t.Run("to a valid sketch", func(t *testing.T) {
		target, valid := otMakeFile(t, otCfg)
		before, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(filepath.Dir(target), "link")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrSymlink)
		otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o660)), path, ErrSymlink)
		after, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); !bytes.Equal(b, valid) || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("the symlink's target was modified")
		}
	})
	t.Run("to an empty file", func(t *testing.T) {
		dir := t.TempDir()
		target, path := filepath.Join(dir, "target"), filepath.Join(dir, "link")
		if err := os.WriteFile(target, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o600)), path, ErrSymlink)
		if fi, err := os.Stat(target); err != nil || fi.Size() != 0 || fi.Mode() != 0o644 {
			t.Errorf("the symlink's empty target was adopted: %v, %v", fi, err)
		}
	})
	t.Run("to a nonexistent target", func(t *testing.T) {
		dir := t.TempDir()
		target, path := filepath.Join(dir, "missing"), filepath.Join(dir, "link")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg), path, ErrSymlink)
		if _, err := os.Lstat(target); !os.IsNotExist(err) {
			t.Errorf("the symlink's target was created: %v", err)
		}
	})
}

// otOpenBounded opens path in a goroutine and fails t if that takes more
// than 10s; a sketch that opens is closed.
func otOpenBounded(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := OpenCountMin(Path(path), otCfg, WithWaitTimeout(500*time.Millisecond))
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(patience):
		t.Fatalf("OpenCountMin(%s) hangs", path)
		return nil
	}
}

func TestOpen_FIFO(t *testing.T) {
	path := tempPath(t, "cms")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	otWantErr(t, otOpenBounded(t, path), path, ErrCorrupt)
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO at the path was disturbed: %v, %v", fi, err)
	}
}

// TestOpen_SpecialFile puts other kinds of file at the path: each must
// fail, without hanging, with an error naming the path.
func TestOpen_SpecialFile(t *testing.T) {
	t.Run("character device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to mknod")
		}
		path := tempPath(t, "cms")
		if err := unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil { // /dev/null
			t.Skipf("mknod: %v", err)
		}
		otWantErr(t, otOpenBounded(t, path), path, ErrCorrupt)
	})
	t.Run("unix socket", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "ot") // a short path: sun_path holds 108 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		path := filepath.Join(dir, "s")
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skipf("socket: %v", err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			t.Skipf("bind: %v", err)
		}
		err = otOpenBounded(t, path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("OpenCountMin on a socket = %v, want an error naming the path", err)
		}
		// open(2) of a socket fails with ENXIO before any type check.
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, unix.ENXIO) {
			t.Errorf("OpenCountMin on a socket = %v, want ErrCorrupt wrapping ENXIO", err)
		}
	})
}

func TestOpen_ErrNotOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a file to another user")
	}
	const nobody = 65534
	_, tmpl := otMakeFile(t, otCfg)
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty file", nil, ErrNotOwner},
		{"all-zero file of the requested size", make([]byte, len(tmpl)), ErrNotOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o600)), path, tc.want)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Size() != int64(len(tc.data)) || fi.Mode() != 0o644 || st.Uid != nobody {
				t.Errorf("the other user's file was modified: size %d, mode %v, uid %d", fi.Size(), fi.Mode(), st.Uid)
			}
		})
	}
	t.Run("empty file of a trusted user", func(t *testing.T) {
		// WithOwner trusts a user's sketches, but only the caller's own
		// empty file is adopted.
		path := tempPath(t, "cms")
		if err := os.WriteFile(path, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg, WithOwner(nobody)), path, ErrNotOwner)
	})
}

func TestOpen_ErrIncompatible(t *testing.T) {
	created := CountMinConfig{Rows: 2, Width: 64, Seed: 5}
	byRate := CountMinConfig{ErrorRate: 0.01} // 5 x 512
	for _, tc := range []struct {
		name         string
		create, open CountMinConfig
		wantIncompat bool
		rows, width  int
	}{
		{"other rows", created, CountMinConfig{Rows: 3, Width: 64}, true, 0, 0},
		{"other width", created, CountMinConfig{Rows: 2, Width: 128}, true, 0, 0},
		{"error rate against a shape", created, CountMinConfig{ErrorRate: 0.001}, true, 0, 0},
		{"confidence against a shape", created, CountMinConfig{Confidence: 0.5}, true, 0, 0},
		{"other seed", created, CountMinConfig{Seed: 6}, true, 0, 0},
		{"same shape, other seed", created, CountMinConfig{Rows: 2, Width: 64, Seed: 6}, true, 0, 0},
		{"other error rate", byRate, CountMinConfig{ErrorRate: 0.001}, true, 0, 0},
		{"other confidence", byRate, CountMinConfig{ErrorRate: 0.01, Confidence: 0.9}, true, 0, 0},
		{"zero config", created, CountMinConfig{}, false, 2, 64},
		{"same seed only", created, CountMinConfig{Seed: 5}, false, 2, 64},
		{"same shape", created, CountMinConfig{Rows: 2, Width: 64}, false, 2, 64},
		{"same shape after rounding", created, CountMinConfig{Rows: 2, Width: 33}, false, 2, 64},
		{"same error rate", byRate, CountMinConfig{ErrorRate: 0.01}, false, 5, 512},
		{"zero config on a sized file", byRate, CountMinConfig{}, false, 5, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, tc.create)
			if !tc.wantIncompat {
				c := mustOpen(t, path, tc.open)
				if c.Config().Rows != tc.rows || c.Config().Width != tc.width {
					t.Errorf("shape = %d x %d, want %d x %d", c.Config().Rows, c.Config().Width, tc.rows, tc.width)
				}
				if got := c.EstimateString("a"); got < 2 {
					t.Errorf("EstimateString(a) = %d, want >= 2 (counted before)", got)
				}
				return
			}
			otWantErr(t, otOpenErr(t, path, tc.open), path, ErrIncompatible)
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, valid) {
				t.Errorf("an incompatible attach modified the file (%v)", err)
			}
		})
	}
}

// TestOpen_Mode runs with a umask of 077: the mode a file is created or
// adopted with must be exactly the one asked for. The umask is
// process-wide, so none of this runs in parallel.
func TestOpen_Mode(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })

	for _, tc := range []struct {
		name string
		opts []Option
		want fs.FileMode
	}{
		{"default", nil, 0o600},
		{"0660", []Option{WithMode(0o660)}, 0o660},
		{"0640", []Option{WithMode(0o640)}, 0o640},
		{"0644", []Option{WithMode(0o644)}, 0o644},
		{"0775", []Option{WithMode(0o775)}, 0o775},
		{"last option wins", []Option{WithMode(0o644), WithMode(0o660)}, 0o660},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			c := mustOpen(t, path, otCfg, tc.opts...)
			if m := otMode(t, path); m != tc.want {
				t.Errorf("mode = %v, want %v", m, tc.want)
			}
			otWorks(t, c)
		})
		t.Run("adopt empty "+tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o640); err != nil {
				t.Fatal(err)
			}
			mustOpen(t, path, otCfg, tc.opts...)
			if m := otMode(t, path); m != tc.want {
				t.Errorf("mode = %v, want %v", m, tc.want)
			}
		})
	}
	for _, m := range []fs.FileMode{fs.ModeDir | 0o600, fs.ModeSetuid | 0o600, fs.ModeSticky | 0o600, 0o4600, 0o1000} {
		t.Run(fmt.Sprintf("invalid %v", m), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, err := OpenCountMin(Path(path), otCfg, WithMode(m))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("WithMode(%v) error = %v, want ErrInvalidConfig", m, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("a rejected mode left a file behind: %v", err)
			}
		})
	}
	t.Run("existing file keeps its mode", func(t *testing.T) {
		path, _ := otMakeFile(t, otCfg, WithMode(0o640))
		c := mustOpen(t, path, otCfg, WithMode(0o664))
		if m := otMode(t, path); m != 0o640 {
			t.Errorf("mode after attaching with WithMode(0664) = %v, want 0640", m)
		}
		otWorks(t, c)
	})
}

// TestOpen_FullTmpfs creates sketches on a 1 MiB tmpfs: a create that does
// not fit must fail up front with ErrNoSpace and leave nothing behind.
func TestOpen_FullTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "1m")
	wantNoSpace := func(t *testing.T, path string, cfg CountMinConfig) {
		t.Helper()
		err := otOpenErr(t, path, cfg)
		otWantErr(t, err, path, ErrNoSpace)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("error %v does not match syscall.ENOSPC", err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("a failed create left a file at %s: %v", path, err)
		}
	}
	t.Run("2 MiB sketch", func(t *testing.T) {
		wantNoSpace(t, filepath.Join(dir, "big"), CountMinConfig{Rows: 4, Width: 1 << 16})
	})
	t.Run("small sketch after a failed create", func(t *testing.T) {
		path := filepath.Join(dir, "small")
		c, err := OpenCountMin(Path(path), otCfg)
		if err != nil {
			t.Fatalf("small sketch on the tmpfs: %v", err)
		}
		otWorks(t, c)
		if err := c.Sync(); err != nil {
			t.Errorf("Sync() = %v", err)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	})
	t.Run("filled tmpfs", func(t *testing.T) {
		fill := filepath.Join(dir, "fill")
		f, err := os.Create(fill)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(fill)
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 0xa5
		}
		for i := 0; ; i++ {
			if i > 64 {
				f.Close()
				t.Fatal("wrote 4 MiB to a 1 MiB tmpfs without ENOSPC")
			}
			if _, err = f.Write(chunk); err != nil {
				break
			}
		}
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
		}
		wantNoSpace(t, filepath.Join(dir, "small"), otCfg)
		wantNoSpace(t, filepath.Join(dir, "default"), CountMinConfig{})
	})
}

func TestOpen_ErrTimeout(t *testing.T) {
	path := tempPath(t, "cms")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	const wait = 200 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- otOpenErr(t, path, otCfg, WithWaitTimeout(wait)) }()
	select {
	case err := <-done:
		elapsed := time.Since(start)
		otWantErr(t, err, path, ErrTimeout)
		if elapsed < wait || elapsed > patience {
			t.Errorf("ErrTimeout after %v, want about %v", elapsed, wait)
		}
	case <-time.After(patience):
		t.Fatal("OpenCountMin waits past its timeout")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the locked file was modified: %v, %v", fi, err)
	}
	// Once the lock is gone the empty file is adopted.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, otCfg, WithWaitTimeout(wait))
	otWorks(t, c)
}

func TestOpen_PathAndSync(t *testing.T) {
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	if got := c.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
	c.AddN([]byte("synced"), 7)
	if err := c.Sync(); err != nil {
		t.Fatalf("Sync() = %v", err)
	}
	d := mustOpen(t, path, CountMinConfig{})
	if got := d.Estimate([]byte("synced")); got != 7 {
		t.Errorf("a second handle estimates %d, want 7", got)
	}
	if got := d.Path(); got != path {
		t.Errorf("second handle's Path() = %q, want %q", got, path)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), path) {
		t.Errorf("Sync after Close = %v, want ErrClosed naming the file", err)
	}
}

func TestOpen_Unlink(t *testing.T) {
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	c.AddN([]byte("k"), 5)
	if err := c.Unlink(); err != nil {
		t.Fatalf("Unlink() = %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there after Unlink: %v", err)
	}
	if got, err := c.AddN([]byte("k"), 1); err != nil || got != 6 {
		t.Errorf("AddN after Unlink = %d, %v, want 6", got, err)
	}
	otWorks(t, c)
	if err := c.Sync(); err != nil {
		t.Errorf("Sync after Unlink = %v", err)
	}
	if err := c.Unlink(); err != nil {
		t.Errorf("second Unlink() = %v, want nil", err)
	}
	// A new open of the path creates a new, empty sketch.
	d := mustOpen(t, path, otCfg)
	if got := d.Estimate([]byte("k")); got != 0 {
		t.Errorf("new sketch at the unlinked path estimates %d, want 0", got)
	}
	if got := c.Estimate([]byte("k")); got != 6 {
		t.Errorf("unlinked sketch estimates %d after a new create, want 6", got)
	}
	// Unlink through the old handle must leave the new file at the path.
	if err := c.Unlink(); err != nil {
		t.Errorf("Unlink through the old handle after a new create = %v, want nil", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Unlink through the old handle removed the new file at the path: %v", err)
	}
}

// TestOpen_EmptyPath: an empty path is an invalid argument, said as such,
// on every route, not a missing file with no name.
func TestOpen_EmptyPath(t *testing.T) {
	routes := map[string]func() error{
		"OpenCountMin": func() error { _, err := OpenCountMin(Path(""), otCfg); return err },
		"WithReadOnly": func() error { _, err := OpenCountMin(Path(""), otCfg, WithReadOnly()); return err },
		"OpenBloom":    func() error { _, err := OpenBloom(Path(""), BloomConfig{Capacity: 100}); return err },
		"OpenArena":    func() error { _, err := OpenArena(Path(""), ArenaConfig{Size: 1 << 20}); return err },
		"Inspect":      func() error { _, err := Inspect(""); return err },
	}
	for name, open := range routes {
		t.Run(name, func(t *testing.T) {
			err := open()
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "path is empty") {
				t.Errorf("%s(\"\") = %v, want ErrInvalidArgument saying the path is empty", name, err)
			}
		})
	}
}

// TestOpen_OutOfInodes: a filesystem out of inodes refuses a create with
// ErrNoSpace too, as one out of blocks does, and nothing is left behind.
func TestOpen_OutOfInodes(t *testing.T) {
	dir := mountTmpfs(t, "4m,nr_inodes=4")
	for i := 0; ; i++ { // use every inode the mount has left
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), nil, 0o600); err != nil {
			break
		}
	}
	before, _ := os.ReadDir(dir)
	for name, open := range map[string]func(string) error{
		"count-min": func(p string) error { _, err := OpenCountMin(Path(p), CountMinConfig{Rows: 1, Width: 64}); return err },
		"bloom":     func(p string) error { _, err := OpenBloom(Path(p), BloomConfig{Capacity: 10}); return err },
		"arena":     func(p string) error { _, err := OpenArena(Path(p), ArenaConfig{Size: 64 << 10}); return err },
	} {
		p := filepath.Join(dir, name)
		if err := open(p); !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s on a filesystem out of inodes: %v, want ErrNoSpace naming the file", name, err)
		}
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("the refused creates left %d entries behind", len(after)-len(before))
	}
}
