//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

// hostileName retitles a terminal and forges a line of inspect's lock
// table, if printed raw: 27 bytes, within a name's 31.
const hostileName = "\x1b]0;pwned\x07\r\n  writer   none"

// Directory entry fields, as docs/FORMAT.md lays them out.
const (
	entNameOff     = 88
	entNameSize    = 32
	entChecksumOff = 120
)

// renameEntry rewrites, byte by byte, the name of the structure named old
// in the arena at path to name, with the entry's checksum made good again:
// a file as a crafted or an earlier library could leave it.
func renameEntry(t *testing.T, path, old, name string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	field := make([]byte, entNameSize)
	copy(field, old)
	i := bytes.Index(b, field)
	if i < entNameOff || len(name) >= entNameSize {
		t.Fatalf("no entry named %q in %s, or %q is too long", old, path, name)
	}
	entry := b[i-entNameOff:][:entChecksumOff+8]
	clear(field)
	copy(field, name)
	copy(entry[entNameOff:], field)
	binary.NativeEndian.PutUint64(entry[entChecksumOff:], xxh3.Hash(entry[:entChecksumOff]))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestNames_Hostile: create refuses a name that does not print; a file
// that holds one anyway has it quoted in every command's output, and no
// control character reaches the terminal.
func TestNames_Hostile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.arena")
	sk(t, "create", path, "--kind", "arena", "--size", "1M").ok(t, "create arena")

	r := sk(t, "create", path+":"+hostileName, "--rows", "2", "--width", "64")
	if r.code != 1 || !strings.Contains(r.stderr, strconv.Quote(hostileName)) || strings.ContainsAny(r.stderr+r.stdout, "\x1b\x07\r") {
		t.Errorf("create of a name with an escape sequence: exit %d, stdout %q, stderr %q; want 1 and the name quoted", r.code, r.stdout, r.stderr)
	}

	sk(t, "create", path+":placeholder", "--rows", "2", "--width", "64").ok(t, "create placeholder")
	sk(t, "add", path+":placeholder", "k").ok(t, "add")
	renameEntry(t, path, "placeholder", hostileName)
	tearAddAt(t, path, 0) // a finding for check to print

	quoted := strconv.Quote(hostileName)
	for _, tc := range []struct {
		args []string
		code int
		want string // on standard output, or standard error when the command fails
	}{
		{[]string{"inspect", path}, 0, "countmin  " + quoted + "  "},
		{[]string{"stats", path}, 0, "\n" + quoted + "  countmin"},
		{[]string{"stats", path + ":" + hostileName}, 0, path + ":" + quoted + ": Count-Min sketch"},
		{[]string{"check", path}, 3, "  " + quoted + ": a torn add"},
		{[]string{"query", path + ":" + hostileName, "k"}, 0, "k\t1"},
		{[]string{"query", path + ":nosuch", "k"}, 1, "no structure named nosuch (it has " + quoted + ")"},
		{[]string{"add", path, "k"}, 2, "arena of 1 structure (" + quoted + ")"},
		{[]string{"create", path + ":" + hostileName, "--kind", "bloom", "--capacity", "10"}, 1, "the arena has a countmin named " + quoted},
		{[]string{"watch", path + ":" + hostileName, "--count", "1", "--interval", "10ms"}, 0, "total_adds=1"},
		{[]string{"watch", "--json", path + ":" + hostileName, "--count", "1", "--interval", "10ms"}, 0, `"total":1`},
	} {
		t.Run(strings.Join(tc.args[:1], " "), func(t *testing.T) {
			r := sk(t, tc.args...)
			out := r.stdout
			if tc.code == 1 || tc.code == 2 {
				out = r.stderr
			}
			if r.code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("sketch %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
			}
			if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r") {
				t.Errorf("sketch %q printed the name raw: stdout %q, stderr %q", tc.args, r.stdout, r.stderr)
			}
		})
	}
}
