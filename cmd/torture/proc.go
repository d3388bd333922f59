package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// A build is one binary of this program and the backend it was built with.
// The supervisor runs workers and checkers from two builds, cgo and pure Go,
// so that both cores write and read the same files at once.
type build struct {
	path, backend string
}

// probeBuild asks the binary at path which backend it was built with.
func probeBuild(path string) (build, error) {
	out, err := exec.Command(path, "backend").Output()
	if err != nil {
		return build{}, fmt.Errorf("%s backend: %w", path, err)
	}
	return build{path: path, backend: strings.TrimSpace(string(out))}, nil
}

// A child is a process of one of the builds.
type child struct {
	cmd  *exec.Cmd
	done chan error // receives the Wait result once
	err  error
	gone bool
}

// startChild runs b with args; its standard error is ours, its standard
// input and output are given when not nil.
func startChild(b build, stdin io.Reader, stdout io.Writer, args ...string) (*child, error) {
	cmd := exec.Command(b.path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

// kill sends SIGKILL and reaps the child. It reports an error when the child
// had already ended some other way (a worker that failed).
func (c *child) kill() error {
	if exited, err := c.exited(); exited {
		return err
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.wait()
	if killedBySignal(c.err) {
		return nil
	}
	return c.err
}

// exited reports, without waiting, whether the child has ended, and how.
func (c *child) exited() (bool, error) {
	if c.gone {
		return true, c.err
	}
	select {
	case c.err = <-c.done:
		c.gone = true
		return true, c.err
	default:
		return false, nil
	}
}

func (c *child) wait() error {
	if !c.gone {
		c.err, c.gone = <-c.done, true
	}
	return c.err
}

func killedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// A workerPool is slots of workers, alternately of each build, that the
// supervisor kills and restarts in their slots. A worker that ended by
// itself (a call that failed) is a failure, and is restarted too.
type workerPool struct {
	builds  []build
	args    func(slot int) []string // a worker's arguments, drawn at each start
	workers []*child

	failures     int
	firstFailure string
}

// startPool starts a worker in each of n slots.
func startPool(builds []build, n int, args func(slot int) []string) (*workerPool, error) {
	p := &workerPool{builds: builds, args: args, workers: make([]*child, n)}
	for slot := range p.workers {
		if err := p.start(slot); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *workerPool) start(slot int) error {
	c, err := startChild(p.builds[slot%len(p.builds)], nil, nil, p.args(slot)...)
	p.workers[slot] = c
	return err
}

func (p *workerPool) failed(slot int, err error) {
	p.failures++
	if p.firstFailure == "" {
		p.firstFailure = fmt.Sprintf("worker %d (%s): %v", slot, p.builds[slot%len(p.builds)].backend, err)
	}
}

// restartExited counts and restarts the workers that ended by themselves.
func (p *workerPool) restartExited() error {
	for slot, w := range p.workers {
		if exited, err := w.exited(); exited {
			p.failed(slot, err)
			if err := p.start(slot); err != nil {
				return err
			}
		}
	}
	return nil
}

// kill sends the worker in slot SIGKILL and reaps it; the caller starts
// the next one (start).
func (p *workerPool) kill(slot int) {
	if err := p.workers[slot].kill(); err != nil {
		p.failed(slot, err)
	}
}

// stop kills every worker.
func (p *workerPool) stop() {
	for slot := range p.workers {
		p.kill(slot)
	}
}
