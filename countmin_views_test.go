//go:build linux

package sketch

// Tests of read-only views, frozen (sealed) files and in-memory sketches.

import (
	"bufio"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mutations runs every mutator of c and returns their errors by name.
func mutations(c *CountMin) map[string]error {
	_, add := c.Add([]byte("x"))
	_, addN := c.AddN([]byte("x"), 2)
	_, addS := c.AddString("x")
	return map[string]error{
		"Add": add, "AddN": addN, "AddString": addS,
		"AddBatch": c.AddBatch([][]byte{[]byte("x")}, nil),
		"Reset":    c.Reset(),
		"Freeze":   c.Freeze(),
	}
}

func wantMutationsFail(t *testing.T, c *CountMin, want error) {
	t.Helper()
	for name, err := range mutations(c) {
		if !errors.Is(err, want) {
			t.Errorf("%s = %v, want %v", name, err, want)
		}
	}
}

// TestCountMin_ReadOnly: a read-only view of a 0444 file reads what the
// writers wrote, refuses every mutator, and several views coexist.
func TestCountMin_ReadOnly(t *testing.T) {
	path := tempPath(t, "cms")
	w := mustOpen(t, path, otCfg)
	w.AddN([]byte("k"), 7)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	r1 := mustOpen(t, path, CountMinConfig{}, WithReadOnly())
	r2 := mustOpen(t, path, otCfg, WithReadOnly())
	for _, r := range []*CountMin{r1, r2} {
		if !r.ReadOnly() {
			t.Error("ReadOnly() = false on a read-only view")
		}
		if got := r.Estimate([]byte("k")); got != 7 {
			t.Errorf("read-only Estimate = %d, want 7", got)
		}
		wantMutationsFail(t, r, ErrReadOnly)
		if err := r.Check(); err != nil {
			t.Errorf("read-only Check = %v", err)
		}
	}
	// The writer keeps writing; the views see it at once.
	w.AddN([]byte("k"), 3)
	if got := r1.Estimate([]byte("k")); got != 10 {
		t.Errorf("read-only Estimate after another add = %d, want 10", got)
	}
	if st := r2.Stats(); st.Total != 10 {
		t.Errorf("read-only Stats().Total = %d, want 10", st.Total)
	}
	// Nothing is created for a reader.
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := OpenCountMin(Path(missing), CountMinConfig{}, WithReadOnly()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of a missing file = %v, want ErrNotExist", err)
	}
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Errorf("a read-only open created %s", missing)
	}
}

// TestCountMin_ReadOnlyIncomplete: a read-only open never initialises, nor
// waits for nobody.
func TestCountMin_ReadOnlyIncomplete(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	for name, tc := range map[string]struct {
		data []byte
		want error
	}{
		"empty":    {nil, ErrCorrupt},
		"all zero": {make([]byte, len(tmpl)), ErrInterruptedCreate},
	} {
		t.Run(name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			otWantErr(t, otOpenErr(t, path, otCfg, WithReadOnly()), path, tc.want)
			if got, _ := os.ReadFile(path); len(got) != len(tc.data) {
				t.Errorf("a read-only open changed the file to %d bytes", len(got))
			}
		})
	}
}

// TestCountMin_Freeze: Freeze seals the file for every handle, the handle
// that froze it included; a read-write open is refused; read-only opens,
// here and of a copy shipped elsewhere, read the same counts.
func TestCountMin_Freeze(t *testing.T) {
	path := tempPath(t, "cms")
	a := mustOpen(t, path, otCfg)
	b := mustOpen(t, path, otCfg)
	a.AddN([]byte("k"), 5)
	if err := a.Freeze(); err != nil {
		t.Fatalf("Freeze() = %v", err)
	}
	if !a.Frozen() || !b.Frozen() {
		t.Errorf("Frozen() = %v, %v after Freeze, want true for both handles", a.Frozen(), b.Frozen())
	}
	wantMutationsFail(t, a, ErrFrozen)
	wantMutationsFail(t, b, ErrFrozen)
	if got := b.Estimate([]byte("k")); got != 5 {
		t.Errorf("Estimate on a frozen file = %d, want 5", got)
	}
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrFrozen)

	ship := filepath.Join(t.TempDir(), "shipped.cms")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ship, data, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, ship} {
		r := mustOpen(t, p, CountMinConfig{}, WithReadOnly())
		if !r.Frozen() || r.Estimate([]byte("k")) != 5 {
			t.Errorf("read-only view of %s: Frozen %v, Estimate %d, want true, 5", p, r.Frozen(), r.Estimate([]byte("k")))
		}
		if err := r.Check(); err != nil {
			t.Errorf("Check of %s = %v", p, err)
		}
	}
}

