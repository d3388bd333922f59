package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

// The interrupted-create rounds: each round a new arena file, whose first
// opener (the creator) is killed at a random point of its OpenArena, while
// or after an opener of each build opens the same path.
//
// What the library promises differs by route. At a path where nothing
// exists, a create builds the whole file under no name and links it last,
// so a file at the path is always complete: a killed creator leaves
// nothing, or a complete file, and every other opener opens fine. An empty
// file prepared at the path is initialised in place (adopted) under a
// flock: a killed adopter leaves it empty, or all zero at its full size,
// both of which the next opener adopts, or, when the kill lands in the
// header's few stores, a partial header, which is ErrInterruptedCreate for
// every later opener. Never a hang past the wait timeout, never another
// error.

// The routes of a round.
const (
	routePath  = "new path"
	routeAdopt = "prepared empty file"
)

// What a killed creator left at the path.
const (
	leftNothing  = "nothing"
	leftEmpty    = "empty"
	leftAllZero  = "all zero"
	leftPartial  = "partial header"
	leftComplete = "complete"
)

// The outcomes of an opener's OpenArena.
const (
	outOK          = "ok"
	outInterrupted = "ErrInterruptedCreate"
	outTimeout     = "ErrTimeout"
	outCorrupt     = "ErrCorrupt"
	outOther       = "other error"
)

func classifyOpen(err error) string {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, sketch.ErrInterruptedCreate):
		return outInterrupted
	case errors.Is(err, sketch.ErrTimeout):
		return outTimeout
	case errors.Is(err, sketch.ErrCorrupt):
		return outCorrupt
	}
	return outOther
}

// leftoverAllowed reports whether a killed creator may leave state at the
// path by that route.
func leftoverAllowed(route, state string) bool {
	if route == routePath {
		return state == leftNothing || state == leftComplete
	}
	return state == leftEmpty || state == leftAllZero || state == leftPartial || state == leftComplete
}

// openAllowed reports whether an opener's outcome keeps the promise. When
// the openers began after the kill, the state the creator left decides it
// exactly: ErrInterruptedCreate for a partial header, a successful open for
// anything else. When they raced the creator, an adopted file may still be
// left partial under them, so either is allowed there; a new path allows
// only success.
func openAllowed(route, state string, afterKill bool, outcome string) bool {
	switch {
	case outcome != outOK && outcome != outInterrupted:
		return false
	case route == routePath:
		return outcome == outOK
	case afterKill:
		return (outcome == outInterrupted) == (state == leftPartial)
	}
	return true
}

// leftover describes what is at path.
func leftover(path string) (string, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return leftNothing, nil
	}
	if err != nil {
		return "", err
	}
	if st.Size() == 0 {
		return leftEmpty, nil
	}
	_, ierr := sketch.Inspect(path)
	if ierr == nil {
		return leftComplete, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	zero := true
	for _, c := range b {
		if c != 0 {
			zero = false
			break
		}
	}
	if zero {
		return leftAllZero, nil
	}
	if errors.Is(ierr, sketch.ErrInterruptedCreate) {
		return leftPartial, nil
	}
	return "damaged: " + ierr.Error(), nil
}

// An openReply is an opener's answer for one round.
type openReply struct {
	Outcome string        `json:"outcome"`
	Elapsed time.Duration `json:"elapsed"`
	Err     string        `json:"err,omitempty"`
}

// runArenaOpener opens the arena at each path its standard input names
// ("PATH SIZE TIMEOUT" a line), makes a small structure in it when it
// opened, and answers with one JSON line each.
func runArenaOpener() error {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 3 {
			return fmt.Errorf("opener: bad request %q", in.Text())
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		timeout, _ := time.ParseDuration(f[2])
		began := time.Now()
		a, err := sketch.OpenArena(sketch.Path(f[0]), sketch.ArenaConfig{Size: size}, sketch.WithWaitTimeout(timeout))
		r := openReply{Elapsed: time.Since(began), Outcome: classifyOpen(err)}
		if err == nil {
			var c *sketch.CountMin
			if c, err = sketch.OpenCountMin(a.Place("probe"), sketch.CountMinConfig{Rows: 2, Width: 64}); err == nil {
				_, err = c.AddString("k")
				c.Close()
			}
			a.Close()
			if err != nil {
				r.Outcome = outOther
			}
		}
		if err != nil {
			r.Err = err.Error()
		}
		if err := out.Encode(r); err != nil {
			return err
		}
	}
	return in.Err()
}

