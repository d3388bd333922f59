//go:build !linux

package main

// The faults need Linux: tmpfs mounts, /proc, futexes. Keep in sync with
// the _linux files' names.

var faultRoles = map[string]func(args []string) (*faultReport, error){}

func runSpaceFault(setting) (row, error)    { return row{}, skipped{"needs Linux"} }
func runStopFault(setting) (row, error)     { return row{}, skipped{"needs Linux"} }
func runReadOnlyFault(setting) (row, error) { return row{}, skipped{"needs Linux"} }
func runFdsFault(setting) (row, error)      { return row{}, skipped{"needs Linux"} }
