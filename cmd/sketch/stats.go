package main

import (
	"flag"
	"fmt"
)

var statsCmd = &command{
	name:    "stats",
	args:    "FILE[:NAME]",
	summary: "print everything a structure's Stats reports",
	details: `
Stats prints what the structure's Stats reports, as an aligned table: for a
Count-Min sketch its shape, total, add count, error bound, error rate and
confidence; for a counting Bloom filter its capacity, false-positive rate,
shape, fill and estimated items. It opens the file read-only.`,
	example: `sketch stats /dev/shm/clients.cms
sketch stats --json /dev/shm/clients.cms | jq .structures[0].stats.total`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "structures": [{"name", "kind", "description", "stats"}]}`)
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE[:NAME]")
			}
			s, t, err := openTargetArg(args[0], false)
			if err != nil {
				return err
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
// standalone file).
type statsJSON struct {
	File       string           `json:"file"`
	Structures []structureStats `json:"structures"`
}

type structureStats struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Stats       any    `json:"stats"`
}
