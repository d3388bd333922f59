package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/shmsketch/sketch"
)

const kindList = "countmin, bloom, countingbloom, countminwindow, bloomwindow, distinct, distinctwindow, gcra, counters, set, setwindow or arena"

var createCmd = &command{
	name:       "create",
	opensFiles: true,
	args:       "FILE[:NAME] --kind countmin|bloom|countingbloom|countminwindow|bloomwindow|distinct|distinctwindow|gcra|counters|set|setwindow|arena [SIZING]",
	summary:    "create a sketch file, an arena, or a structure in an arena",
	details: `
Create makes a new sketch file and prints what it made: its shape, its
size, and its error or false-positive figures. It refuses a path that
exists. Size a Count-Min sketch (the default kind) by --error and
--confidence (or --rows and --width); a Bloom filter or a counting Bloom
filter by --capacity and --fp-rate; a Count-Min window by the Count-Min
sizing and --keep K periods of --period D (0: periods turn only on
sketch rotate); either Count-Min kind keeps a table of the loudest keys
with --candidates K (see sketch top), and a fleet part, the rest of a
fleet's counts that a fleet agent writes and every answer adds, with
--fleet (a counting Bloom filter too: bans and unbans made on any host
then hold on every host); a Bloom window by --capacity and
--fp-rate of each period's filter and --keep and --period; a distinct
count by --error, its relative standard error (default 0.81%: 16384
registers), or --precision P (2^P registers), and --redis for Redis's
hash and 16384 registers, whose exports (sketch export --format redis)
merge in Redis with keys PFADDed there, or --postgresql for the hash of
PostgreSQL's hll extension (at most 2^17 registers), whose exports
(sketch export --format postgresql) unite in PostgreSQL with keys added
there (both hashes are public: crafted keys can aim at them); a distinct
window by a distinct count's sizing and
--keep and --period; a rate limiter (gcra, see sketch allow) by --rate,
the requests a key may make in the long run as nginx's limit_req writes
it (10/s, 10r/s, 30r/m, 1/h, or 100/10s), --burst B, how many more an
idle key may make at once (B+1 in all, as limit_req's burst=B nodelay),
and --keys N, the keys busy at once it is sized for (default 4096: 1 MiB),
or --rows and --width, its grid of times; exact counters (counters)
by their names, fixed at create: --names 200,404,500, or --name X once
a name (a name that holds a comma needs --name), in the order given, 1
to 1024 names of 1 to 64 bytes of printable text (they keep the seed,
as every kind does, and hash nothing with it); an exact set (set) by
--capacity, the most keys it holds at once (an add of a new key past it
is refused, nothing is evicted), and --key-bytes B, its longest key (a
multiple of 8 up to 1024, default 64); an exact set window (setwindow)
by those and --period and --keep, its keys leaving with their period;
an arena by --size, the bytes of its file (K, M and G suffixes are KiB,
MiB and GiB).

FILE:NAME makes a structure named NAME in the existing arena FILE (from
create FILE --kind arena), refusing a name it has; it hashes with the
arena's seed. A new file gets mode 0600 unless --mode says otherwise, and
a random hash seed unless --seed-file gives one. Files to be merged need
the same seed: --seed-from OTHER gives the new file the seed of the sketch
file OTHER (read, never printed). The seed is a secret, since whoever
knows it can craft keys that collide, so it is never given on the command
line, which every local user may read: --seed-file FILE reads it from a
file that other users may not read (one number, decimal or 0x
hexadecimal), --seed-file - from standard input. --seed-from and
--seed-file take a seed only from a file owned by the caller, root or a
user named with --owner, that not every user may write: whoever owns or
may write it chose the seed and knows it. Whoever may read a sketch file
reads its seed too, and can then craft keys that share another key's
counters (to have a client refused, or a loud key hidden): create warns
when every user may read the new file, or the arena of a new structure;
give its readers a group instead (--mode 0640).`,
	example: `sketch create /dev/shm/clients.cms --error 0.001 --confidence 0.99
sketch create /dev/shm/banned.cbf --kind countingbloom --capacity 1000000 --fp-rate 0.01 --mode 0640
sketch create /dev/shm/web.arena --kind arena --size 64M
sketch create host2.cms --seed-from host1.cms
sketch create /dev/shm/web.arena:seen --kind bloom --capacity 1000000 --fp-rate 0.001
sketch create /dev/shm/web.arena:clients --kind countminwindow --period 1m --keep 5 --error 0.001 --candidates 100
sketch create /dev/shm/web.arena:recent --kind bloomwindow --period 10m --keep 6 --capacity 100000 --fp-rate 0.001
sketch create /dev/shm/web.arena:clients-distinct --kind distinct --redis
sketch create /dev/shm/web.arena:clients-per-minute --kind distinctwindow --period 1m --keep 1 --redis
sketch create /dev/shm/web.arena:login-rate --kind gcra --rate 10r/m --burst 5 --keys 100000
sketch create /dev/shm/web.arena:status --kind counters --names 200,404,500
sketch create /dev/shm/web.arena:banned --kind set --capacity 100000 --key-bytes 32
sketch create /dev/shm/web.arena:nonces --kind setwindow --capacity 1000000 --period 1m --keep 5
(umask 077; od -An -tu8 -N8 /dev/urandom > seed)
sketch create /dev/shm/a.cms --seed-file seed; sketch create /dev/shm/b.cms --seed-file seed`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		kind := fs.String("kind", "countmin", "`KIND` to create: "+kindList)
		errRate := fs.Float64("error", 0, "countmin, countminwindow: error rate ε, in (0, 1) (default 0.001): estimates are high by at most ε·total; distinct, distinctwindow: relative standard error, in (0, 1) (default 0.0081)")
		conf := fs.Float64("confidence", 0, "countmin, countminwindow: confidence of the error bound, in (0, 1) (default 0.99)")
		rows := fs.Int("rows", 0, "countmin, countminwindow: rows, instead of --error and --confidence; gcra: rows of times, 1 to 16, instead of --keys")
		width := fs.Int("width", 0, "countmin, countminwindow: counters a row; gcra: times a row (either rounded up to a power of two), with --rows")
		cands := fs.Int("candidates", 0, "countmin, countminwindow: keep a table of the `K` loudest keys beside the counters, for sketch top")
		fleet := fs.Bool("fleet", false, "countmin, countminwindow, countingbloom: keep a fleet part beside the counters, the rest of a fleet's counts, which a fleet agent writes and every answer adds")
		lanes := fs.Int("lanes", 0, fmt.Sprintf("countmin, countminwindow: keep `L` grids (a window: in each slot), a lane for each writing process (2 to %d), so that writers in several processes add without sharing cache lines; every read sums them", sketch.MaxLanes))
		conservative := fs.Bool("conservative", false, "countmin: conservative update: an add raises only the key's least counters, in the lane its process claimed (see --lanes, at least 1), so estimates over-estimate less; a grid more, the shared lane, takes adds without a lane of their own")
		candBytes := fs.Int("candidate-key-bytes", 0, fmt.Sprintf("countmin, countminwindow: bytes of a key the table keeps (default %d; a longer key is kept as a prefix and its hash)", sketch.DefaultCandidateKeyBytes))
		capacity := fs.Uint64("capacity", 0, "bloom, countingbloom, bloomwindow: keys it is sized to hold, a bloomwindow each period; set, setwindow: the most keys it holds at once (required)")
		fpRate := fs.Float64("fp-rate", 0, "bloom, countingbloom, bloomwindow: false-positive rate at capacity, in (0, 1) (default 0.01)")
		period := fs.Duration("period", 0, "countminwindow, bloomwindow, distinctwindow, setwindow: length of a period, at least 1ms (default 0: turned by sketch rotate only)")
		keep := fs.Int("keep", 0, fmt.Sprintf("countminwindow, bloomwindow, distinctwindow, setwindow: periods an answer covers, the current one included, 1 to %d (required)", sketch.MaxWindowKeep))
		precision := fs.Int("precision", 0, "distinct, distinctwindow: `P`, 4 to 18: 2^P registers of a byte, instead of --error")
		redis := fs.Bool("redis", false, "distinct, distinctwindow: Redis's hash and 16384 registers, for exports that merge with Redis's HyperLogLogs")
		postgresql := fs.Bool("postgresql", false, "distinct, distinctwindow: the hash of PostgreSQL's hll extension (hll_hash_bytea), precision at most 17, for exports that unite with its hll values")
		rateText := fs.String("rate", "", "gcra: `RATE` a key may make requests at in the long run, as nginx writes it: 10/s, 10r/s, 30r/m, 1/h, 100/10s (required)")
		burst := fs.Uint64("burst", 0, "gcra: requests past the rate a key may make at once: an idle key is allowed `B`+1 at once (nginx's burst=B nodelay)")
		keys := fs.Int("keys", 0, "gcra: size the grid for `N` keys busy at once (default 4096: 1 MiB), instead of --rows and --width")
		names := namesFlags(fs)
		keyBytes := fs.Int("key-bytes", 0, "set, setwindow: the longest key, in `BYTES`: a multiple of 8, at most 1024 (default 64); a longer key is refused")
		size := fs.String("size", "", "arena: `BYTES` of the file, with an optional K, M or G (required)")
		mode := fs.String("mode", "0600", "permission bits of a new file, in octal")
		seedFile := fs.String("seed-file", "", "read the secret hash seed of a new file from `FILE` (\"-\": standard input), one decimal or 0x hex number; FILE must not be readable by every user (default: a random seed)")
		fs.String("seed", "", "refused: the command line shows the seed to every user; use --seed-file")
		seedFrom := fs.String("seed-from", "", "give a new file the hash seed of the sketch `FILE`, so that the two merge")
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "kind", "description", "bytes", "stats"}`)
		return badConfigUsage(func(args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			perm, err := strconv.ParseUint(*mode, 8, 32)
			if err != nil {
				return usageError("--mode %q is not an octal mode", *mode)
			}
			if err := createFlagsApply(fs, t, *kind); err != nil {
				return err
			}
			if *seedFrom != "" && *seedFile != "" {
				return usageError("give --seed-file or --seed-from, not both")
			}
			rate, err := rateFlag(*rateText)
			if err != nil {
				return err
			}
			// --error is a Count-Min sketch's or a distinct count's, as
			// --kind says (sizingOf let it through for that kind only).
			flags := createFlags{
				kind: *kind, cms: sketch.CountMinConfig{ErrorRate: *errRate, Confidence: *conf, Rows: *rows, Width: *width, Candidates: *cands, CandidateKeyBytes: *candBytes, Fleet: *fleet, Lanes: *lanes, ConservativeUpdate: *conservative},
				capacity: *capacity, fpRate: *fpRate, window: sketch.Window{Period: *period, Keep: *keep},
				distinct: sketch.DistinctConfig{Error: *errRate, Precision: *precision, Redis: *redis, PostgreSQL: *postgresql},
				rate:     rate, burst: *burst, keys: *keys, names: *names, keyBytes: *keyBytes,
			}
			if err := flags.validate(); err != nil {
				return err
			}
			if t.name != "" {
				return createInArena(t, flags, *jsonOut)
			}
			if _, err := os.Lstat(t.path); err == nil {
				return fmt.Errorf("%s exists; remove it first (sketch rm %s), or use it as it is", t.path, t.path)
			}
			seed, err := newSeed(*seedFile, *seedFrom)
			if err != nil {
				return err
			}
			opts := []sketch.Option{sketch.WithMode(os.FileMode(perm))}
			if *kind == "arena" {
				return createArena(t.path, *size, seed, opts, *jsonOut)
			}
			flags.cms.Seed, flags.seed = seed, seed
			s, err := makeStructure(filePlace(t.path, opts), flags)
			if err != nil {
				return err
			}
			defer s.Close()
			warnReadable(t.path, "its secret hash seed", flags.distinct.Redis || flags.distinct.PostgreSQL)
			return printCreated(t, s, 0, *jsonOut)
		})
	},
}

// namesFlags defines --names and --name, which append to one list of a
// counters structure's names, in the order given: --names a list
// split at its commas, --name one name, which may hold a comma.
func namesFlags(fs *flag.FlagSet) *[]string {
	var names []string
	fs.Func("names", "counters: the counters' `NAMES`, comma-separated (1 to 1024 in all, in the order given)", func(list string) error {
		names = append(names, strings.Split(list, ",")...)
		return nil
	})
	fs.Func("name", "counters: one more counter, named `NAME` (which may hold a comma); repeatable", func(n string) error {
		names = append(names, n)
		return nil
	})
	return &names
}

// rateFlag is --rate's rate; zero when it is not given.
func rateFlag(text string) (sketch.Rate, error) {
	if text == "" {
		return sketch.Rate{}, nil
	}
	rate, err := sketch.ParseRate(text)
	if err != nil {
		return rate, usageError("--rate: %s", message(err))
	}
	return rate, nil
}

// newSeed is the seed of a new file: read from --seed-file, copied from
// --seed-from's file, or zero (random) when neither is given.
func newSeed(seedFile, seedFrom string) (uint64, error) {
	switch {
	case seedFile != "":
		return readSeed(seedFile, os.Stdin)
	case seedFrom != "":
		return seedOf(seedFrom)
	}
	return 0, nil
}

// createArena makes the arena at path, of --size size, with seed.
func createArena(path, size string, seed uint64, opts []sketch.Option, jsonOut bool) error {
	n, err := parseSize(size)
	if err != nil {
		return err
	}
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: n, Seed: seed}, opts...)
	if err != nil {
		return err
	}
	defer a.Close()
	warnReadable(path, "the secret hash seed every structure in it hashes with", false)
	return printArenaCreated(path, a, jsonOut)
}

// createFlagsApply refuses a kind this build does not make, and a flag
// given that does not apply to what create makes at t: a mistake, not
// something to ignore.
func createFlagsApply(fs *flag.FlagSet, t target, kind string) error {
	sizing, ok := sizingOf(kind)
	if !ok {
		return usageError("--kind %q: this build makes %s", kind, kindList)
	}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case bad != nil:
		case f.Name == "seed":
			bad = errSeedOnCommandLine
		case t.name != "" && (f.Name == "mode" || f.Name == "seed-file" || f.Name == "seed-from"):
			bad = usageError("--%s: %s is made in the arena %s, whose file has its mode and seed", f.Name, t, t.path)
		case isSizing(f.Name) && !contains(sizing, f.Name):
			bad = usageError("--%s does not size a %s", f.Name, kind)
		}
	})
	return bad
}

// badConfigUsage makes a sizing or mode the library refuses
// (sketch.ErrInvalidConfig: --error 2, --keep 300, --mode 0666) the bad
// argument it is: exit 2, with the usage.
func badConfigUsage(run func(args []string) error) func(args []string) error {
	return func(args []string) error {
		err := run(args)
		var ee *exitError
		if errors.Is(err, sketch.ErrInvalidConfig) && !errors.As(err, &ee) {
			return &exitError{exitUsage, err}
		}
		return err
	}
}

// createFlags are the sizing flags of create.
type createFlags struct {
	kind     string
	cms      sketch.CountMinConfig
	capacity uint64
	fpRate   float64
	window   sketch.Window
	distinct sketch.DistinctConfig
	rate     sketch.Rate // gcra: zero when --rate is not given
	burst    uint64
	keys     int
	names    []string // counters: from --names and --name, in order
	keyBytes int      // set, setwindow: --key-bytes
	seed     uint64
}

func (f createFlags) validate() error {
	if k := cliKindNamed(sketch.Kind(f.kind)); k != nil && k.validate != nil {
		return k.validate(f)
	}
	return nil
}

// bloom is the Bloom filter config the flags give (of a Bloom filter, or
// of a Bloom window's periods).
func (f createFlags) bloom() sketch.BloomConfig {
	return sketch.BloomConfig{Capacity: f.capacity, FPRate: f.fpRate, Seed: f.seed}
}

// distinctConfig is the distinct count config the flags give (of a
// distinct count, or of a distinct window's periods), with the seed.
func (f createFlags) distinctConfig() sketch.DistinctConfig {
	cfg := f.distinct
	cfg.Seed = f.seed
	return cfg
}

// gcraConfig is the rate limiter config the flags give, with the seed;
// --rows and --width give its grid as they give a Count-Min sketch's.
func (f createFlags) gcraConfig() sketch.GCRAConfig {
	return sketch.GCRAConfig{Rate: f.rate, Burst: f.burst, Keys: f.keys, Rows: f.cms.Rows, Width: f.cms.Width, Seed: f.seed}
}

// countersConfig is the counters config the flags give, with the seed,
// which the counters keep as every kind does but hash nothing with.
func (f createFlags) countersConfig() sketch.CountersConfig {
	return sketch.CountersConfig{Names: f.names, Seed: f.seed}
}

// setConfig is the exact set config the flags give (of a set, or of a
// set window's table), with the seed.
func (f createFlags) setConfig() sketch.SetConfig {
	return sketch.SetConfig{Capacity: f.capacity, KeyBytes: f.keyBytes, Seed: f.seed}
}

// makeStructure makes the structure of f's kind at p.
func makeStructure(p place, f createFlags) (structure, error) {
	if k := cliKindNamed(sketch.Kind(f.kind)); k != nil {
		return k.make(p, f)
	}
	return nil, usageError("an arena holds structures, not arenas")
}

// createInArena makes the structure t names in the arena at t.path.
func createInArena(t target, f createFlags, jsonOut bool) error {
	if f.kind == "arena" {
		return usageError("%s: an arena holds structures, not arenas", t)
	}
	a, err := sketch.OpenArena(sketch.Path(t.path), sketch.ArenaConfig{}, fileOpts(true)...)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w; make the arena first: sketch create %s --kind arena --size BYTES", err, t.path)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	for _, e := range a.List() {
		if e.Name == t.name {
			return fmt.Errorf("%s exists: the arena has a %s named %s", t, e.Kind, quoteName(t.name))
		}
	}
	s, err := makeStructure(entryPlace(a, t.path, t.name), f)
	if err != nil {
		return err
	}
	defer s.Close()
	warnReadable(t.path, "the arena's secret hash seed, which "+t.String()+" hashes with", f.distinct.Redis || f.distinct.PostgreSQL)
	for _, e := range a.List() {
		if e.Name == t.name {
			return printCreated(t, s, e.Bytes, jsonOut)
		}
	}
	return fmt.Errorf("%s: made, but the arena does not list it", t)
}

// seedOf reads the hash seed of the sketch file arg names (FILE, or an
// arena's FILE:NAME, whose structures hash with the arena's seed), for a
// new file that is to merge with it. The seed is a secret: it goes from
// the library into the new file, and never to the terminal. It refuses a
// file owned by a user the command does not trust, or that every user may
// write (seedSource), and says when every user may read it: then every
// user knows the new file's seed too.
func seedOf(arg string) (uint64, error) {
	t, err := parseTarget(arg)
	if err != nil {
		return 0, err
	}
	info, err := sketch.Inspect(t.path)
	if err != nil {
		return 0, fmt.Errorf("--seed-from: %w", err)
	}
	if err := seedSource("--seed-from", t.path, info.Mode, info.UID, true); err != nil {
		return 0, err
	}
	if info.Mode&0o004 != 0 {
		fmt.Fprintf(os.Stderr, "sketch create: warning: --seed-from %s: every user may read it (mode %#o), and so the seed the new file gets: "+
			"a local user can craft keys that collide in both; give the readers of %s a group instead (chmod o-r, chgrp)\n", t.path, info.Mode, t.path)
	}
	return info.Seed, nil
}

// sizingOf returns the sizing flags of the kind create makes by that
// name: a structure's (cliKinds) or an arena's.
func sizingOf(kind string) ([]string, bool) {
	if kind == "arena" {
		return []string{"size"}, true
	}
	if k := cliKindNamed(sketch.Kind(kind)); k != nil {
		return k.sizing, true
	}
	return nil, false
}

func isSizing(name string) bool {
	if name == "size" {
		return true
	}
	for _, k := range cliKinds {
		if contains(k.sizing, name) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseSize parses a byte count with an optional K, M or G (powers of
// 1024).
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, usageError("an arena needs --size")
	}
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	digits := s
	if mult > 1 {
		digits = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, usageError("--size %q is not a positive number of bytes (K, M and G allowed)", s)
	}
	return n * mult, nil
}

// printCreated says what create made; bytes is the region of a structure
// in an arena, 0 for a standalone file, whose size its stats give.
func printCreated(t target, s structure, region uint64, jsonOut bool) error {
	_, js := s.stats()
	var bytes uint64
	var figures string
	switch st := js.(type) {
	case sketch.CountMinStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("estimates are high by at most %s of the total, with %s confidence", percent(st.ErrorRate), percent(st.Confidence))
	case sketch.BloomStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("false positives about %s at %s, more past it", percent(st.FPRate), plural(st.Capacity, "key", "keys"))
	case sketch.CountingBloomStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("false positives about %s at %s; 4-bit counters stick at 15", percent(st.FPRate), plural(st.Capacity, "item", "items"))
	case sketch.CountMinWindowStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("answers cover %s; estimates are high by at most %s of the window's total, with %s confidence",
			windowText(sketch.Window{Period: st.Period, Keep: st.Keep}), percent(math.E/float64(st.Width)), percent(1-math.Exp(-float64(st.Rows))))
	case sketch.DistinctStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("counts are within %s of the true count about two times in three, %s 95%% of the time", percent(st.StdError), percent(2*st.StdError))
		figures += publicHash(st.Redis, st.PostgreSQL)
	case sketch.DistinctWindowStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("counts cover %s, within %s of the true count about two times in three, %s 95%% of the time",
			windowText(sketch.Window{Period: st.Period, Keep: st.Keep}), percent(st.StdError), percent(2*st.StdError))
		figures += publicHash(st.Redis, st.PostgreSQL)
	case sketch.GCRAStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("each key is allowed %v in the long run and %d at once when idle (burst %d); a key sharing its cells with busier ones is refused early, never allowed more",
			st.Rate, st.Burst+1, st.Burst)
	case sketch.CountersStats:
		bytes = st.Bytes
		figures = "exact: each counter is every add made to it, wrapping at 2^64; the names are fixed"
	case sketch.SetStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("exact: holds up to %s of up to %d bytes, each once; a new key past that is refused, nothing is evicted", plural(st.Capacity, "key", "keys"), st.KeyBytes)
	case sketch.SetWindowStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("exact: answers cover %s; holds up to %s of up to %d bytes, each once", windowText(sketch.Window{Period: st.Period, Keep: st.Keep}), plural(st.Capacity, "key", "keys"), st.KeyBytes)
	case sketch.BloomWindowStats:
		bytes = st.Bytes
		figures = fmt.Sprintf("answers cover %s; false positives about %s a period at %s each, up to about %s over the window",
			windowText(sketch.Window{Period: st.Period, Keep: st.Keep}), percent(st.FPRate), plural(st.Capacity, "key", "keys"), percent(1-math.Pow(1-st.FPRate, float64(st.Keep))))
	}
	if region != 0 {
		bytes = region
	}
	if jsonOut {
		return printJSON(stdout, createdJSON{t.arg(), s.kind(), s.describe(), bytes, js})
	}
	fmt.Fprintf(stdout, "created %s: %s, %d bytes\n  %s\n", t, s.describe(), bytes, figures)
	return nil
}

// createdJSON is create --json.
type createdJSON struct {
	File        string `json:"file"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Bytes       uint64 `json:"bytes"`
	Stats       any    `json:"stats"`
}

func printArenaCreated(path string, a *sketch.Arena, jsonOut bool) error {
	st := a.Stats()
	desc := arenaDescription(st)
	if jsonOut {
		return printJSON(stdout, createdJSON{path, "arena", desc, st.Bytes, st})
	}
	fmt.Fprintf(stdout, "created %s: %s\n  %d bytes free; add structures with sketch create %s:NAME --kind ...\n", path, desc, st.Free, path)
	return nil
}

// arenaDescription says what an arena is, in a few words.
func arenaDescription(st sketch.ArenaStats) string {
	return fmt.Sprintf("arena of %d bytes, %d of %d structures", st.Bytes, st.Entries, st.Capacity)
}

// publicHash is what create adds to the figures of a distinct count or
// window whose hash is public (Redis's or PostgreSQL's): "" for the
// seeded one.
func publicHash(redis, postgresql bool) string {
	switch {
	case redis:
		return "; Redis's hash, which is public: crafted keys can aim at it"
	case postgresql:
		return "; PostgreSQL's hll hash, which is public: crafted keys can aim at it"
	}
	return ""
}
