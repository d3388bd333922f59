package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWordsOf_SplitsAndNumbers(t *testing.T) {
	w := wordsOf("func (c *CountMin) Add(key []byte) {", "c.Add(key) // é_1 42")
	var got []string
	for _, id := range w.Stream {
		got = append(got, string(w.Vocab[id]))
	}
	want := []string{"func", "c", "CountMin", "Add", "key", "byte", "c", "Add", "key", "é_1", "42"}
	if !slices.Equal(got, want) {
		t.Errorf("words = %q, want %q", got, want)
	}
	if len(w.Vocab) != 8 {
		t.Errorf("%d distinct words, want 8", len(w.Vocab))
	}
	if n := w.counts(); n[w.Stream[1]] != 2 || n[w.Stream[0]] != 1 {
		t.Errorf("counts = %v, want c twice and func once", n)
	}
}

func TestGoSourceWords_PrefixAndOrder(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"src/b/b.go":                "b1 b2",
		"src/a/z.go":                "z1",
		"src/a/testdata/skipped.go": "never",
		"src/a/notes.txt":           "never",
		"src/a.go":                  "top",
		"VERSION":                   "go9.9\ntime x",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{0, 3, 4} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			w, err := goSourceWords(root, limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range w.Stream {
				got = append(got, string(w.Vocab[id]))
			}
			// Sorted paths: src/a.go, src/a/z.go, src/b/b.go.
			want := []string{"top", "z1", "b1", "b2"}
			if limit > 0 {
				want = want[:limit]
			}
			if !slices.Equal(got, want) {
				t.Errorf("words = %q, want %q", got, want)
			}
			if w.Version != "go9.9" || w.Capped != (limit == 3) {
				t.Errorf("version %q, capped %v; want go9.9, %v", w.Version, w.Capped, limit == 3)
			}
		})
	}
	if _, err := goSourceWords(t.TempDir(), 0); err == nil {
		t.Error("goSourceWords of a GOROOT without src: no error")
	}
}
