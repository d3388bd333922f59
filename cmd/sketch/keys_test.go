package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll reads every batch and copies its keys out (they are valid only
// until the next batch).
func readAll(t *testing.T, r io.Reader, weighted bool) ([]string, []uint64) {
	t.Helper()
	kr := newKeyReader(r, weighted)
	var keys []string
	var weights []uint64
	for {
		k, w, err := kr.next()
		if errors.Is(err, io.EOF) {
			return keys, weights
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(k) > batchKeys || (weighted && len(w) != len(k)) {
			t.Fatalf("a batch of %d keys and %d weights", len(k), len(w))
		}
		for _, b := range k {
			keys = append(keys, string(b))
		}
		weights = append(weights, w...)
	}
}

// TestKeyReader: keys split across reads, lines longer than the buffer,
// CRLF, empty lines and a last line without a newline all come out as
// the lines they are.
func TestKeyReader(t *testing.T) {
	var want []string
	var in strings.Builder
	for i := 0; i < 3*batchKeys+7; i++ {
		k := fmt.Sprintf("key-%d", i)
		if i%1000 == 999 {
			k = strings.Repeat("long", 300_000+i) // past the 1 MiB buffer
		}
		want = append(want, k)
		in.WriteString(k)
		switch i % 3 {
		case 0:
			in.WriteString("\n")
		case 1:
			in.WriteString("\r\n\n") // and an empty line, skipped
		case 2:
			in.WriteString("\n\r\n") // a line of just "\r" is empty too
		}
	}
	in.WriteString("last")
	want = append(want, "last")
	for name, r := range map[string]func() io.Reader{
		"whole":      func() io.Reader { return strings.NewReader(in.String()) },
		"one byte":   func() io.Reader { return iotest.OneByteReader(strings.NewReader(in.String()[:200_000])) },
		"half reads": func() io.Reader { return iotest.HalfReader(strings.NewReader(in.String())) },
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := readAll(t, r(), false)
			w := want
			if name == "one byte" {
				w = strings.Fields(strings.ReplaceAll(in.String()[:200_000], "\r", ""))
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("keys (-want +got):\n%.2000s", diff)
			}
		})
	}
}

func TestKeyReader_Weighted(t *testing.T) {
	keys, weights := readAll(t, strings.NewReader("a\t1\nb c\t22\r\n\nd\te\t333"), true)
	if diff := cmp.Diff([]string{"a", "b c", "d\te"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint64{1, 22, 333}, weights); diff != "" {
		t.Errorf("weights (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"a\n", "a\tx\n", "a\t0\n", "a\t-1\n", "ok\t1\na\t\n"} {
		kr := newKeyReader(strings.NewReader(bad), true)
		if _, _, err := kr.next(); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("weighted %q: %v, want an error naming the line", bad, err)
		}
	}
}
