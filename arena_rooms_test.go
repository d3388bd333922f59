//go:build linux

package sketch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const envRoomBlock = "SKETCH_TEST_ROOMBLOCK" // "all": every room byte; "marks": the mark ranges only

var _ = role("roomblock", childRoomBlock)

// childRoomBlock runs as a user who may only read the arena at envPath:
// it read-locks every room byte with one fcntl (envRoomBlock "all": the
// bytes earlier builds asked about and every mark range; "marks": the mark
// ranges only), says "blocking", and then opens read-only each structure
// named on a line of its standard input, holding every one, and answers
// "opened NAME", until its input ends.
func childRoomBlock() error {
	path := os.Getenv(envPath)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	from := int64(roomBase)
	if os.Getenv(envRoomBlock) == "marks" {
		from = roomMarkBase
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: from, Len: 0}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		return fmt.Errorf("read-locking every room byte: %w", err)
	}
	fmt.Println("blocking")
	a, err := OpenArena(Path(path), ArenaConfig{}, WithReadOnly())
	if err != nil {
		return err
	}
	var views []*CountMin
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		name := sc.Text()
		c, err := OpenCountMin(a.Place(name), CountMinConfig{}, WithReadOnly())
		if err != nil {
			return err
		}
		views = append(views, c)
		fmt.Println("opened", name)
	}
	return nil
}

// startRoomBlocker starts childRoomBlock as nobody on the arena at path
// in dir (a crossDir) and returns once it blocks, with its input and
// output.
func startRoomBlocker(t *testing.T, dir, path, what string) (in *os.File, out *bufio.Reader) {
	t.Helper()
	_, in, o := startAsNobody(t, childContext(t), dir, "roomblock", envPath+"="+path, envRoomBlock+"="+what)
	out = bufio.NewReader(o)
	if line, err := out.ReadString('\n'); strings.TrimSpace(line) != "blocking" {
		t.Fatalf("the read-only child said %q (%v), want \"blocking\"", line, err)
	}
	return in, out
}

// readableArena creates an arena of size bytes and mode 0644 in a
// directory nobody may enter (crossDir), so that a nobody child can open
// it read-only.
func readableArena(t *testing.T, size int64) (dir, path string, a *Arena) {
	t.Helper()
	requireRoot(t)
	requireReexec(t)
	dir = crossDir(t)
	path = filepath.Join(dir, "arena")
	return dir, path, mustOpenArena(t, path, size, WithMode(0o644))
}

