package main

import (
	"fmt"
	"io"
	"strings"
)

// Escape sequences of the redrawn view (ECMA-48, which every terminal
// emulator speaks).
const (
	escHome       = "\x1b[H"    // cursor to the top left
	escClearLine  = "\x1b[K"    // erase from the cursor to the end of the line
	escClearBelow = "\x1b[J"    // erase from the cursor to the end of the screen
	escHideCursor = "\x1b[?25l" // no cursor blinking over the view
	escShowCursor = "\x1b[?25h"
)

// screen shows a watch's frames. On a terminal (live) each frame
// overwrites the last from the top left, line by line, each line erased
// only past its end and the screen only below the frame, so no line is
// ever blank between two frames: clearing the whole screen each time
// makes the view flicker. Elsewhere frames follow each other, a frame of
// more than one line after a blank line.
type screen struct {
	w    io.Writer
	live bool
	// size is the terminal's width and height, 0 when unknown. A frame is
	// cut to fit: a line that wraps, or a frame that scrolls, would leave
	// the next frame's top where the last one's was not.
	size   func() (width, height int)
	frames int
}

// draw shows one frame.
func (s *screen) draw(lines []string) error {
	var b strings.Builder
	switch {
	case s.live:
		if s.frames == 0 {
			b.WriteString(escHideCursor)
		}
		b.WriteString(escHome)
		for _, ln := range s.fit(lines) {
			b.WriteString(ln)
			b.WriteString(escClearLine + "\n")
		}
		// Below the frame: a longer last frame's lines, and on the first
		// frame what the terminal showed before.
		b.WriteString(escClearBelow)
	default:
		if s.frames > 0 && len(lines) > 1 {
			b.WriteByte('\n')
		}
		for _, ln := range lines {
			b.WriteString(ln)
			b.WriteByte('\n')
		}
	}
	s.frames++
	_, err := io.WriteString(s.w, b.String())
	return err
}

// close gives the terminal its cursor back.
func (s *screen) close() error {
	if !s.live || s.frames == 0 {
		return nil
	}
	_, err := io.WriteString(s.w, escShowCursor)
	return err
}

// fit cuts lines to the terminal: each to one column less than its width
// (a line that fills the last column leaves the cursor there, and the
// erase after it would take that column's character), and the frame to
// one line less than its height (the cursor's line after the frame),
// saying how many lines it left out.
func (s *screen) fit(lines []string) []string {
	if s.size == nil {
		return lines
	}
	width, height := s.size()
	if height > 1 && len(lines) > height-1 {
		left := len(lines) - (height - 2)
		lines = append(lines[:height-2:height-2], fmt.Sprintf("... %d more lines: a taller terminal shows them, --json has them all", left))
	}
	if width > 1 {
		out := make([]string, len(lines))
		for i, ln := range lines {
			if r := []rune(ln); len(r) > width-1 {
				ln = string(r[:width-1])
			}
			out[i] = ln
		}
		lines = out
	}
	return lines
}
