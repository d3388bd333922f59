package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// command is one subcommand: its usage, and a setup that registers its
// flags and returns what runs it with the positional arguments.
type command struct {
	name    string
	args    string // the positional arguments, as usage shows them
	summary string // one line, for the general usage
	details string // what it does, for its own usage
	example string
	// opensFiles gives the command --owner, for the files it opens.
	opensFiles bool
	// takesKeys ends the flags at the command's first argument, FILE:
	// every argument after it is a key, even one that looks like a flag,
	// so that a key from a client ("--limit=1000000") can never change
	// the command.
	takesKeys bool
	setup     func(fs *flag.FlagSet) func(args []string) error
}

// flags registers c's flags on a new flag set and returns it with what
// runs c.
func (c *command) flags() (*flag.FlagSet, func(args []string) error) {
	fs := flag.NewFlagSet("sketch "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // usage is printed by the caller, once
	runCmd := c.setup(fs)
	if c.opensFiles {
		fs.Var(&owners, "owner", "also trust files owned by `UID` (repeat it, or give a comma list), as the files of this user and root are")
	}
	return fs, runCmd
}

// commands in the order the general usage lists them.
var commands []*command

func init() {
	// Set here, not in the declaration: help looks commands up.
	commands = []*command{
		createCmd, addCmd, delCmd, allowCmd, queryCmd, listCmd, topCmd, statsCmd, inspectCmd, checkCmd,
		watchCmd, freezeCmd, snapshotCmd, resetCmd, rotateCmd, mergeCmd, exportCmd, rmCmd, demoCmd, versionCmd, helpCmd,
	}
}

// aliases are other names of commands, kept for scripts written against
// earlier versions.
var aliases = map[string]string{"estimate": "query"}

// hidden are commands the usage does not list.
var hidden = []*command{demoWorkerCmd}

func lookup(name string) *command {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, c := range append(commands, hidden...) {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command failed: a missing, unreadable or corrupt file, a refused operation
	exitUsage   = 2 // bad arguments
	exitTorn    = 3 // check: sound, but an operation was cut short (a torn add)
	exitRefused = 4 // allow: a key was refused
	exitDamaged = 5 // check: counters or registers hold what no add can leave
)

// exitError carries an exit code other than 1 up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError reports bad arguments: exit 2, with the command's usage.
func usageError(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// stdout is buffered: queries print millions of lines. Everything that
// redraws or reports progress flushes it itself.
var stdout = bufio.NewWriterSize(os.Stdout, 64<<10)

func main() {
	code := run(os.Args[1:])
	stdout.Flush()
	os.Exit(code)
}

// run runs one command line and returns the exit code.
func run(argv []string) int {
	if len(argv) == 0 {
		generalUsage(os.Stderr)
		return exitUsage
	}
	name, args := argv[0], argv[1:]
	switch name {
	case "-h", "-help", "--help":
		generalUsage(stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "sketch: unknown command %q\n\n", name)
		generalUsage(os.Stderr)
		return exitUsage
	}
	fs, runCmd := cmd.flags()
	last := 0 // no argument ends the flags
	if cmd.takesKeys {
		last = 1
	}
	pos, err := parseInterspersed(fs, args, last)
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, cmd, fs)
		return exitOK
	}
	if err == nil && cmd.takesKeys {
		noteFlagKeys(cmd, fs, pos)
	}
	if err == nil {
		err = runCmd(pos)
	}
	if err == nil {
		return exitOK
	}
	stdout.Flush() // what was printed before the error comes first
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if !errors.Is(err, errReported) && flagError(err) {
		code = exitUsage
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintf(os.Stderr, "sketch %s: %s\n", cmd.name, message(err))
	}
	if code == exitUsage {
		fmt.Fprintf(os.Stderr, "usage: sketch %s %s\n(sketch help %s says more)\n", cmd.name, cmd.args, cmd.name)
	}
	return code
}

// errReported marks an error the command has already reported.
var errReported = errors.New("reported")

// flagError reports whether err came from the flag package: an unknown
// flag or a value that does not parse.
func flagError(err error) bool {
	var fe *flagParseError
	return errors.As(err, &fe)
}

type flagParseError struct{ err error }

func (e *flagParseError) Error() string { return e.err.Error() }
func (e *flagParseError) Unwrap() error { return e.err }

// parseInterspersed parses flags wherever they are among the positional
// arguments (sketch create f.cms --kind countmin), as users type them.
// "--" ends the flags; "-" is a positional argument (standard input).
// When last is above 0, the last-th positional argument ends the flags
// too: every argument after it is positional, as it is, "--" included.
func parseInterspersed(fs *flag.FlagSet, args []string, last int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &flagParseError{err}
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		if len(pos) == last {
			return append(pos, rest[1:]...), nil
		}
		args = rest[1:]
	}
}

