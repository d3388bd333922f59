package main

import (
	"regexp"
	"strings"
)

// The library's messages are written for Go programs: they name options
// (sketch.WithOwner) and the operation that failed inside the library
// (inspect). message says the same thing to someone at a shell.

// withOwner matches the library's advice for sketch.ErrNotOwner.
var withOwner = regexp.MustCompile(`pass sketch\.WithOwner\((\d+)\)`)

// configFields puts create's flags for the config fields the library's
// messages name.
var configFields = strings.NewReplacer(
	"give either ErrorRate/Confidence or Rows/Width", "give either --error/--confidence or --rows/--width",
	"Width is missing (give Rows and Width together, or size by ErrorRate)", "--width is missing (give --rows and --width together, or size by --error)",
	"Rows is missing (give Rows and Width together, or size by ErrorRate)", "--rows is missing (give --rows and --width together, or size by --error)",
	"Capacity is missing (at least 1 to create a filter; the zero config only attaches)", "--capacity is missing",
	"window Keep ", "--keep ",
	"CandidateKeyBytes ", "--candidate-key-bytes ",
	"Candidates ", "--candidates ",
	"window Period ", "--period ",
	"give either Keys or Rows and Width, not both", "give either --keys or --rows and --width, not both",
)

// message is err's message as the command prints it after "sketch CMD: ".
func message(err error) string {
	msg := strings.TrimPrefix(err.Error(), "sketch: ") // the library's prefix; the command prints its own
	// Inspect is how every command first reads a file: its name is no
	// part of what the user asked.
	msg = strings.TrimPrefix(msg, "inspect ")
	msg = configFields.Replace(msg)
	return withOwner.ReplaceAllString(msg, "give --owner $1")
}
