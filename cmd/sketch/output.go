package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// isTerminal reports whether f is a character device: a terminal, for
// what decides between a view redrawn in place and plain lines. (A
// character device that is not a terminal, such as /dev/null, gets the
// redrawn view too, which does no harm.)
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// jsonKey is a key as the --json lines carry it. JSON strings are text:
// a key whose bytes are not UTF-8 would reach "key" with each bad byte
// made U+FFFD, so that "\xfe" and "\xff" read alike; such a key's exact
// bytes are in "key_base64" too, which is absent for a key that is text.
type jsonKey struct {
	Key    string `json:"key"`
	Base64 []byte `json:"key_base64,omitempty"`
}

// keyOf is key's jsonKey.
func keyOf(key string) jsonKey {
	if utf8.ValidString(key) {
		return jsonKey{Key: key}
	}
	return jsonKey{Key: key, Base64: []byte(key)}
}

// printTable writes rows as two aligned columns.
func printTable(w io.Writer, rows [][2]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s  %s\n", width, r[0], r[1])
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// percent formats a fraction as a percentage with no more digits than it
// needs.
func percent(f float64) string {
	s := fmt.Sprintf("%.4f", 100*f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// count formats n with thousands separators, for views read by people.
func count(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rate formats a per-second rate for people: 1234567 is "1.23M".
func rate(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.2fG", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// plural is n and the noun one names, in the plural unless n is 1: "1
// key", "2 keys".
func plural[N int | uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// printColumns writes rows as aligned columns, the last one unpadded.
func printColumns(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				fmt.Fprintln(w, c)
			} else {
				fmt.Fprintf(w, "%-*s  ", widths[i], c)
			}
		}
	}
}

// quoteName is a structure's name as the command prints it: quoted, with
// Go's escapes, when it holds anything but letters, digits and "._-/", as
// the library's messages show it. Names come from the file, which whoever
// may write it chose: printed raw, an escape sequence would reach the
// terminal, and a space or a colon would read as two words.
func quoteName(name string) string {
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._-/", r)) {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