// TestCountMin_FreezeFromAnotherProcess: a seal set by another process is
// seen by a handle that is already open, at its next mutator.
func TestCountMin_FreezeFromAnotherProcess(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	if _, err := c.Add([]byte("before")); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, childContext(t), "", "freezer", "freeze", envs(envPath, path))
	h.wait(t)
	if _, err := c.Add([]byte("after")); !errors.Is(err, ErrFrozen) {
		t.Errorf("Add after another process froze the file = %v, want ErrFrozen", err)
	}
}

var _ = role("freeze", childFreeze)

// childFreeze freezes the sketch at envPath.
func childFreeze() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{})
	if err != nil {
		return err
	}
	return c.Freeze()
}

// TestCountMin_ReadOnlyAsAnotherUser: a user who may only read a live file
// (0644, owned by root) opens it read-only and sees the writers' counts as
// they grow.
func TestCountMin_ReadOnlyAsAnotherUser(t *testing.T) {
	requireRoot(t)
	requireReexec(t)
	dir := crossDir(t)
	path := filepath.Join(dir, "live.cms")
	w := mustOpen(t, path, otCfg, WithMode(0o644))
	h, in, out := startAsNobody(t, childContext(t), dir, "readonlyview", envPath+"="+path)
	lines := bufio.NewScanner(out)
	for round := 1; round <= 5; round++ {
		w.AddN([]byte("k"), 10)
		fmt.Fprintln(in, round)
		if !lines.Scan() {
			t.Fatalf("round %d: the reader said nothing: %v (%s)", round, lines.Err(), h.stderr.String())
		}
		got, err := strconv.ParseUint(strings.TrimSpace(lines.Text()), 10, 64)
		if err != nil {
			t.Fatalf("round %d: the reader said %q", round, lines.Text())
		}
		if got != uint64(round*10) {
			t.Errorf("round %d: the reader sees %d, want %d", round, got, round*10)
		}
	}
	in.Close()
	h.wait(t)
}

var _ = role("readonlyview", childReadOnlyView)

// childReadOnlyView opens envPath read-only (as a user who cannot write
// it) and prints the estimate of "k" for each line it reads. Its
// mutators must fail with ErrReadOnly.
func childReadOnlyView() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{}, WithReadOnly())
	if err != nil {
		return err
	}
	for name, err := range mutations(c) {
		if !errors.Is(err, ErrReadOnly) {
			return fmt.Errorf("%s on a read-only view = %v", name, err)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(c.Estimate([]byte("k")))
	}
	return nil
}

// TestCountMin_InMemory: an in-memory sketch counts like a file's, shares
// with goroutines, has no path, and can still be handed to a child.
func TestCountMin_InMemory(t *testing.T) {
	c, err := OpenCountMin(Memory(), CountMinConfig{Rows: 4, Width: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	otWorks(t, c)
	if c.Path() != "" {
		t.Errorf("Path() = %q, want empty", c.Path())
	}
	if _, err := c.AddN([]byte("k"), 4); err != nil {
		t.Fatal(err)
	}
	if got := c.Estimate([]byte("k")); got < 4 {
		t.Errorf("Estimate = %d, want >= 4", got)
	}
	if _, err := OpenCountMin(Memfd("x"), CountMinConfig{}, WithReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("OpenCountMin(Memfd) with WithReadOnly = %v, want ErrInvalidConfig", err)
	}
}

// TestOpen_InMemoryTooLarge: an in-memory or memfd structure larger
// than the machine's memory is refused with ErrNoSpace, not handed to the
// OOM killer.
func TestOpen_InMemoryTooLarge(t *testing.T) {
	huge := CountingBloomConfig{Capacity: 1 << 40} // 2^44 counters, 8 TiB
	// On a 32-bit platform the geometry itself is refused.
	if _, err := OpenCountingBloom(Memory(), huge); !errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("OpenCountingBloom(Memory, %+v) = %v, want ErrNoSpace", huge, err)
	}
	if _, err := OpenCountingBloom(Memfd("huge"), huge); !errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("OpenCountingBloom(Memfd, %+v) = %v, want ErrNoSpace", huge, err)
	}
	if bits.UintSize == 64 {
		huge := CountMinConfig{Rows: 64, Width: 1 << (bits.UintSize - 28)} // 2^36 a row, 2^45 bytes
		if _, err := OpenCountMin(Memory(), huge); !errors.Is(err, ErrNoSpace) {
			t.Errorf("OpenCountMin(Memory) of 2^45 bytes = %v, want ErrNoSpace", err)
		}
	}
}