// keysAfterFile is what the usage of a command that takes keys says of
// its flags.
const keysAfterFile = `
Flags go before FILE: every argument after FILE is a key, as it is, even
one that begins with "-" or is "--", so that a key taken from a client
("--limit=1000000") is taken as that key and never changes the command.
`

// noteFlagKeys says on standard error when a key (an argument after FILE)
// reads as one of the command's flags, or is "--": it counts as a key, and
// whoever meant a flag learns where flags go. The note is a note: the
// command goes on, since the key may be a client's, and quotes the key.
func noteFlagKeys(cmd *command, fs *flag.FlagSet, pos []string) {
	for _, k := range pos[min(1, len(pos)):] {
		name, _, _ := strings.Cut(strings.TrimLeft(k, "-"), "=")
		if k == "--" || strings.HasPrefix(k, "-") && name != "" && fs.Lookup(name) != nil {
			fmt.Fprintf(os.Stderr, "sketch %s: note: %s after FILE is a key, not a flag: flags go before FILE (sketch %s %s)\n",
				cmd.name, strconv.Quote(k), cmd.name, cmd.args)
			return
		}
	}
}

func generalUsage(w io.Writer) {
	fmt.Fprint(w, `sketch: probabilistic sketches in shared memory, from the shell

usage: sketch COMMAND [FLAGS] [ARGUMENTS]

`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
FILE[:NAME] names a sketch file (NAME: a structure in an arena). Commands
that only read open the file read-only, so they work on a file you may only
read, while other processes write it. --json prints data as JSON.
Flags may follow a command's arguments, but add, del, allow and query take
every argument after FILE as a key, even one that begins with "-": their
flags go before FILE.
Exit status: 0 ok, 1 failure, 2 bad arguments, 3 (check) an operation was
cut short by a killed writer, 4 (allow) a key was refused.

"sketch help COMMAND" or "sketch COMMAND -h" shows a command's usage.
`)
	if w, ok := w.(*bufio.Writer); ok {
		w.Flush()
	}
}

func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: sketch %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.details))
	if c.takesKeys {
		fmt.Fprint(w, keysAfterFile)
	}
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if flags.Len() > 0 {
		// Long names with two dashes, as people type them (flag takes both).
		lines := strings.Split(flags.String(), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "  -") && len(strings.Fields(l)[0]) > 2 {
				lines[i] = "  --" + l[3:]
			}
		}
		fmt.Fprintf(w, "\nflags:\n%s", strings.Join(lines, "\n"))
	}
	fmt.Fprintf(w, "\nexample:\n%s\n", indent(strings.TrimSpace(c.example)))
	if w, ok := w.(*bufio.Writer); ok {
		w.Flush()
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

var helpCmd = &command{
	name:    "help",
	args:    "[COMMAND]",
	summary: "show the usage of sketch or of one command",
	details: "Help prints the usage of COMMAND, with an example, or the list of commands.",
	example: "sketch help add",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			switch len(args) {
			case 0:
				generalUsage(stdout)
				return nil
			case 1:
				c := lookup(args[0])
				if c == nil {
					return usageError("unknown command %q", args[0])
				}
				cfs, _ := c.flags()
				commandUsage(stdout, c, cfs)
				return nil
			}
			return usageError("help takes one command")
		}
	},
}