// TestArena_RoomsReaderCannotKeep: a user who may only read an arena
// read-locks every room byte there is with one fcntl and opens read-only
// every structure it is told of; root removes and creates a structure of
// an eighth of the arena 50 times: each create takes the removed one's
// room (never ErrArenaFull), a read-only view of a removed structure keeps
// nothing, and a read-write handle that the reader kept from its mark
// still keeps its room while it is open.
func TestArena_RoomsReaderCannotKeep(t *testing.T) {
	const size = 8 << 20
	dir, path, a := readableArena(t, size)
	in, out := startRoomBlocker(t, dir, path, "all")
	cfg := CountMinConfig{Rows: 4, Width: 1 << 16}
	var room uint64
	for round := range 50 {
		c, err := OpenCountMin(a.Place("s"), cfg)
		if err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		at := arEntryAt(t, a, "s")
		if round == 0 {
			if at.Bytes < size/9 {
				t.Fatalf("the structure has %d bytes: too small to fill the arena in 8 rounds", at.Bytes)
			}
			room = at.Offset
		} else if at.Offset != room {
			t.Fatalf("round %d: the create went to %d, not to the removed structure's room at %d", round, at.Offset, room)
		}
		c.AddString("k")
		fmt.Fprintln(in, "s")
		if line, err := out.ReadString('\n'); strings.TrimSpace(line) != "opened s" {
			t.Fatalf("round %d: the reader said %q (%v), want \"opened s\"", round, line, err)
		}
		if err := a.Remove("s"); err != nil {
			t.Fatal(err)
		}
		// c, open, keeps the room, though the reader kept it from its mark.
		// (The other removed room is the last round's "t".)
		if st := a.Stats(); st.Removed != min(round+1, 2) || st.Reusable != st.Removed-1 {
			t.Fatalf("round %d: with a read-write handle open on the removed structure, %d of %d removed rooms are reusable, want %d", round, st.Reusable, st.Removed, st.Removed-1)
		}
		small := mustIn(t, OpenBloom, a.Place("t"), BloomConfig{Capacity: 10})
		if got := arEntryAt(t, a, "t").Offset; got == room {
			t.Fatalf("round %d: a create took the room a read-write handle holds", round)
		}
		small.AddString("k")
		if got := c.EstimateString("k"); got != 1 {
			t.Fatalf("round %d: the removed structure's handle reads %d, want 1", round, got)
		}
		if err := a.Remove("t"); err != nil {
			t.Fatal(err)
		}
		small.Close()
		c.Close()
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RoomsPinnedHolderKilled: a read-write holder that a reader
// kept from its mark pins the room; killed with SIGKILL, it leaves the pin
// count, which the next create finds stale (nobody holds the room's lock
// byte), clears, and takes the room. A reader that also read-locks the lock
// byte keeps such a room (and only such a room) until it lets go: the
// limit docs/FORMAT.md states.
func TestArena_RoomsPinnedHolderKilled(t *testing.T) {
	for _, what := range []string{"marks", "all"} {
		t.Run("reader locks "+what, func(t *testing.T) {
			dir, path, a := readableArena(t, 1<<20)
			h, in, out := startAsNobody(t, childContext(t), dir, "roomblock", envPath+"="+path, envRoomBlock+"="+what)
			if line, err := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "blocking" {
				t.Fatalf("the read-only child said %q (%v), want \"blocking\"", line, err)
			}
			mustIn(t, OpenCountMin, a.Place("victim"), CountMinConfig{Rows: 2, Width: 256}).Close()
			mustIn(t, OpenCountMin, a.Place("after"), CountMinConfig{Rows: 2, Width: 256}).Close()
			victim := arEntryAt(t, a, "victim").Offset
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			holder := startHelper(t, childContext(t), "", "holder", "arenahold", envs(envPath, path, envName, "victim", envReadOnly, "0"), w)
			w.Close()
			if _, err := r.Read(make([]byte, 1)); err != nil {
				t.Fatalf("the holder never opened the structure: %v", err)
			}
			if err := a.Remove("victim"); err != nil {
				t.Fatal(err)
			}
			state := a.stateWord(arIndex(t, a, victim))
			if pins := atomic.LoadUint32(state) >> roomPinShift; pins != 1 {
				t.Fatalf("the holder kept from its mark left %d pins, want 1", pins)
			}
			arWantStats(t, a, 1, 1, 0)
			holder.cmd.Process.Signal(syscall.SIGKILL)
			<-holder.done
			if what == "all" {
				// The reader's lock on the lock byte keeps the dead
				// holder's pin; once the reader is gone, it is stale.
				arWantStats(t, a, 1, 1, 0)
				small := mustIn(t, OpenBloom, a.Place("small"), BloomConfig{Capacity: 10})
				if got := arEntryAt(t, a, "small").Offset; got == victim {
					t.Fatal("a create took a pinned room whose lock byte is locked")
				}
				small.Close()
				if err := a.Remove("small"); err != nil {
					t.Fatal(err)
				}
				in.Close()
				<-h.done
			}
			x := mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10})
			if got := arEntryAt(t, a, "x").Offset; got != victim {
				t.Errorf("after the pinned holder died, a create went to %d, want the room at %d", got, victim)
			}
			x.Close() // its own pin, where the reader still blocks marks, goes too
			if pins := atomic.LoadUint32(state) >> roomPinShift; pins != 0 {
				t.Errorf("the reused entry has %d pins, want 0", pins)
			}
			if err := a.Check(); err != nil {
				t.Errorf("Check = %v", err)
			}
		})
	}
}

