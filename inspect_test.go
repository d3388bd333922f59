//go:build linux

package sketch

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch/internal/cells"
)

func TestInspect_CountMin(t *testing.T) {
	path := tempPath(t, "cms")
	const seed = 0x1234_5678_9abc_def1
	c := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1024, Seed: seed}, WithMode(0o640))
	fi := mustInspect(t, path)
	want := FileInfo{
		Path:              path,
		FormatVersion:     formatVersion,
		ByteOrder:         byteOrderName(),
		Bytes:             c.Stats().Bytes,
		Mode:              0o640,
		UID:               uint32(os.Geteuid()),
		GID:               uint32(os.Getegid()),
		HeaderBytes:       128,
		DataOffset:        28672, // 256 + 8*1024 slots + 16*1024 tokens + 128 of directory, to a page
		ReaderSlots:       1024,
		DirectoryCapacity: 1,
		Entries: []EntryInfo{{
			Kind: "countmin", Description: "Count-Min sketch",
			Offset: 28672, Bytes: 4096 + 4*1024*8,
			Params: map[string]float64{"rows": 4, "width": 1024},
		}},
		Lock: LockInfo{WriterToken: -1},
		Seed: seed,
	}
	if diff := cmp.Diff(want, fi); diff != "" {
		t.Errorf("Inspect (-want +got):\n%s", diff)
	}
	// The seed is in neither the JSON nor the string forms.
	js, err := json.Marshal(fi)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{string(js), fi.String(), fi.GoString()} {
		for _, s := range []string{strconv.FormatUint(seed, 10), strconv.FormatUint(seed, 16)} {
			if strings.Contains(form, s) {
				t.Errorf("%s shows the seed", form)
			}
		}
	}
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	if !mustInspect(t, path).Sealed {
		t.Error("Inspect after Freeze: Sealed = false")
	}
}

func TestInspect_CountingBloom(t *testing.T) {
	path := tempPath(t, "cbf")
	b, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 1000, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fi := mustInspect(t, path)
	if len(fi.Entries) != 1 {
		t.Fatalf("Inspect: %d entries, want 1", len(fi.Entries))
	}
	e := fi.Entries[0]
	want := map[string]float64{"capacity": 1000, "fp_rate": 0.01, "counters": float64(b.Counters()), "hashes": float64(b.Hashes())}
	if diff := cmp.Diff(want, e.Params); diff != "" || e.Kind != "countingbloom" {
		t.Errorf("Inspect: kind %q, params (-want +got):\n%s", e.Kind, diff)
	}
	// The open handle holds token 0 and claimed slot 0; no lock is held.
	if diff := cmp.Diff(LockInfo{WriterToken: -1, SlotsClaimed: 1, Handles: 1}, fi.Lock); diff != "" {
		t.Errorf("Lock (-want +got):\n%s", diff)
	}
	b.Close()
	if diff := cmp.Diff(LockInfo{WriterToken: -1, SlotsClaimed: 1}, mustInspect(t, path).Lock); diff != "" {
		t.Errorf("Lock after Close (-want +got):\n%s", diff)
	}
}

