package main

import "os"

// cannotRun is the row of a test this machine cannot run (not root, no
// qemu, no go tool): it says why and counts no violation, except under
// CI=true, where everything must run (the Makefile's rule for its skips).
func cannotRun(test, why string) row {
	r := row{test: test, runs: "0", figure: "skipped: " + why}
	if os.Getenv("CI") == "true" {
		r.violations = 1
		r.figure += " (CI=true runs everything: a violation)"
	}
	return r
}
