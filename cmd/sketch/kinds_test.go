package main

import (
	"strings"
	"testing"
)

// TestKinds_Listed: create's usage lists the kinds of cliKinds, in their
// order, and the arena.
func TestKinds_Listed(t *testing.T) {
	var names []string
	for _, k := range cliKinds {
		names = append(names, string(k.kind))
	}
	if want := strings.Join(names, ", ") + " or arena"; kindList != want {
		t.Errorf("kindList = %q, want %q", kindList, want)
	}
	if want := "--kind " + strings.Join(names, "|") + "|arena"; !strings.Contains(createCmd.args, want) {
		t.Errorf("create's args %q do not say %q", createCmd.args, want)
	}
}
