package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// A worker is one build of this program serving measurements, one at a
// time, to the orchestrator: JSON requests on stdin, JSON responses on
// stdout (nothing else may write there).
type request struct {
	ID     string
	Target time.Duration // the sample's length
	Setup  bool          // open and calibrate only
	GC     bool          // collect garbage (after setup), nothing else
}

type response struct {
	NsPerOp float64
	Ops     int
	GCs     uint64 // garbage collections that ran during the sample
	Err     string
}

// live is a subject opened in this process: its run function and the
// number of keys each sample runs.
type live struct {
	run  runFunc
	stop func()
	n    int
	err  error
}

// worker serves requests until stdin closes.
func worker(e *env, in io.Reader, out io.Writer) error {
	subjects := table(allBuilds)
	lives := map[string]*live{}
	defer func() {
		for _, l := range lives {
			if l.stop != nil {
				l.stop()
			}
		}
	}()
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		var resp response
		switch {
		case req.GC:
			runtime.GC()
		default:
			l := lives[req.ID]
			if l == nil {
				l = open(e, subjects, req.ID, req.Target)
				lives[req.ID] = l
			}
			if l.err != nil {
				resp.Err = l.err.Error()
			} else if !req.Setup {
				gc0 := gcCycles()
				t0 := time.Now()
				l.run(l.n)
				resp.NsPerOp = float64(time.Since(t0).Nanoseconds()) / float64(l.n)
				resp.Ops = l.n
				resp.GCs = gcCycles() - gc0
			}
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
}

// gcCycles is the number of garbage collections so far (without stopping
// the world, as runtime.ReadMemStats would).
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allBuilds are the builds every process lists subjects for, so that IDs
// agree between processes of different builds.
var allBuilds = []string{"cgo", "purego"}

// open starts a subject and calibrates its sample: the number of keys
// that takes about target, found by doubling from one unit; then one
// untimed run of that many keys warms it up.
func open(e *env, subjects []subject, id string, target time.Duration) *live {
	s, ok := lookup(subjects, id)
	if !ok {
		return &live{err: fmt.Errorf("no subject %s", id)}
	}
	if s.Build != "" && s.Build != e.build {
		return &live{err: fmt.Errorf("%s needs the %s build, this is %s", id, s.Build, e.build)}
	}
	run, stop, err := s.start(e, 0)
	if err != nil {
		return &live{err: err}
	}
	unit := s.unit()
	n := unit
	for {
		t0 := time.Now()
		run(n)
		el := time.Since(t0)
		if el >= target/8 || n >= 1<<34 {
			n = int(float64(n) * float64(target) / float64(max(el, 1)))
			break
		}
		n *= 2
	}
	n = max(unit, (n+unit-1)/unit*unit)
	run(n)
	return &live{run: run, stop: stop, n: n}
}

// A peer is another process of a subject of several: the same build,
// running the single-writer subject over the same file from its own part
// of the stream, n keys each time the parent says so. It is told its
// parent subject's ID, which names the files a subject does not share
// with others (rows_lanes.go).
type peer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startPeer starts a peer of the subject k from key start on.
func (e *env) startPeer(k Key, start int) (*peer, error) {
	one := k.single()
	cmd, in, out, err := startProc(e.self, "-role=peer", "-dir="+e.dir, "-id="+one.String(), "-parent="+k.String(), "-start="+strconv.Itoa(start), "-small="+strconv.FormatBool(e.small))
	if err != nil {
		return nil, err
	}
	p := &peer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
		p.stop()
		return nil, fmt.Errorf("peer for %s: %q %v", one, line, err)
	}
	return p, nil
}

func (p *peer) begin(n int) {
	if _, err := fmt.Fprintf(p.in, "%d\n", n); err != nil {
		fatalf("peer: %v", err)
	}
}

func (p *peer) wait() {
	if line, err := p.out.ReadString('\n'); err != nil || line != "ok\n" {
		fatalf("peer: %q %v", line, err)
	}
}

// stop closes the peer's stdin, which ends it, and kills it if it has not
// exited within five seconds.
func (p *peer) stop() {
	p.in.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// peerMain is the peer's side: open the subject from start, say ready,
// then run n keys for each line n on stdin and answer ok.
func peerMain(e *env, id string, start int, in io.Reader, out io.Writer) error {
	s, ok := lookup(table(allBuilds), id)
	if !ok {
		return fmt.Errorf("no subject %s", id)
	}
	run, _, err := s.start(e, start)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			return err
		}
		run(n)
		fmt.Fprintln(out, "ok")
	}
	return sc.Err()
}

// workerProc is the orchestrator's side of a worker.
type workerProc struct {
	build string
	cmd   *exec.Cmd
	in    io.WriteCloser
	enc   *json.Encoder
	dec   *json.Decoder
}

func startWorker(build, bin, dir string) (*workerProc, error) {
	cmd, in, out, err := startProc(bin, "-role=worker", "-dir="+dir)
	if err != nil {
		return nil, err
	}
	return &workerProc{build: build, cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReader(out))}, nil
}

// startProc starts bin with args, its stderr this process's, and returns
// its stdin and stdout.
func startProc(bin string, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return cmd, in, out, nil
}

func (w *workerProc) do(req request) (response, error) {
	var resp response
	if err := w.enc.Encode(req); err != nil {
		return resp, fmt.Errorf("%s worker: %w", w.build, err)
	}
	if err := w.dec.Decode(&resp); err != nil {
		return resp, fmt.Errorf("%s worker: %w", w.build, err)
	}
	return resp, nil
}

// close ends the worker: it closes stdin and waits.
func (w *workerProc) close() error {
	w.in.Close()
	err := w.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s worker: %w", w.build, err)
	}
	return err
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "report: "+format+"\n", args...)
	os.Exit(1)
}