// runArenaCreator says "opening", opens (creates) the arena, says
// "opened" and how long that took, and waits to be killed.
func runArenaCreator(path string, size int64) error {
	fmt.Println("opening")
	began := time.Now()
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: size})
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Println("opened", time.Since(began).Nanoseconds())
	time.Sleep(time.Hour)
	return nil
}

type interruptConfig struct {
	rounds  int
	size    int64         // of each new arena: large enough that its create takes milliseconds
	timeout time.Duration // the openers' wait timeout
	seed    uint64
}

type interruptResult struct {
	cfg         interruptConfig
	rounds      int
	byRoute     map[string]int
	left        map[string]int // what killed creators left, over rounds whose openers began after the kill
	outcomes    map[string]int
	afterReturn int           // rounds whose creator's open had returned before the kill
	calibration time.Duration // one create of such an arena here: the median of the creators' that returned
	creates     []time.Duration
	slowest     time.Duration // the longest open
	debris      int           // hidden temporary files left in the directory
	violations  int
	first       string
}

func (r *interruptResult) violation(format string, args ...any) {
	r.violations++
	if r.first == "" {
		r.first = fmt.Sprintf(format, args...)
	}
}

// An opener process the supervisor talks to through pipes.
type opener struct {
	b   build
	c   *child
	in  *os.File
	out *bufio.Scanner
}

func startOpener(b build) (*opener, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c, err := startChild(b, inR, outW, "arena", "opener")
	inR.Close()
	outW.Close()
	if err != nil {
		return nil, err
	}
	return &opener{b: b, c: c, in: inW, out: bufio.NewScanner(outR)}, nil
}

func (o *opener) ask(path string, size int64, timeout time.Duration) error {
	_, err := fmt.Fprintf(o.in, "%s %d %s\n", path, size, timeout)
	return err
}

func (o *opener) reply() (openReply, error) {
	var r openReply
	if !o.out.Scan() {
		return r, fmt.Errorf("opener (%s) ended: %v", o.b.backend, o.c.wait())
	}
	return r, json.Unmarshal(o.out.Bytes(), &r)
}

// runInterrupted runs the rounds, alternating the routes and the builds
// of the creator.
func runInterrupted(dir string, builds []build, cfg interruptConfig) (interruptResult, error) {
	res := interruptResult{cfg: cfg, byRoute: map[string]int{}, left: map[string]int{}, outcomes: map[string]int{}}
	for i := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("calibrate.%d.arena", i))
		began := time.Now()
		a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: cfg.size})
		if err != nil {
			return res, err
		}
		res.creates = append(res.creates, time.Since(began))
		a.Close()
		os.Remove(path)
	}
	var openers []*opener
	for _, b := range builds {
		o, err := startOpener(b)
		if err != nil {
			return res, err
		}
		defer o.c.kill()
		defer o.in.Close()
		openers = append(openers, o)
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 14))
	for round := range cfg.rounds {
		if err := interruptRound(dir, builds[round%len(builds)], openers, round, rng, &res); err != nil {
			return res, fmt.Errorf("round %d: %w", round, err)
		}
		res.rounds++
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".sketch-") {
				res.debris++
			}
		}
	}
	return res, nil
}