// arIndex returns the directory index of the entry at offset off.
func arIndex(t *testing.T, a *Arena, off uint64) uint32 {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.lay.entries {
		if e.off == off {
			return uint32(i)
		}
	}
	t.Fatalf("no entry at %d", off)
	return 0
}

// withoutProc makes the room code find no /proc (reopening a descriptor
// through /proc/self/fd fails) until the test ends.
func withoutProc(t *testing.T) {
	saved := reopenRoomFd
	reopenRoomFd = func(int, int) (int, error) { return -1, unix.ENOENT }
	t.Cleanup(func() { reopenRoomFd = saved })
}

// TestArena_RoomsSharedDescription: without /proc, a second arena handle
// opened from the first's File shares its open file description, whose
// locks F_OFD_GETLK never reports to it; a structure the second handle
// holds and writes is removed through the first, and the next create of
// the first must not take its room: the adds of both land where they
// belong. With /proc it is held as any other handle's; once the holder is
// closed, the room is reused with /proc and, where who holds it cannot be
// told, never.
func TestArena_RoomsSharedDescription(t *testing.T) {
	for _, proc := range []bool{true, false} {
		for _, place := range []string{"path", "memfd"} {
			t.Run(fmt.Sprintf("proc=%v/%s", proc, place), func(t *testing.T) {
				if !proc {
					withoutProc(t)
				}
				at := Path(tempPath(t, "arena"))
				if place == "memfd" {
					at = Memfd("rooms")
				}
				a, err := OpenArena(at, ArenaConfig{Size: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				cfg := CountMinConfig{Rows: 2, Width: 256}
				mustIn(t, OpenCountMin, a.Place("s"), cfg).Close()
				mustIn(t, OpenCountMin, a.Place("after"), cfg).Close()
				room := arEntryAt(t, a, "s").Offset
				f, err := a.File()
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				b, err := OpenArena(Inherited(f.Fd()), ArenaConfig{})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				held := mustIn(t, OpenCountMin, b.Place("s"), cfg)
				held.AddString("old")
				if err := a.Remove("s"); err != nil {
					t.Fatal(err)
				}
				arWantStats(t, a, 1, 1, 0)
				fresh := mustIn(t, OpenCountMin, a.Place("s"), cfg)
				if got := arEntryAt(t, a, "s").Offset; got == room {
					t.Fatal("a create took the room a handle sharing its description holds")
				}
				held.AddString("old")
				fresh.AddString("new")
				if got, gotNew := held.EstimateString("old"), held.EstimateString("new"); got != 2 || gotNew != 0 {
					t.Errorf("the removed structure reads old %d, new %d; want 2, 0", got, gotNew)
				}
				if got, gotOld := fresh.EstimateString("new"), fresh.EstimateString("old"); got != 1 || gotOld != 0 {
					t.Errorf("the new structure reads new %d, old %d; want 1, 0", got, gotOld)
				}
				held.Close()
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				x := mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10})
				x.AddString("k")
				got := arEntryAt(t, a, "x").Offset
				switch {
				case proc && got != room:
					t.Errorf("once its holder closed, a create went to %d, want the room at %d", got, room)
				case !proc && got == room:
					t.Errorf("without /proc, a create reused a room whose holders it cannot tell")
				}
				if err := a.Check(); err != nil {
					t.Errorf("Check = %v", err)
				}
			})
		}
	}
}

const envNoProc = "SKETCH_TEST_NOPROC" // "1": the room code finds no /proc

var _ = role("roomshared", childRoomShared)

