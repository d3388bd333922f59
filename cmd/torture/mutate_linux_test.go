package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// resum must reach the checks behind the checksums: a header field changed
// and resummed opens (the seed is not checked against a zero config), the
// same change without it is ErrChecksum. This ties mutate_ops.go's copy of
// the format to the library's.
func TestResum_PassesTheChecksums(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cms")
	c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	valid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if hot := hotSpans(valid); len(hot) != 3 {
		t.Errorf("hotSpans of a standalone file = %v, want header, entry, region", hot)
	}
	for _, resummed := range []bool{false, true} {
		b := bytes.Clone(valid)
		b[24] ^= 1 // the seed
		if resummed {
			resum(b)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{}, sketch.WithReadOnly())
		switch {
		case resummed && err != nil:
			t.Errorf("resummed: %v, want it to open", err)
		case !resummed && !errors.Is(err, sketch.ErrChecksum):
			t.Errorf("not resummed: %v, want ErrChecksum", err)
		}
		if err == nil {
			c.Close()
		}
	}
}

// The opener opens a valid file with its own kind only, read-only and
// read-write, and garbage with none.
func TestRunHostile(t *testing.T) {
	dir := t.TempDir()
	specs, err := makeSpecimens(dir, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, bytes.Repeat([]byte{0xa5}, 3*fmtPage), 0o600)
	paths := []string{garbage}
	for _, sp := range specs {
		paths = append(paths, filepath.Join(dir, sp.name))
	}
	var out bytes.Buffer
	scratch := t.TempDir()
	if err := runHostile(strings.NewReader(strings.Join(paths, "\n")), &out, scratch); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	for i, p := range paths {
		var r hostileResult
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		name := filepath.Base(p)
		want := 2 // read-only and read-write
		switch {
		case name == "garbage":
			want = 0
		case strings.HasSuffix(name, "-frozen"):
			want = 1 // read-write is refused
		}
		if r.File != i || r.Opens != 2*len(openers) || r.Opened != want || len(r.Panics) > 0 || r.Errs[unclassified] > 0 {
			t.Errorf("%s: %+v, want %d opens, %d opened, no panic", name, r, 2*len(openers), want)
		}
		if strings.HasSuffix(name, "-frozen") && r.Errs["ErrFrozen"] != len(openers) {
			t.Errorf("%s: %d ErrFrozen, want %d (every read-write open)", name, r.Errs["ErrFrozen"], len(openers))
		}
	}
	if left, _ := os.ReadDir(scratch); len(left) > 0 {
		t.Errorf("scratch holds %d files after the run", len(left))
	}
}

// A child that hangs, dies of a signal or panics costs its file a
// violation, and a new child goes on with the files after it.
func TestOpenBatch_ChildFates(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "opener")
	os.WriteFile(script, []byte(`#!/bin/sh
i=0
while read -r f; do
	case "$(cat "$f")" in
	ok) echo "{\"file\":$i,\"opens\":12,\"opened\":2,\"errs\":{\"ErrIncompatible\":10}}" ;;
	segv) kill -SEGV $$ ;;
	hang) exec sleep 30 ;;
	panic) echo "panic: boom" >&2; exit 2 ;;
	esac
	i=$((i+1))
done
`), 0o755)
	var batch []mutant
	for i, fate := range []string{"ok", "segv", "ok", "hang", "ok", "panic", "ok"} {
		p := filepath.Join(dir, fate+string(rune('0'+i)))
		os.WriteFile(p, []byte(fate), 0o600)
		batch = append(batch, mutant{index: i, path: p, what: fate})
	}
	keep := filepath.Join(dir, "kept")
	tl := newMutateTally("sh", keep)
	// The timeout is generous: a loaded machine runs a quick child late.
	if err := openBatch(build{path: script, backend: "sh"}, batch, dir, 2*time.Second, tl); err != nil {
		t.Fatal(err)
	}
	if tl.files != 7 || tl.opened != 8 || tl.signals != 1 || tl.hangs != 1 || tl.panics != 1 || tl.crashes != 0 {
		t.Errorf("tally: files %d, opened %d, signals %d, hangs %d, panics %d, crashes %d; want 7, 8, 1, 1, 1, 0",
			tl.files, tl.opened, tl.signals, tl.hangs, tl.panics, tl.crashes)
	}
	if !strings.HasPrefix(tl.first, "#1 (segv): signal: SIGSEGV") {
		t.Errorf("first = %q, want the SIGSEGV of #1", tl.first)
	}
	for _, i := range []string{"000001", "000003", "000005"} {
		if _, err := os.Stat(filepath.Join(keep, i)); err != nil {
			t.Errorf("file %s not kept: %v", i, err)
		}
	}
}
