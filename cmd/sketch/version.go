package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/shmsketch/sketch"
)

var versionCmd = &command{
	name:    "version",
	args:    "",
	summary: "print the version, backend, Go version and file format (also --version)",
	details: `
Version prints the module version of this binary, the backend it was
built with (cgo: the C core serves batches; purego), the Go version and the
file format version it reads and writes.`,
	example: `sketch version
sketch --version`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON: {"version", "backend", "go", "format_version"}`)
		return func(args []string) error {
			if len(args) != 0 {
				return usageError("version takes no arguments")
			}
			v := "(unknown)"
			if bi, ok := debug.ReadBuildInfo(); ok {
				v = bi.Main.Version
			}
			if *jsonOut {
				return printJSON(stdout, struct {
					Version       string `json:"version"`
					Backend       string `json:"backend"`
					Go            string `json:"go"`
					FormatVersion uint32 `json:"format_version"`
				}{v, sketch.Backend, runtime.Version(), sketch.FormatVersion})
			}
			fmt.Fprintf(stdout, "sketch %s\nbackend  %s\ngo       %s\nformat   %d\n", v, sketch.Backend, runtime.Version(), sketch.FormatVersion)
			return nil
		}
	},
}
