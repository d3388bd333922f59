//go:build linux

package sketch

// Tests of the descriptors another user hands over (trust_linux.go): a
// child running as nobody makes a sketch and sends its descriptor over a
// unix socket, as a client of a service could.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpen_InheritedFromAnotherUser: a descriptor nobody sends is
// attached only when nobody is trusted and could not change the file's
// size under us: its own file and a memfd it made are ErrNotOwner unless
// WithOwner trusts it (the maker of a sealed memfd may keep a writable
// descriptor and write the lock words), an unsealed memfd ErrUnsealed
// whoever is trusted, a sealed memfd with holes ErrSparse; a memfd nobody
// made with the Memfd place (sealed, blocks reserved) works with WithOwner;
// and one whose maker keeps its write lock, alive, makes an add fail with
// ErrTimeout at WithLockTimeout instead of waiting for good.
func TestOpen_InheritedFromAnotherUser(t *testing.T) {
	requireRoot(t)
	requireReexec(t)
	dir := crossDir(t)
	sock := filepath.Join(dir, "handover.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	ctx := childContext(t)
	h, in, out := startAsNobody(t, ctx, dir, "handover", envPath+"="+sock)
	defer out.Close()
	if dl, ok := ctx.Deadline(); ok {
		ln.SetDeadline(dl)
	}
	conn, err := ln.AcceptUnix()
	if err != nil {
		t.Fatalf("waiting for the child to connect: %v", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// receive asks the child for a descriptor of the given kind.
	receive := func(t *testing.T, kind string) *os.File {
		t.Helper()
		fmt.Fprintln(in, kind)
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := conn.ReadMsgUnix(make([]byte, 1), oob)
		if err != nil {
			t.Fatalf("receiving the %s descriptor: %v", kind, err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			t.Fatalf("the %s message: %v, %d control messages", kind, err, len(msgs))
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			t.Fatalf("the %s message's rights: %v, %d descriptors", kind, err, len(fds))
		}
		f := os.NewFile(uintptr(fds[0]), kind)
		t.Cleanup(func() { f.Close() })
		return f
	}
	refused := func(t *testing.T, f *os.File, want error, opts ...Option) {
		t.Helper()
		c, err := OpenCountMin(Inherited(f.Fd()), crossCfg, opts...)
		if err == nil {
			c.Close()
			t.Fatalf("OpenCountMin(Inherited(%s)) succeeded, want %v", f.Name(), want)
		}
		if !errors.Is(err, want) {
			t.Fatalf("OpenCountMin(Inherited(%s)) = %v, want %v", f.Name(), err, want)
		}
	}
	attached := func(t *testing.T, f *os.File, opts ...Option) {
		t.Helper()
		c, err := OpenCountMin(Inherited(f.Fd()), crossCfg, opts...)
		if err != nil {
			t.Fatalf("OpenCountMin(Inherited(%s)) = %v", f.Name(), err)
		}
		defer c.Close()
		if got := c.EstimateString("nobody"); got != 1 {
			t.Errorf("%s: Estimate(nobody) = %d, want 1", f.Name(), got)
		}
		if _, err := c.AddString("root"); err != nil {
			t.Errorf("%s: AddString: %v", f.Name(), err)
		}
	}

	t.Run("its own file", func(t *testing.T) {
		f := receive(t, "file")
		refused(t, f, ErrNotOwner)
		attached(t, f, WithOwner(crossUID))
	})
	t.Run("unsealed memfd", func(t *testing.T) {
		f := receive(t, "memfd")
		refused(t, f, ErrUnsealed)
		refused(t, f, ErrUnsealed, WithOwner(crossUID))
	})
	t.Run("sealed memfd with holes", func(t *testing.T) {
		f := receive(t, "sparse")
		refused(t, f, ErrNotOwner)
		refused(t, f, ErrSparse, WithOwner(crossUID))
		if !strings.Contains(holesIn(int(f.Fd())), "bytes") {
			t.Errorf("fstat of the sparse memfd: %s", holesIn(int(f.Fd())))
		}
	})
	t.Run("sealed memfd", func(t *testing.T) {
		f := receive(t, "sealed")
		refused(t, f, ErrNotOwner)
		attached(t, f, WithOwner(crossUID))
	})
	t.Run("sealed memfd whose maker holds its lock", func(t *testing.T) {
		f := receive(t, "wedged")
		_, err := OpenCountingBloom(Inherited(f.Fd()), CountingBloomConfig{})
		if !errors.Is(err, ErrNotOwner) {
			t.Fatalf("OpenCountingBloom(Inherited) = %v, want ErrNotOwner", err)
		}
		// Trusted on purpose, the maker can still hold the lock, alive:
		// an add waits for the bound, then fails, rather than for good.
		b, err := OpenCountingBloom(Inherited(f.Fd()), CountingBloomConfig{}, WithOwner(crossUID), WithLockTimeout(ltBound))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ltTimesOut(t, "Add", func() error { _, err := b.AddString("root"); return err })
	})
	in.Close()
	h.wait(t)
}

var _ = role("handover", childHandover)

// childHandover runs as nobody: it connects to the unix socket at envPath
// and, for each kind it reads on stdin, makes a Count-Min sketch holding
// "nobody" once and sends its descriptor: "file", its own file in the
// test's directory; "memfd", a copy of it in a memfd without seals;
// "sparse", a sealed memfd with a valid header and nothing else
// allocated; "sealed", one OpenCountMin(Memfd) made.
func childHandover() error {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: os.Getenv(envPath), Net: "unix"})
	if err != nil {
		return err
	}
	defer conn.Close()
	var keep []io.Closer // what must outlive the parent's checks
	defer func() {
		for _, c := range keep {
			c.Close()
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var f *os.File
		switch kind := in.Text(); kind {
		case "file":
			c, err := OpenCountMin(Path(filepath.Join(os.Getenv(envCrossDir), "nobody.cms")), crossCfg)
			if err != nil {
				return err
			}
			keep = append(keep, c)
			if _, err := c.AddString("nobody"); err != nil {
				return err
			}
			if f, err = c.File(); err != nil {
				return err
			}
		case "memfd":
			path := filepath.Join(os.Getenv(envCrossDir), "nobody.cms")
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
			if err != nil {
				return err
			}
			f = os.NewFile(uintptr(fd), "unsealed")
			if _, err := f.WriteAt(b, 0); err != nil {
				return err
			}
		case "sparse":
			fd, err := unix.MemfdCreate("sparse", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
			if err != nil {
				return err
			}
			f = os.NewFile(uintptr(fd), "sparse")
			if err := craftSparse(fd, crossCfg); err != nil {
				return err
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW); err != nil {
				return err
			}
		case "sealed":
			c, err := OpenCountMin(Memfd("sealed"), crossCfg)
			if err != nil {
				return err
			}
			keep = append(keep, c)
			if _, err := c.AddString("nobody"); err != nil {
				return err
			}
			if f, err = c.File(); err != nil {
				return err
			}
		case "wedged":
			// A wedging maker: a sealed memfd whose write lock it takes
			// and keeps, alive, after handing it over.
			b, err := OpenCountingBloom(Memfd("wedged"), CountingBloomConfig{Capacity: 100, FPRate: 0.01})
			if err != nil {
				return err
			}
			keep = append(keep, b)
			if f, err = b.File(); err != nil {
				return err
			}
			if err := b.m.lk.lock(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown kind %q", kind)
		}
		keep = append(keep, f)
		if _, _, err := conn.WriteMsgUnix([]byte{1}, unix.UnixRights(int(f.Fd())), nil); err != nil {
			return err
		}
	}
	return in.Err()
}

// craftSparse sizes the empty file fd for a Count-Min sketch of cfg and
// writes a valid header, through a mapping, and nothing else: every page
// but the header's stays a hole.
func craftSparse(fd int, cfg CountMinConfig) error {
	sp, err := cfg.spec()
	if err != nil {
		return err
	}
	lay, err := sp.layout()
	if err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, int64(lay.fileSize)); err != nil {
		return err
	}
	data, err := unix.Mmap(fd, 0, int(lay.fileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(data)
	encodeHeader(data, lay)
	publishMagic(data)
	return nil
}

// holesIn describes how much of the file behind fd is holes, for failures.
func holesIn(fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err.Error()
	}
	return strings.TrimSpace(fmt.Sprintf("%d bytes, %d allocated", st.Size, st.Blocks*512))
}
