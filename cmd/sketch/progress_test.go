//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPty returns a pseudo-terminal's controlling side and its terminal.
func openPty(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}

// TestAdd_Progress: with standard error on a terminal, add shows a
// progress line there while it reads, erases it at the end, and standard
// output gets only the summary.
func TestAdd_Progress(t *testing.T) {
	path := create(t, "c.cms")
	ptm, pts := openPty(t)
	cmd := exec.Command(bin, "add", path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, pts
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pts.Close()

	// Feed keys until the progress line shows them, then end the input.
	shown, seen := make(chan struct{}), make(chan string, 1)
	go func() {
		var tty []byte
		buf := make([]byte, 4096)
		for said := false; ; {
			n, err := ptm.Read(buf) // EIO once the command exits
			tty = append(tty, buf[:n]...)
			if !said && bytes.Contains(tty, []byte("keys/s")) {
				close(shown)
				said = true
			}
			if err != nil {
				seen <- string(tty)
				return
			}
		}
	}()
	lines := []byte(strings.Repeat("key\n", 1000))
	fed := 0
	for waiting := true; waiting; {
		select {
		case <-shown:
			waiting = false
		default:
			if _, err := in.Write(lines); err != nil {
				t.Fatal(err)
			}
			fed += 1000
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("add: %v", err)
	}
	tty := <-seen
	if !strings.Contains(tty, " keys/s  ") || !strings.HasSuffix(tty, "\r\x1b[K") {
		t.Errorf("the terminal got %q, want a progress line, erased at the end", tty)
	}
	if want := fmt.Sprintf("added %d keys to %s in ", fed, path); !strings.HasPrefix(out.String(), want) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("standard output got %q, want only the summary %q...", out.String(), want)
	}
}
