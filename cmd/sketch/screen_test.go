package main

import (
	"bytes"
	"testing"
)

// TestScreen: on a terminal each frame starts at the top left, erases each
// line past its end and the screen below it, never the whole screen; the
// cursor is hidden while it draws. Elsewhere frames follow each other.
func TestScreen(t *testing.T) {
	var b bytes.Buffer
	s := &screen{w: &b, live: true}
	s.draw([]string{"one", "two", "three"})
	s.draw([]string{"1", "2"})
	s.close()
	want := "\x1b[?25l" +
		"\x1b[Hone\x1b[K\ntwo\x1b[K\nthree\x1b[K\n\x1b[J" +
		"\x1b[H1\x1b[K\n2\x1b[K\n\x1b[J" +
		"\x1b[?25h"
	if got := b.String(); got != want {
		t.Errorf("two frames on a terminal: %q, want %q", got, want)
	}

	b.Reset()
	s = &screen{w: &b, live: true, size: func() (int, int) { return 6, 4 }}
	s.draw([]string{"abcdefgh", "ab", "c", "d", "e"})
	if got, want := b.String(), "\x1b[?25l\x1b[Habcde\x1b[K\nab\x1b[K\n... 3\x1b[K\n\x1b[J"; got != want {
		t.Errorf("a frame on a 6x4 terminal: %q, want %q", got, want)
	}

	b.Reset()
	s = &screen{w: &b}
	s.draw([]string{"a", "b"})
	s.draw([]string{"c", "d"})
	s.draw([]string{"one line"})
	s.close()
	if got, want := b.String(), "a\nb\n\nc\nd\none line\n"; got != want {
		t.Errorf("frames to a pipe: %q, want %q", got, want)
	}
}