// childRoomShared opens the arena handed over as fd 3 (without /proc when
// envNoProc says so), opens "s" read-write and adds "child" once, tells
// the parent on fd 4, waits until fd 5 ends, adds "child" 1000 times more
// and exits.
func childRoomShared() error {
	if os.Getenv(envNoProc) == "1" {
		reopenRoomFd = func(int, int) (int, error) { return -1, unix.ENOENT }
	}
	a, err := OpenArena(Inherited(3), ArenaConfig{})
	if err != nil {
		return err
	}
	c, err := OpenCountMin(a.Place("s"), CountMinConfig{})
	if err != nil {
		return err
	}
	c.AddString("child")
	os.NewFile(4, "ready").Write([]byte{1})
	io.Copy(io.Discard, os.NewFile(5, "go"))
	for range 1000 {
		c.AddString("child")
	}
	return c.Close()
}

// TestArena_RoomsChildGivenMemfd: a child given an arena's memfd shares
// its open file description; it holds a structure and writes it while the
// parent removes it and creates the name again. With or without /proc
// (in both processes), and whichever backend the child runs, the new
// structure does not take the room, and the child's adds never reach it.
func TestArena_RoomsChildGivenMemfd(t *testing.T) {
	requireReexec(t)
	exes := map[string]string{Backend: ""}
	if other := otherBackendExe(t); other != "" {
		exes["other backend"] = other
	}
	for _, proc := range []bool{true, false} {
		for child, exe := range exes {
			t.Run(fmt.Sprintf("proc=%v/child %s", proc, child), func(t *testing.T) {
				if !proc {
					withoutProc(t)
				}
				a, err := OpenArena(Memfd("rooms"), ArenaConfig{Size: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				cfg := CountMinConfig{Rows: 2, Width: 256}
				mustIn(t, OpenCountMin, a.Place("s"), cfg).Close()
				mustIn(t, OpenCountMin, a.Place("after"), cfg).Close()
				room := arEntryAt(t, a, "s").Offset
				f, err := a.File()
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				readyR, readyW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer readyR.Close()
				goR, goW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer goW.Close()
				noProc := map[bool]string{true: "0", false: "1"}[proc]
				h := startHelper(t, childContext(t), exe, "child", "roomshared", envs(envNoProc, noProc), f, readyW, goR)
				readyW.Close()
				goR.Close()
				if _, err := readyR.Read(make([]byte, 1)); err != nil {
					t.Fatalf("the child never opened the structure: %v", err)
				}
				if err := a.Remove("s"); err != nil {
					t.Fatal(err)
				}
				fresh := mustIn(t, OpenCountMin, a.Place("s"), cfg)
				if got := arEntryAt(t, a, "s").Offset; got == room {
					t.Error("a create took the room a child sharing the memfd's description holds")
				}
				fresh.AddString("new")
				goW.Close()
				h.wait(t)
				if got, gotNew := fresh.EstimateString("child"), fresh.EstimateString("new"); got != 0 || gotNew != 1 {
					t.Errorf("the new structure reads child %d, new %d; want 0, 1", got, gotNew)
				}
				if err := a.Check(); err != nil {
					t.Errorf("Check = %v", err)
				}
			})
		}
	}
}

// TestArena_RoomsReadOnlyViewKeepsNothing: a read-only handle of a
// structure (another mapping, as another process's) keeps nothing once
// the structure is removed: both handles' Stats call the room reusable,
// and the next create takes it while the view is open.
func TestArena_RoomsReadOnlyViewKeepsNothing(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	cfg := CountMinConfig{Rows: 2, Width: 256}
	mustIn(t, OpenCountMin, a.Place("s"), cfg).Close()
	mustIn(t, OpenCountMin, a.Place("after"), cfg).Close()
	room := arEntryAt(t, a, "s").Offset
	ro := mustOpenArena(t, path, 0, WithReadOnly())
	view := mustIn(t, OpenCountMin, ro.Place("s"), CountMinConfig{}, WithReadOnly())
	if err := a.Remove("s"); err != nil {
		t.Fatal(err)
	}
	arWantStats(t, a, 1, 1, 1)
	arWantStats(t, ro, 1, 1, 1)
	mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10})
	if got := arEntryAt(t, a, "x").Offset; got != room {
		t.Errorf("with a read-only view open on the removed structure, a create went to %d, want its room at %d", got, room)
	}
	view.Close()
}

