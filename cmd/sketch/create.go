package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/shmsketch/sketch"
)

var createCmd = &command{
	name:    "create",
	args:    "FILE --kind countmin|countingbloom [SIZING]",
	summary: "create a sketch file",
	details: `
Create makes a new sketch file and prints what it made: its shape, its
size, and its error or false-positive figures. It refuses a path that
exists. Size a Count-Min sketch (the default kind) by --error and
--confidence (or --rows and --width), a counting Bloom filter by
--capacity and --fp-rate. The file gets mode 0600 unless --mode says
otherwise, and a random hash seed unless --seed gives one (files to be
merged need the same seed, and so the same --seed).`,
	example: `sketch create /dev/shm/clients.cms --error 0.001 --confidence 0.99
sketch create /dev/shm/banned.cbf --kind countingbloom --capacity 1000000 --fp-rate 0.01 --mode 0640`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		kind := fs.String("kind", "countmin", "`KIND` to create: countmin or countingbloom")
		errRate := fs.Float64("error", 0, "countmin: error rate ε, in (0, 1) (default 0.001): estimates are high by at most ε·total")
		conf := fs.Float64("confidence", 0, "countmin: confidence of the error bound, in (0, 1) (default 0.99)")
		rows := fs.Int("rows", 0, "countmin: rows, instead of --error and --confidence")
		width := fs.Int("width", 0, "countmin: counters a row (rounded up to a power of two), with --rows")
		capacity := fs.Uint64("capacity", 0, "countingbloom: items it is sized to hold (required)")
		fpRate := fs.Float64("fp-rate", 0, "countingbloom: false-positive rate at capacity, in (0, 1) (default 0.01)")
		mode := fs.String("mode", "0600", "permission bits of the new file, in octal")
		seed := fs.Uint64("seed", 0, "hash seed (default random); keep it secret")
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "kind", "description", "bytes", "stats"}`)
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE")
			}
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if t.name != "" {
				return usageError("%s: FILE:NAME creates a structure in an arena, and this build has no arenas", t)
			}
			perm, err := strconv.ParseUint(*mode, 8, 32)
			if err != nil {
				return usageError("--mode %q is not an octal mode", *mode)
			}
			if *kind != "countmin" && *kind != "countingbloom" {
				return usageError("--kind %q: this build makes countmin or countingbloom", *kind)
			}
			// A sizing flag of another kind is a mistake, not something to ignore.
			sizes := map[string]string{"error": "countmin", "confidence": "countmin", "rows": "countmin", "width": "countmin", "capacity": "countingbloom", "fp-rate": "countingbloom"}
			var bad error
			fs.Visit(func(f *flag.Flag) {
				if k, ok := sizes[f.Name]; ok && k != *kind && bad == nil {
					bad = usageError("--%s sizes a %s, not a %s", f.Name, k, *kind)
				}
			})
			if bad != nil {
				return bad
			}
			if _, err := os.Lstat(t.path); err == nil {
				return fmt.Errorf("%s exists; remove it first (sketch rm %s), or use it as it is", t.path, t.path)
			}
			opts := []sketch.Option{sketch.WithMode(os.FileMode(perm))}
			var s structure
			switch *kind {
			case "countmin":
				cfg := sketch.CountMinConfig{ErrorRate: *errRate, Confidence: *conf, Rows: *rows, Width: *width, Seed: *seed}
				c, err := sketch.OpenCountMin(t.path, cfg, opts...)
				if err != nil {
					return err
				}
				s = &countMin{c}
			case "countingbloom":
				if *capacity == 0 {
					return usageError("a counting Bloom filter needs --capacity")
				}
				cfg := sketch.CountingBloomConfig{Capacity: *capacity, FPRate: *fpRate, Seed: *seed}
				b, err := sketch.OpenCountingBloom(t.path, cfg, opts...)
				if err != nil {
					return err
				}
				s = &countingBloom{b}
			}
			defer s.Close()
			return printCreated(t.path, s, *jsonOut)
		}
	},
}

func printCreated(path string, s structure, jsonOut bool) error {
	_, js := s.stats()
	var bytes uint64
	var figures string
	switch st := js.(type) {
	case sketch.CountMinStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("estimates are high by at most %s of the total, with %s confidence", percent(st.ErrorRate), percent(st.Confidence))
	case sketch.CountingBloomStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("false positives about %s at %d items; 4-bit counters stick at 15", percent(st.FPRate), st.Capacity)
	}
	if jsonOut {
		return printJSON(stdout, struct {
			File        string `json:"file"`
			Kind        string `json:"kind"`
			Description string `json:"description"`
			Bytes       uint64 `json:"bytes"`
			Stats       any    `json:"stats"`
		}{path, s.kind(), s.describe(), bytes, js})
	}
	fmt.Fprintf(stdout, "created %s: %s, %d bytes\n  %s\n", path, s.describe(), bytes, figures)
	return nil
}
