package main

import (
	"flag"
	"fmt"

	"github.com/shmsketch/sketch"
)

var statsCmd = &command{
	name:       "stats",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "print everything a structure's Stats reports; an arena's, a row a structure",
	details: `
Stats prints what the structure's Stats reports, as an aligned table: for
a Count-Min sketch its shape, total, add count, error bound, error rate
and confidence; for a Bloom filter its capacity, false-positive rate,
bits, fill, estimated keys and its adds that were new or seen; for a
counting Bloom filter its capacity, false-positive rate, shape, fill and
estimated items; for a Count-Min window the periods it covers, their total
and error bound, and each slot's period and total; for a Bloom window the
periods it covers, its adds there, the rate at which it finds a key not
added in them, and each slot's period, fill and estimated keys; a
window's periods show when they started on the clock (one turned by
rotate has no clock times); for a distinct count its registers, hash,
count with its 95% range, standard error and registers still zero; for a
rate limiter its rate, burst, grid, the decisions allowed (and what they
cost) and refused, and its busy cells, which hold a time to come; for
an exact set its keys, capacity, slots, tombstones, longest run and its
adds and removes (a set window's keys of the periods covered beside
those its table still holds). For
an arena (FILE alone) it prints the arena's size, use and state, then
one row a structure; --json has every structure's whole Stats. It opens
the file read-only.`,
	example: `sketch stats /dev/shm/clients.cms
sketch stats /dev/shm/web.arena
sketch stats --json /dev/shm/clients.cms | jq .structures[0].stats.total`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "arena" (an arena's), "structures": [{"name", "kind", "description", "stats"}]}`)
		return func(args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			s, a, err := openWhole(t, false)
			if err != nil {
				return err
			}
			if a != nil {
				defer a.Close()
				return arenaStats(t.path, a, *jsonOut)
			}
			defer s.Close()
			rows, js := s.stats()
			if *jsonOut {
				return printJSON(stdout, statsJSON{File: t.path, Structures: []structureStats{{
					Name: t.name, Kind: s.kind(), Description: s.describe(), Stats: js,
				}}})
			}
			fmt.Fprintf(stdout, "%s: %s\n", t, s.describe())
			printTable(stdout, rows)
			return nil
		}
	},
}

// statsJSON is stats --json: one element a structure (one for a
// standalone file), and an arena's own stats.
type statsJSON struct {
	File       string             `json:"file"`
	Arena      *sketch.ArenaStats `json:"arena,omitempty"`
	Structures []structureStats   `json:"structures"`
}

type structureStats struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Stats       any    `json:"stats"`
}

// arenaStats prints the arena's stats and a row for each structure.
func arenaStats(path string, a *sketch.Arena, jsonOut bool) error {
	st := a.Stats()
	out := statsJSON{File: path, Arena: &st, Structures: []structureStats{}}
	var rows [][]string
	for _, e := range a.List() {
		s, err := openEntry(entryPlace(a, path, e.Name), e.Kind)
		if err != nil {
			return err
		}
		_, js := s.stats()
		out.Structures = append(out.Structures, structureStats{Name: e.Name, Kind: s.kind(), Description: s.describe(), Stats: js})
		rows = append(rows, []string{quoteName(e.Name), s.kind(), fmt.Sprint(e.Bytes), s.summary()})
		s.Close()
	}
	if jsonOut {
		return printJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "%s: %s\n", path, arenaDescription(st))
	printTable(stdout, [][2]string{
		{"size", fmt.Sprintf("%d bytes", st.Bytes)},
		{"used", fmt.Sprintf("%d bytes (header, directory, structures)", st.Used)},
		{"free", fmt.Sprintf("%d bytes", st.Free)},
		{"structures", fmt.Sprintf("%d of %d", st.Entries, st.Capacity)},
		{"frozen", yesNo(st.Frozen)},
	})
	if len(rows) > 0 {
		fmt.Fprintln(stdout)
		printColumns(stdout, append([][]string{{"NAME", "KIND", "BYTES", "STATE"}}, rows...))
	}
	return nil
}
