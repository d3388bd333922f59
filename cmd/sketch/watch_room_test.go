//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWatch_NameKeepsNoRoom: sketch watch FILE:NAME views a structure
// read-only, and a read-only view keeps no room: while watchers still run
// on removed structures, each new structure of an arena that has room for
// one takes the removed one's room. Before only read-write handles held
// rooms, the second create failed (ErrArenaFull).
func TestWatch_NameKeepsNoRoom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.arena")
	sk(t, "create", path, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	for round := range 6 {
		name := fmt.Sprintf("%s:big-%d", path, round)
		// 4 x 16384 counters, 512 KiB: one fits in the arena, two do not.
		sk(t, "create", name, "--rows", "4", "--width", "16384").ok(t, fmt.Sprintf("round %d: create", round))
		sk(t, "add", name, "k").ok(t, "add")
		cmd := exec.Command(bin, "watch", "--json", "--interval", "10ms", name)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if _, err := out.Read(make([]byte, 1)); err != nil { // it has the structure open
			t.Fatalf("round %d: watch printed nothing: %v", round, err)
		}
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := out.Read(buf); err != nil {
					return
				}
			}
		}()
		sk(t, "rm", name).ok(t, fmt.Sprintf("round %d: rm", round))
	}
}
