package main

import (
	"bufio"
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
// Weighted lines are KEY<TAB>N. The keys of a batch point into a buffer
// of the reader's, valid until the next call.
type keyReader struct {
	r        *bufio.Reader
	weighted bool
	line     int
	buf      []byte
	keys     [][]byte
	weights  []uint64
	long     []byte // a line longer than r's buffer, being put together
}

func newKeyReader(r io.Reader, weighted bool) *keyReader {
	return &keyReader{r: bufio.NewReaderSize(r, 1<<20), weighted: weighted, buf: make([]byte, 0, 1<<20)}
}

// next returns the next batch; io.EOF when there is none.
func (kr *keyReader) next() (keys [][]byte, weights []uint64, err error) {
	kr.buf, kr.keys, kr.weights = kr.buf[:0], kr.keys[:0], kr.weights[:0]
	for len(kr.keys) < batchKeys {
		line, err := kr.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			kr.long = append(kr.long, line...)
			continue
		}
		if kr.long != nil {
			line = append(kr.long, line...)
			kr.long = nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("reading standard input: %w", err)
		}
		if len(line) > 0 {
			kr.line++
			if perr := kr.take(line); perr != nil {
				return nil, nil, perr
			}
		}
		if err != nil { // EOF
			break
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

// take adds one line to the batch.
func (kr *keyReader) take(line []byte) error {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
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
	if len(kr.buf)+len(line) > cap(kr.buf) {
		// The batch's earlier keys keep the old buffer.
		kr.buf = make([]byte, 0, max(cap(kr.buf), len(line)))
	}
	start := len(kr.buf)
	kr.buf = append(kr.buf, line...)
	kr.keys = append(kr.keys, kr.buf[start:len(kr.buf):len(kr.buf)])
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