// interruptRound starts a creator of a new arena, kills it inside its
// open (or just after), and has every opener open the arena racing the
// creator or after the kill; it judges what the creator left and what
// each opener got.
func interruptRound(dir string, b build, openers []*opener, round int, rng *rand.Rand, res *interruptResult) error {
	route := routePath
	if round%4 >= 2 { // builds alternate every round, routes every two
		route = routeAdopt
	}
	res.byRoute[route]++
	path := filepath.Join(dir, fmt.Sprintf("new.%03d.arena", round))
	defer os.Remove(path)
	if route == routeAdopt {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	c, lines, outR, err := startCreator(b, path, res.cfg.size)
	if err != nil {
		return err
	}
	defer outR.Close()
	began := time.Now()
	// Kill within the create's usual time (the median of those that
	// returned, in creator processes too) and a little past it, so that
	// most kills land inside it; one round in four lets the create return,
	// for the time and for kills of a creator that has published.
	slices.Sort(res.creates)
	res.calibration = res.creates[len(res.creates)/2]
	killAt := rand.N(res.calibration*6/5 + 1)
	waitOpened := round%4 == 1
	afterKill := rng.IntN(2) == 0
	if !afterKill {
		time.Sleep(rand.N(killAt + 1))
		if err := askAll(openers, path, res.cfg); err != nil {
			return err
		}
	}
	if waitOpened {
		select {
		case l := <-lines:
			res.sawOpened(l)
		case <-time.After(10 * time.Second):
		}
	} else {
		time.Sleep(killAt - time.Since(began))
	}
	if err := c.kill(); err != nil {
		res.violation("creator (%s) of %s: %v", b.backend, path, err)
	}
	for l := range lines {
		res.sawOpened(l)
	}
	state, err := leftover(path)
	if err != nil {
		return err
	}
	if !leftoverAllowed(route, state) {
		res.violation("%s (%s): a creator (%s) killed %s into its open left %s", path, route, b.backend, killAt, state)
	}
	if afterKill {
		res.left[state]++
		if err := askAll(openers, path, res.cfg); err != nil {
			return err
		}
	}
	return res.judgeOpeners(openers, path, route, state, afterKill)
}

// startCreator starts a creator of the arena at path and waits for it to
// say it is opening: its further lines come on lines, read from outR,
// which the caller closes.
func startCreator(b build, path string, size int64) (*child, <-chan string, *os.File, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := startChild(b, nil, outW, "arena", "creator", "-path", path, "-size", strconv.FormatInt(size, 10))
	outW.Close()
	if err != nil {
		outR.Close()
		return nil, nil, nil, err
	}
	lines := make(chan string, 2)
	go func() {
		s := bufio.NewScanner(outR)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "opening" {
			c.kill()
			outR.Close()
			return nil, nil, nil, fmt.Errorf("creator (%s) said %q", b.backend, l)
		}
	case <-time.After(10 * time.Second):
		c.kill()
		outR.Close()
		return nil, nil, nil, fmt.Errorf("creator (%s) did not start", b.backend)
	}
	return c, lines, outR, nil
}

// askAll asks every opener to open the arena at path.
func askAll(openers []*opener, path string, cfg interruptConfig) error {
	for _, o := range openers {
		if err := o.ask(path, cfg.size, cfg.timeout); err != nil {
			return err
		}
	}
	return nil
}

// sawOpened counts a creator's line saying its open returned, with the
// time it took, the calibration of later rounds.
func (r *interruptResult) sawOpened(l string) bool {
	f := strings.Fields(l)
	if len(f) != 2 || f[0] != "opened" {
		return false
	}
	r.afterReturn++
	if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
		r.creates = append(r.creates, time.Duration(ns))
	}
	return true
}

// judgeOpeners reads every opener's reply to its open of path and judges
// it by the route, what the killed creator left and whether the open came
// after the kill; an arena that opened must Inspect.
func (r *interruptResult) judgeOpeners(openers []*opener, path, route, state string, afterKill bool) error {
	anyOK := false
	for _, o := range openers {
		rep, err := o.reply()
		if err != nil {
			return err
		}
		r.outcomes[rep.Outcome]++
		r.slowest = max(r.slowest, rep.Elapsed)
		anyOK = anyOK || rep.Outcome == outOK
		if !openAllowed(route, state, afterKill, rep.Outcome) {
			when := "racing the creator"
			if afterKill {
				when = "after the kill, the creator having left " + state
			}
			r.violation("%s (%s): opener (%s) %s: %s %s", path, route, o.b.backend, when, rep.Outcome, rep.Err)
		}
		if rep.Elapsed > r.cfg.timeout+time.Second {
			r.violation("%s: opener (%s) took %s, past its wait timeout %s", path, o.b.backend, rep.Elapsed, r.cfg.timeout)
		}
	}
	if anyOK {
		if _, err := sketch.Inspect(path); err != nil {
			r.violation("%s opened, but Inspect: %v", path, err)
		}
	}
	return nil
}
