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

// seedSource refuses a file a new file's seed would come from (flag says
// which: --seed-file or --seed-from) when a user the command does not
// trust owns it (uid, when known), or every user may write it (perm):
// they chose the seed, and the new file would hash with a seed they know,
// so that they could craft keys that collide in it.
func seedSource(flag, path string, perm os.FileMode, uid uint32, known bool) error {
	if perm&0o002 != 0 {
		return fmt.Errorf("%s %s: every user may write it (mode %#o), and so may have chosen its seed: chmod o-w %s, or leave %s out for a random seed", flag, path, perm, path, flag)
	}
	if known && !trustedUID(uid) {
		return fmt.Errorf("%s %s: uid %d owns it, chose its seed and knows it, and the new file would share it; "+
			"give --owner %d to trust that user, or leave %s out for a random seed", flag, path, uid, uid, flag)
	}
	return nil
}

// warnReadable says on standard error when every user may read the file
// at path, and so seed, the secret seed a structure just made hashes
// with ("its secret hash seed"): a reader can craft keys that share
// another key's counters. It names the mode to give instead. A structure
// hashed with a public hash (Redis's or PostgreSQL's) has no secret to
// disclose.
func warnReadable(path, seed string, public bool) {
	st, err := os.Stat(path)
	if err != nil || public || st.Mode().Perm()&0o004 == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "sketch create: warning: every user may read %s (mode %#o), and so %s: "+
		"a local user who reads it can craft keys that share another key's counters (to have a client refused, or a loud key hidden); "+
		"give its readers a group instead: chgrp GROUP %s; chmod 0640 %s (create --mode 0640 makes a file so)\n", path, st.Mode().Perm(), seed, path, path)
}

// maxSeedFile bounds what readSeed reads: a seed is at most 20 digits.
const maxSeedFile = 64

// readSeed reads a seed from the file at path, or from stdin when path is
// "-": one number, decimal or 0x hexadecimal, with spaces and a newline
// around it. It refuses a file every user may read or write, one owned by
// a user the command does not trust (the owner rule, as for sketch files:
// whoever owns the file chose the seed, and knows it), and a zero seed,
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
		uid, known := fileUID(st)
		if err := seedSource("--seed-file", path, st.Mode().Perm(), uid, known); err != nil {
			return 0, err
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
