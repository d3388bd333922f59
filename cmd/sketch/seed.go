package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A hash seed is a secret: whoever knows it can craft keys that collide.
// A command line is not a place for one (every local user may read
// /proc/PID/cmdline), so create reads it from a file or standard input.

// errSeedOnCommandLine refuses --seed VALUE.
var errSeedOnCommandLine = usageError("--seed VALUE would show the secret seed to every local user (in the process's command line): " +
	"put it in a file only you may read and give --seed-file FILE, or pipe it in with --seed-file -")

// maxSeedFile bounds what readSeed reads: a seed is at most 20 digits.
const maxSeedFile = 64

// readSeed reads a seed from the file at path, or from stdin when path is
// "-": one number, decimal or 0x hexadecimal, with spaces and a newline
// around it. It refuses a file every user may read, and a zero seed,
// which would mean "draw a random one".
func readSeed(path string, stdin io.Reader) (uint64, error) {
	what := path
	if path == "-" {
		what = "standard input"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return 0, fmt.Errorf("--seed-file: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return 0, fmt.Errorf("--seed-file: %w", err)
		}
		if perm := st.Mode().Perm(); perm&0o004 != 0 {
			return 0, fmt.Errorf("--seed-file %s: every user may read it (mode %#o), and the seed is a secret: chmod o-r %s", path, perm, path)
		}
		stdin = f
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxSeedFile+1))
	if err != nil {
		return 0, fmt.Errorf("--seed-file: reading %s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if len(b) > maxSeedFile || s == "" {
		return 0, usageError("--seed-file: %s does not hold one seed (a decimal or 0x hexadecimal number)", what)
	}
	var seed uint64
	if hex, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		seed, err = strconv.ParseUint(hex, 16, 64)
	} else {
		seed, err = strconv.ParseUint(s, 10, 64)
	}
	switch {
	case err != nil:
		return 0, usageError("--seed-file: %s does not hold one seed (a decimal or 0x hexadecimal number below 2^64)", what)
	case seed == 0:
		return 0, usageError("--seed-file: %s holds 0, which means a random seed: leave --seed-file out for that", what)
	}
	return seed, nil
}
