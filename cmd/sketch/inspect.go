package main

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

var inspectCmd = &command{
	name:    "inspect",
	args:    "FILE",
	summary: "print a file's header, directory and lock state",
	details: `
Inspect prints what the file's header says (format version, byte order,
sizes, the sealed flag, whether it is an arena), its directory (each
structure's kind, name in an arena, place and parameters, and a counters
structure's names, each quoted when it holds more than letters, digits
and "._-/") and the state of its lock: whether a writer holds it, by
which handle (token) and whether that handle is alive, the reader slots in
use and those of dead readers. It opens the file read-only and takes no
lock. The hash seed is secret, since whoever knows it can craft keys that
collide: it is printed only with --show-seed.`,
	example: `sketch inspect /dev/shm/banned.cbf
sketch inspect --json /dev/shm/banned.cbf | jq .lock`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, "print JSON (the library's FileInfo, with \"seed\" only under --show-seed)")
		showSeed := fs.Bool("show-seed", false, "print the secret hash seed too")
		return func(args []string) error {
			t, err := oneFile(args, "inspect looks at")
			if err != nil {
				return err
			}
			fi, err := sketch.Inspect(t.path)
			if err != nil {
				return err
			}
			if *jsonOut {
				if *showSeed {
					return printJSON(stdout, struct {
						sketch.FileInfo
						Seed uint64 `json:"seed"`
					}{fi, fi.Seed})
				}
				return printJSON(stdout, fi)
			}
			printInspect(fi, *showSeed)
			return nil
		}
	},
}

func printInspect(fi sketch.FileInfo, showSeed bool) {
	rows := [][2]string{
		{"file", fi.Path},
		{"format version", fmt.Sprint(fi.FormatVersion)},
		{"byte order", fi.ByteOrder},
		{"bytes", fmt.Sprint(fi.Bytes)},
		{"mode", fmt.Sprintf("%#o, owner uid %d, gid %d", uint32(fi.Mode), fi.UID, fi.GID)},
		{"header", fmt.Sprintf("%d bytes; data from offset %d", fi.HeaderBytes, fi.DataOffset)},
		{"sealed", yesNo(fi.Sealed) + map[bool]string{true: " (frozen: read-only opens only)", false: ""}[fi.Sealed]},
		{"arena", yesNo(fi.Arena) + map[bool]string{true: " (named structures; FILE:NAME addresses one)", false: ""}[fi.Arena]},
		{"directory", fmt.Sprintf("%d of %d entries", len(fi.Entries)+fi.Removed, fi.DirectoryCapacity) + removedNote(fi.Removed)},
	}
	if showSeed {
		rows = append(rows, [2]string{"seed", fmt.Sprintf("%#016x (secret)", fi.Seed)})
	}
	printTable(stdout, rows)
	fmt.Fprintln(stdout, "\nstructures:")
	cols := [][]string{{"  #", "KIND", "NAME", "OFFSET", "BYTES", "PARAMETERS"}}
	for i, e := range fi.Entries {
		name := "-" // a standalone file's structure has no name
		if e.Name != "" {
			name = quoteName(e.Name)
		}
		p := params(e.Params)
		if cfg, ok := e.Config.(sketch.CountersConfig); ok {
			p += " names=" + strings.Join(quoteNames(cfg.Names), ",")
		}
		cols = append(cols, []string{fmt.Sprintf("  %d", i), string(e.Kind), name, fmt.Sprint(e.Offset), fmt.Sprint(e.Bytes), p})
	}
	printColumns(stdout, cols)
	fmt.Fprintln(stdout, "\nlock:")
	printTable(stdout, lockRows(fi.Lock, fi.ReaderSlots))
}

// params formats a structure's parameters in name order; a period in
// nanoseconds as a duration.
func params(p map[string]float64) string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		if n == "period_ns" {
			fmt.Fprintf(&b, "period=%v", time.Duration(p[n]))
			continue
		}
		// Not %v, which prints 154883584 as 1.54883584e+08.
		fmt.Fprintf(&b, "%s=%s", n, strconv.FormatFloat(p[n], 'f', -1, 64))
	}
	return b.String()
}

// lockRows describes the lock for people.
func lockRows(l sketch.LockInfo, slots uint32) [][2]string {
	writer := "none"
	if l.Writer {
		switch {
		case l.WriterToken < 0:
			writer = "held, no owner recorded (a damaged word; the next contender clears it)"
		case l.WriterAlive:
			writer = fmt.Sprintf("held by handle %d (alive)", l.WriterToken)
		default:
			writer = fmt.Sprintf("held by handle %d, which is DEAD (killed while holding it; the next contender recovers it)", l.WriterToken)
		}
	}
	var waiting []string
	if l.WritersParked {
		waiting = append(waiting, "writers")
	}
	if l.ReadersParked {
		waiting = append(waiting, "readers")
	}
	if len(waiting) == 0 {
		waiting = append(waiting, "nobody")
	}
	readers := fmt.Sprintf("%s in %d of %d slots (%d claimed so far)", plural(l.Readers, "read lock", "read locks"), l.ReaderSlots, slots, l.SlotsClaimed)
	if l.DeadReaderSlots > 0 {
		readers += fmt.Sprintf("; %d of them DEAD (the next writer clears them)", l.DeadReaderSlots)
	}
	return [][2]string{
		{"  writer", writer},
		{"  readers", readers},
		{"  waiting", strings.Join(waiting, " and ") + map[bool]string{true: " (readers' turn)", false: ""}[l.ReadersTurn]},
		{"  handles", fmt.Sprintf("%d open read-write handles that lock", l.Handles)},
	}
}

// removedNote says how many directory entries hold removed structures.
func removedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d removed, their rooms reused by later creates)", n)
}