// TestInspect_BloomWindow: kind 5's parameter words decoded, standalone
// and in an arena, and their JSON names.
func TestInspect_BloomWindow(t *testing.T) {
	path := tempPath(t, "bw")
	w, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{Period: 250 * time.Millisecond, Keep: 4}, Bloom: BloomConfig{Capacity: 3000, FPRate: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fi := mustInspect(t, path)
	if len(fi.Entries) != 1 || fi.Arena {
		t.Fatalf("Inspect: %d entries, arena %v; want 1 standalone", len(fi.Entries), fi.Arena)
	}
	e := fi.Entries[0]
	want := map[string]float64{"capacity": 3000, "fp_rate": 0.001, "bits": float64(w.Bits()), "hashes": float64(w.Hashes()), "period_ns": 250e6, "keep": 4}
	if diff := cmp.Diff(want, e.Params); diff != "" || e.Kind != "bloomwindow" || e.Description != "Bloom window" {
		t.Errorf("Inspect: kind %q (%q), params (-want +got):\n%s", e.Kind, e.Description, diff)
	}
	if blocks := w.Bits() / cells.BloomBlockBits; w.Bits() == 0 || e.Bytes != bloomWindowBytes(blocks, 4) {
		t.Errorf("Inspect: region of %d bytes, want %d slots of %d bits and the control words", e.Bytes, 5, w.Bits())
	}
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"period_ns":250000000`) || !strings.Contains(string(js), `"fp_rate":0.001`) {
		t.Errorf("JSON of the entry: %s", js)
	}

	// In an arena, turned by Rotate only.
	apath := tempPath(t, "arena")
	a, err := OpenArena(Path(apath), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aw, err := OpenBloomWindow(a.Place("recent"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 100}})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	fi = mustInspect(t, apath)
	if len(fi.Entries) != 1 {
		t.Fatalf("Inspect of the arena: %d entries, want 1", len(fi.Entries))
	}
	e = fi.Entries[0]
	want = map[string]float64{"capacity": 100, "fp_rate": DefaultFPRate, "bits": float64(aw.Bits()), "hashes": float64(aw.Hashes()), "period_ns": 0, "keep": 2}
	if diff := cmp.Diff(want, e.Params); diff != "" || e.Name != "recent" || e.Kind != "bloomwindow" {
		t.Errorf("Inspect of the arena: %q %q, params (-want +got):\n%s", e.Name, e.Kind, diff)
	}
}

// TestInspect_LockHolders has a child hold the lock, reads it held by a
// live handle, kills the child with SIGKILL and reads it held by a dead
// one: the state a killed holder leaves until the next contender.
func TestInspect_LockHolders(t *testing.T) {
	requireReexec(t)
	for _, mode := range []string{"w", "r"} {
		t.Run(mode, func(t *testing.T) {
			path := tempPath(t, "cms")
			mustOpen(t, path, lockCfg) // takes no token: Count-Min does not lock
			child := startLockChild(t, childContext(t), "lockhold", path, envs(envLockMode, mode))
			child.expect(t, "held 0")
			live, dead := LockInfo{WriterToken: -1, SlotsClaimed: 1, Handles: 1}, LockInfo{WriterToken: -1, SlotsClaimed: 1}
			if mode == "w" {
				live.Writer, live.WriterToken, live.WriterAlive = true, 0, true
				dead.Writer, dead.WriterToken = true, 0
			} else {
				live.Readers, live.ReaderSlots = 1, 1
				dead.Readers, dead.ReaderSlots, dead.DeadReaderSlots = 1, 1, 1
			}
			if diff := cmp.Diff(live, mustInspect(t, path).Lock); diff != "" {
				t.Errorf("Lock held by a live child (-want +got):\n%s", diff)
			}
			if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-child.done
			if diff := cmp.Diff(dead, mustInspect(t, path).Lock); diff != "" {
				t.Errorf("Lock held by a killed child (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInspect_Errors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	mustOpen(t, good, CountMinConfig{Rows: 1, Width: 64})
	size := mustInspect(t, good).Bytes
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	bad[30] ^= 0xff // the seed, under the checksum
	if err := os.Symlink(good, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
		{"empty", write("empty", nil), ErrCorrupt},
		{"zero magic", write("zero", make([]byte, size)), ErrInterruptedCreate},
		{"checksum", write("bad", bad), ErrChecksum},
		{"symlink", filepath.Join(dir, "link"), ErrSymlink},
		{"directory", dir, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inspect(tc.path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Inspect(%s) = %v, want %v naming the file", tc.path, err, tc.want)
			}
		})
	}
}

// TestInspect_Arena: an arena's entries, each kind's parameters decoded.
func TestInspect_Arena(t *testing.T) {
	path := tempPath(t, "arena")
	a, err := OpenArena(Path(path), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := OpenCountMin(a.Place("cms"), CountMinConfig{Rows: 3, Width: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := OpenBloom(a.Place("seen"), BloomConfig{Capacity: 5000, FPRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb, err := OpenCountingBloom(a.Place("cbf"), CountingBloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	w, err := OpenCountMinWindow(a.Place("win"), CountMinWindowConfig{Window: Window{Period: 1500 * time.Millisecond, Keep: 3}, CountMin: CountMinConfig{Rows: 2, Width: 128}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fi := mustInspect(t, path)
	if !fi.Arena || fi.Bytes != 1<<20 {
		t.Errorf("Inspect: arena %v, %d bytes; want an arena of %d", fi.Arena, fi.Bytes, 1<<20)
	}
	type got struct {
		Name, Kind string
		Params     map[string]float64
	}
	var gots []got
	for _, e := range fi.Entries {
		gots = append(gots, got{e.Name, string(e.Kind), e.Params})
	}
	want := []got{
		{"cms", "countmin", map[string]float64{"rows": 3, "width": 256}},
		{"seen", "bloom", map[string]float64{"capacity": 5000, "fp_rate": 0.001, "bits": float64(b.Bits()), "hashes": float64(b.Hashes())}},
		{"cbf", "countingbloom", map[string]float64{"capacity": 100, "fp_rate": DefaultFPRate, "counters": float64(cb.Counters()), "hashes": float64(cb.Hashes())}},
		{"win", "countminwindow", map[string]float64{"rows": 2, "width": 128, "period_ns": 1.5e9, "keep": 3}},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("Inspect entries (-want +got):\n%s", diff)
	}
	for i, e := range fi.Entries {
		if e.Description == "" || e.Bytes == 0 || (i > 0 && e.Offset < fi.Entries[i-1].Offset+fi.Entries[i-1].Bytes) {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	// A standalone file is not an arena.
	alone := tempPath(t, "cms")
	mustOpen(t, alone, CountMinConfig{Rows: 1, Width: 64})
	if mustInspect(t, alone).Arena {
		t.Error("Inspect of a standalone Count-Min sketch: Arena = true")
	}
}

// TestInspect_EveryKind: Inspect lists a structure of every kind
// (testKinds) in an arena with its kind, its description and its
// parameters by name.
func TestInspect_EveryKind(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	for i := range testKinds {
		mustOpenTestKind(t, &testKinds[i], a.Place(testKinds[i].name))
	}
	fi := mustInspect(t, path)
	if len(fi.Entries) != len(testKinds) {
		t.Fatalf("Inspect: %d entries, want %d", len(fi.Entries), len(testKinds))
	}
	numbers := kindNumbers()
	for i, e := range fi.Entries {
		k := testKinds[i]
		if e.Name != k.name || e.Kind != k.kind || e.Description != kindName(numbers[i]) || len(e.Params) == 0 {
			t.Errorf("entry %d: %q, kind %q (%q), params %v; want %q of kind %q (%q) with its params",
				i, e.Name, e.Kind, e.Description, e.Params, k.name, k.kind, kindName(numbers[i]))
		}
	}
}

// Remove takes a valid sketch file of any kind, or an arena, away from its
// path; handles keep working. Anything else stays, and says why.
func TestRemove(t *testing.T) {
	dir := t.TempDir()
	cmsPath := filepath.Join(dir, "cms")
	c, err := OpenCountMin(Path(cmsPath), CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Add([]byte("k"))
	arenaPath := filepath.Join(dir, "arena")
	a, err := OpenArena(Path(arenaPath), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	frozenPath := filepath.Join(dir, "frozen")
	f, err := OpenBloom(Path(frozenPath), BloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Freeze(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(frozenPath, 0o400); err != nil { // read permission is enough
		t.Fatal(err)
	}
	for _, p := range []string{cmsPath, arenaPath, frozenPath} {
		if err := Remove(p); err != nil {
			t.Errorf("Remove(%s) = %v", p, err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove: %v", p, err)
		}
	}
	if got := c.Estimate([]byte("k")); got != 1 {
		t.Errorf("the open handle estimates %d after Remove, want 1", got)
	}
	if err := Remove(cmsPath); err != nil {
		t.Errorf("Remove of a path with no file = %v, want nil", err)
	}

	// What is not a valid sketch file stays.
	notSketch := filepath.Join(dir, "notes.txt")
	os.WriteFile(notSketch, []byte("not a sketch, but long enough to be mistaken for a header if nobody checked the magic at all............................................................................................................................................................................................................................................................"), 0o600)
	interrupted := filepath.Join(dir, "interrupted")
	os.WriteFile(interrupted, make([]byte, 1<<16), 0o600)
	target := filepath.Join(dir, "target")
	tc, err := OpenCountMin(Path(target), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	tc.Close()
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	for _, tt := range []struct {
		path string
		want error
	}{
		{notSketch, ErrCorrupt},
		{interrupted, ErrInterruptedCreate},
		{link, ErrSymlink},
		{dir, ErrCorrupt},
		{"/proc/self/fd/0", ErrInvalidArgument},
		{"", ErrInvalidArgument},
	} {
		if err := Remove(tt.path); !errors.Is(err, tt.want) {
			t.Errorf("Remove(%q) = %v, want %v", tt.path, err, tt.want)
		}
		if tt.path != "" {
			if _, err := os.Lstat(tt.path); err != nil {
				t.Errorf("%s was removed: %v", tt.path, err)
			}
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the symlink's target was removed: %v", err)
	}

	// A file that replaces the judged one at the path stays.
	racy := filepath.Join(dir, "racy")
	rc, err := OpenCountMin(Path(racy), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	testHookBeforeUnlinkRename = func() {
		os.Remove(racy)
		os.WriteFile(racy, []byte("a newer file"), 0o600)
	}
	defer func() { testHookBeforeUnlinkRename = nil }()
	if err := Remove(racy); err != nil {
		t.Errorf("Remove with the file replaced meanwhile = %v", err)
	}
	if b, err := os.ReadFile(racy); err != nil || string(b) != "a newer file" {
		t.Errorf("the replacement is gone or changed: %q, %v", b, err)
	}
}