// TestArena_RoomsMarkSteps: a holder whose first bytes of a mark range
// are taken (other holders' write locks, one byte each, then a reader's
// read lock over several) marks the first byte after them, and one whose
// bytes up to the range's end are taken wraps to its start; every mark is
// seen from another description, none from a read lock alone.
func TestArena_RoomsMarkSteps(t *testing.T) {
	path := tempPath(t, "file")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() int {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	others, reader, holder, asker := open(), open(), open(), open()
	lock := func(fd int, typ int16, start, n int64) {
		t.Helper()
		if err := setRoomLock(fd, typ, start, n); err != nil {
			t.Fatal(err)
		}
	}
	const idx = 7
	base := int64(roomMarkBase + idx*roomMarkSpan)
	first := markStart(holder)
	if first == 0 || first+10 > roomMarkSpan {
		t.Skipf("the holder starts at %d, at an end of the range, where this test cannot step", first)
	}
	if roomMarked(asker, idx) {
		t.Fatal("an unmarked room is reported marked")
	}
	lock(reader, unix.F_RDLCK, base, roomMarkSpan)
	if roomMarked(asker, idx) {
		t.Fatal("a reader's read lock over the range is reported as a mark")
	}
	lock(reader, unix.F_UNLCK, base, roomMarkSpan)
	for j := range int64(3) {
		lock(others, unix.F_WRLCK, base+first+j, 1)
	}
	lock(reader, unix.F_RDLCK, base+first+3, 7)
	off, ok, err := markRoom(holder, idx)
	if err != nil || !ok || off != base+first+10 {
		t.Fatalf("markRoom = %d, %v, %v; want %d, true, nil", off-base, ok, err, first+10)
	}
	lock(others, unix.F_UNLCK, base, roomMarkSpan)
	if !roomMarked(asker, idx) || !roomMarked(others, idx) {
		t.Fatal("the holder's mark is not seen from other descriptions")
	}
	unmarkRoom(holder, off)
	if roomMarked(asker, idx) {
		t.Fatal("a mark given back is still seen")
	}
	// Everything from first to the end is taken: the holder wraps.
	lock(reader, unix.F_RDLCK, base+first, roomMarkSpan-first)
	off, ok, err = markRoom(holder, idx)
	if err != nil || !ok || off != base {
		t.Fatalf("markRoom = %d, %v, %v; want 0, true, nil", off-base, ok, err)
	}
	unmarkRoom(holder, off)
	// And with every byte read-locked, there is no mark to take.
	lock(reader, unix.F_RDLCK, base, roomMarkSpan)
	if _, ok, err := markRoom(holder, idx); ok || err != nil {
		t.Fatalf("markRoom over a range read-locked whole = %v, %v; want false, nil", ok, err)
	}
}

// TestOpen_ErrCorruptPinsOutsideArena: the high half of the state word
// counts an arena room's pins; a standalone file with any there is
// ErrCorrupt, as an unknown state is.
func TestOpen_ErrCorruptPinsOutsideArena(t *testing.T) {
	path := tempPath(t, "cms")
	mustOpen(t, path, CountMinConfig{Rows: 2, Width: 64}).Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [4]byte
	if _, err := f.ReadAt(hdr[:], offDirOff); err != nil {
		t.Fatal(err)
	}
	var word [4]byte
	native.PutUint32(word[:], entryLive|roomPinOne)
	if _, err := f.WriteAt(word[:], int64(native.Uint32(hdr[:]))+entFlags); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCountMin(Path(path), CountMinConfig{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open = %v, want ErrCorrupt", err)
	}
}
