package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode"
)

// A real-text stream: the words of the Go distribution's sources, every
// .go file under GOROOT/src outside testdata directories, in sorted path
// order, split at every rune that is not a letter, a digit or '_'. It is
// the same on every machine with the same Go version.

// textWords is a stream of words as numbers into its vocabulary.
type textWords struct {
	Stream []int32  // the words in order, by number
	Vocab  [][]byte // the distinct words, by number
	// Version is the Go version of the sources, Files the files read,
	// Capped whether the stream is a prefix of them (-quick).
	Version string
	Files   int
	Capped  bool
}

// isWordRune is what words are made of.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// add appends the words of text to the stream, numbering new ones; ids
// maps the words seen so far to their numbers. It stops at limit words
// (no limit when limit <= 0) and reports whether it did.
func (w *textWords) add(ids map[string]int32, text string, limit int) bool {
	for _, word := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		if limit > 0 && len(w.Stream) >= limit {
			return true
		}
		id, ok := ids[word]
		if !ok {
			id = int32(len(w.Vocab))
			word = strings.Clone(word) // not the file's text, which goes
			ids[word] = id
			w.Vocab = append(w.Vocab, []byte(word))
		}
		w.Stream = append(w.Stream, id)
	}
	return false
}

// wordsOf is the stream of the words of texts, one after another.
func wordsOf(texts ...string) *textWords {
	w := &textWords{}
	ids := map[string]int32{}
	for _, t := range texts {
		w.add(ids, t, 0)
	}
	return w
}

// counts is each distinct word's exact count in the stream.
func (w *textWords) counts() []uint64 {
	n := make([]uint64, len(w.Vocab))
	for _, id := range w.Stream {
		n[id]++
	}
	return n
}

// errNoGoSources says why the stream is missing.
var errNoGoSources = errors.New("no Go sources")

// goSourceWords reads the words of the Go sources under goroot, the first
// limit of them (all when limit <= 0). The version is that of the
// sources' VERSION file, else the running program's.
func goSourceWords(goroot string, limit int) (*textWords, error) {
	if goroot == "" {
		return nil, fmt.Errorf("%w: this program does not know its GOROOT", errNoGoSources)
	}
	src := filepath.Join(goroot, "src")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s/src is not there", errNoGoSources, goroot)
	}
	var paths []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".go"):
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no .go files under %s/src", errNoGoSources, goroot)
	}
	slices.Sort(paths) // WalkDir's lexical order within a directory is not the paths' order
	w := &textWords{Version: runtime.Version()}
	if b, err := os.ReadFile(filepath.Join(goroot, "VERSION")); err == nil {
		if v, _, _ := bytes.Cut(b, []byte("\n")); len(v) > 0 {
			w.Version = string(v)
		}
	}
	ids := map[string]int32{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		w.Files++
		if w.add(ids, string(b), limit) {
			w.Capped = true
			break
		}
	}
	return w, nil
}
