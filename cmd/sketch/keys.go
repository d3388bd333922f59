package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// batchKeys is how many keys go to the library in one batch call.
const batchKeys = 4096

// keyReader reads keys from standard input, one a line, in batches: lines
// end in "\n" (a "\r" before it is dropped), and empty lines are skipped.
// Weighted lines are KEY<TAB>N. The keys of a batch point into the
// reader's buffer, valid until the next call: no key is copied.
type keyReader struct {
	r          io.Reader
	weighted   bool
	line       int
	buf        []byte
	start, end int // unread input is buf[start:end]
	eof        bool
	keys       [][]byte
	weights    []uint64
}

func newKeyReader(r io.Reader, weighted bool) *keyReader {
	return &keyReader{r: r, weighted: weighted, buf: make([]byte, 1<<20)}
}

// next returns the next batch; io.EOF when there is none.
func (kr *keyReader) next() (keys [][]byte, weights []uint64, err error) {
	kr.keys, kr.weights = kr.keys[:0], kr.weights[:0]
	for len(kr.keys) < batchKeys {
		if i := bytes.IndexByte(kr.buf[kr.start:kr.end], '\n'); i >= 0 {
			line := kr.buf[kr.start : kr.start+i]
			kr.start += i + 1
			if err := kr.take(line); err != nil {
				return nil, nil, err
			}
			continue
		}
		if kr.eof {
			if kr.start < kr.end { // a last line without its newline
				line := kr.buf[kr.start:kr.end]
				kr.start = kr.end
				if err := kr.take(line); err != nil {
					return nil, nil, err
				}
			}
			break
		}
		if len(kr.keys) > 0 {
			break // refilling would move the bytes under these keys
		}
		if err := kr.fill(); err != nil {
			return nil, nil, err
		}
	}
	if len(kr.keys) == 0 {
		return nil, nil, io.EOF
	}
	if !kr.weighted {
		return kr.keys, nil, nil
	}
	return kr.keys, kr.weights, nil
}

// fill moves the unread input to the front of the buffer (growing it for
// a line longer than it) and reads more after it.
func (kr *keyReader) fill() error {
	n := copy(kr.buf, kr.buf[kr.start:kr.end])
	kr.start, kr.end = 0, n
	if kr.end == len(kr.buf) {
		kr.buf = append(kr.buf, make([]byte, len(kr.buf))...)
	}
	for {
		n, err := kr.r.Read(kr.buf[kr.end:])
		kr.end += n
		if errors.Is(err, io.EOF) {
			kr.eof = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// take adds one line, without its newline, to the batch.
func (kr *keyReader) take(line []byte) error {
	kr.line++
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		return nil
	}
	if kr.weighted {
		i := bytes.LastIndexByte(line, '\t')
		if i < 0 {
			return fmt.Errorf("standard input, line %d: want KEY<TAB>N", kr.line)
		}
		n, err := strconv.ParseUint(string(line[i+1:]), 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("standard input, line %d: count %q is not a positive integer", kr.line, line[i+1:])
		}
		kr.weights = append(kr.weights, n)
		line = line[:i]
	}
	kr.keys = append(kr.keys, line[:len(line):len(line)])
	return nil
}

// progress shows keys, keys/s and elapsed time on standard error, redrawn
// in place, while a long input is read: only when standard error is a
// terminal, and never on standard output.
type progress struct {
	keys  atomic.Uint64
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

func startProgress() *progress {
	p := &progress{start: time.Now()}
	if !isTerminal(os.Stderr) {
		return p
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(os.Stderr, "\r\x1b[K")
				return
			case <-tick.C:
				el := time.Since(p.start)
				n := p.keys.Load()
				fmt.Fprintf(os.Stderr, "\r\x1b[K%s keys  %s keys/s  %s", count(n), rate(float64(n)/el.Seconds()), el.Round(100*time.Millisecond))
			}
		}
	}()
	return p
}

// end erases the progress line.
func (p *progress) end() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}
