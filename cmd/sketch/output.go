package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
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
