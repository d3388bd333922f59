//go:build linux

package sketch

// Tests with real processes sharing one sketch. A multi-process test
// re-runs this test binary (or a sibling built with the other backend) with
// -test.run=^TestHelperProcess$ and a role in SKETCH_TEST_ROLE, the way
// x/sys/unix's TestPassFD does; TestHelperProcess does nothing when the
// role is unset, so in a normal run it passes at once. A role's body
// registers itself in the file that defines it: var _ = role("name", body).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Environment of a helper process.
const (
	envRole    = "SKETCH_TEST_ROLE"    // what the child does; unset in a normal run
	envPath    = "SKETCH_TEST_PATH"    // the sketch file
	envChild   = "SKETCH_TEST_CHILD"   // the child's index, which picks its stream
	envOps     = "SKETCH_TEST_OPS"     // how many operations the child's stream has
	envRows    = "SKETCH_TEST_ROWS"    // shape to open with (0 = zero config)
	envWidth   = "SKETCH_TEST_WIDTH"   //
	envBarrier = "SKETCH_TEST_BARRIER" // "1": fd 3 is the start pipe, fd 4 the ready pipe
	envSeed    = "SKETCH_TEST_SEED"    // memfd child: the seed it must see
	envPKeys   = "SKETCH_TEST_PKEYS"   // memfd child: keys the parent added
	envCKeys   = "SKETCH_TEST_CKEYS"   // memfd child: keys it adds itself
)

// childTimeout bounds every multi-process test: a hung child is killed and
// fails the test instead of hanging it.
const childTimeout = patience

// roles are the bodies of the child processes by the role names in envRole.
// Each body registers itself beside its definition, with
// var _ = role("name", childBody).
var roles = map[string]func() error{}

// role registers body as what a child process with envRole=name does. A
// name registered twice panics, at the test binary's start.
func role(name string, body func() error) struct{} {
	if _, dup := roles[name]; dup {
		panic(fmt.Sprintf("role %q registered twice", name))
	}
	roles[name] = body
	return struct{}{}
}

// TestHelperProcess is the body of every child process. It is not a test:
// it runs the role envRole names, and fails the child on a role nobody
// registered.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	var err error
	if body, ok := roles[role]; ok {
		err = body()
	} else {
		err = fmt.Errorf("unknown role %q (registered: %s)", role, strings.Join(slices.Sorted(maps.Keys(roles)), " "))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (%s %s): %v\n", role, os.Getenv(envChild), Backend, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestHelperProcess_Roles: every role a test starts a child in is
// registered, and every registered role is started by a test. The roles
// started are read from the package's test sources: string literals given
// for a parameter named role, in a field named role or ending in Role, and
// after envRole (envRole+"=name", envs(envRole, "name", ...)).
func TestHelperProcess_Roles(t *testing.T) {
	names, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Skip("the package's test sources are not in the working directory")
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// roleArg: which argument of a function of the package is a role.
	roleArg := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			i := 0
			for _, p := range fd.Type.Params.List {
				for _, n := range p.Names {
					if n.Name == "role" {
						roleArg[fd.Name.Name] = i
					}
					i++
				}
			}
		}
	}
	started := map[string]token.Position{}
	found := func(e ast.Expr, prefix string) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.TrimPrefix(s, prefix) != "" {
				started[strings.TrimPrefix(s, prefix)] = fset.Position(lit.Pos())
			}
		}
	}
	isEnvRole := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == "envRole"
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok {
					if i, ok := roleArg[id.Name]; ok && i < len(n.Args) {
						found(n.Args[i], "")
					}
				}
				for i := 0; i+1 < len(n.Args); i++ {
					if isEnvRole(n.Args[i]) {
						found(n.Args[i+1], "")
					}
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && (id.Name == "role" || strings.HasSuffix(id.Name, "Role")) {
					found(n.Value, "")
				}
			case *ast.BinaryExpr:
				if n.Op == token.ADD && isEnvRole(n.X) {
					found(n.Y, "=")
				}
			}
			return true
		})
	}
	for _, name := range slices.Sorted(maps.Keys(started)) {
		if roles[name] == nil {
			t.Errorf("%s: a child is started in role %q, which no file registers", started[name], name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(roles)) {
		if _, ok := started[name]; !ok {
			t.Errorf("role %q is registered, but no test starts a child in it", name)
		}
	}
	t.Logf("%d roles registered, %d started by the tests", len(roles), len(started))
}

func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, os.Getenv(name), err))
	}
	return n
}

func envConfig() CountMinConfig {
	return CountMinConfig{Rows: envInt(envRows), Width: envInt(envWidth)}
}

// childBarrier reports that the child is ready on fd 4 and blocks on fd 3
// until the parent closes the start pipe, so that every child of a group
// leaves the barrier at the same moment, woken by the kernel.
func childBarrier() error {
	if os.Getenv(envBarrier) != "1" {
		return nil
	}
	ready := os.NewFile(4, "ready")
	if _, err := ready.Write([]byte{1}); err != nil {
		return fmt.Errorf("barrier: write ready: %w", err)
	}
	ready.Close()
	start := os.NewFile(3, "start")
	defer start.Close()
	if _, err := io.Copy(io.Discard, start); err != nil {
		return fmt.Errorf("barrier: wait for start: %w", err)
	}
	return nil
}

var _ = role("stream", childStream)

// childStream opens the sketch, applies stream envChild and prints its
// backend and the file's seed.
func childStream() error {
	ops := streamOps(envInt(envChild), envInt(envOps))
	if err := childBarrier(); err != nil {
		return err
	}
	c, err := OpenCountMin(Path(os.Getenv(envPath)), envConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	if err := applyOps(c, ops); err != nil {
		return err
	}
	fmt.Printf("backend=%s\nseed=%d\n", Backend, c.Seed())
	return nil
}

var _ = role("race", childRace)

// childRace races the other children to create the sketch, then adds 1000
// of its own key and 1000 of the shared one.
func childRace() error {
	if err := childBarrier(); err != nil {
		return err
	}
	c, err := OpenCountMin(Path(os.Getenv(envPath)), envConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	own := []byte("own-" + os.Getenv(envChild))
	for i := 0; i < 1000; i++ {
		if _, err := c.Add(own); err != nil {
			return err
		}
		if _, err := c.AddString("shared"); err != nil {
			return err
		}
	}
	fmt.Printf("seed=%d\n", c.Seed())
	return nil
}

var _ = role("loop", childLoop)

// childLoop adds key i%killKeys for i = 0, 1, ... until it is killed.
func childLoop() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{})
	if err != nil {
		return err
	}
	var buf []byte
	for i := uint64(0); ; i++ {
		buf = loopKey(buf[:0], i%killKeys)
		if _, err := c.Add(buf); err != nil {
			return err
		}
	}
}

func loopKey(buf []byte, k uint64) []byte {
	return strconv.AppendUint(append(buf, "k-"...), k, 10)
}

var _ = role("memfd", childMemfd)

// childMemfd attaches to the sketch on fd 3, checks the parent's counts,
// and adds key "c-j" j+1 times for each j < envCKeys.
func childMemfd() error {
	c, err := OpenCountMin(Inherited(3), CountMinConfig{})
	if err != nil {
		return err
	}
	st := c.Stats()
	if want := uint64(envInt(envSeed)); c.Seed() != want {
		return fmt.Errorf("attached sketch has seed %d, the parent's has %d", c.Seed(), want)
	}
	if c.Path() != "" {
		return fmt.Errorf("Path() = %q for an inherited descriptor, want \"\"", c.Path())
	}
	pkeys, ckeys := envInt(envPKeys), envInt(envCKeys)
	if want := triangle(pkeys); st.Total != want {
		return fmt.Errorf("child sees Total %d, the parent added %d", st.Total, want)
	}
	for i := 0; i < pkeys; i++ {
		k := fmt.Sprintf("p-%d", i)
		if got := c.EstimateString(k); got < uint64(i+1) {
			return fmt.Errorf("child sees Estimate(%q) = %d, want >= %d", k, got, i+1)
		}
	}
	var batch [][]byte
	for j := 0; j < ckeys; j++ {
		k := fmt.Sprintf("c-%d", j)
		for r := 0; r <= j; r++ {
			if r%2 == 0 {
				if _, err := c.AddString(k); err != nil {
					return err
				}
			} else {
				batch = append(batch, []byte(k))
			}
		}
	}
	if err := c.AddBatch(batch, nil); err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return err
	}
	// The descriptor was duplicated: fd 3 stays ours, also after Close.
	if err := c.Close(); err != nil {
		return err
	}
	if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err != nil {
		return fmt.Errorf("fd 3 after OpenCountMin(Inherited(3)) and Close: %w", err)
	}
	fmt.Println("ok")
	return nil
}

var _ = role("crossuser", childCrossUser)

// childCrossUser runs as another user than the parent: for each round
// number n it reads on stdin, it opens round n's path (see
// TestOpen_CrossUserRace) at once, racing the parent, adds "nobody" once,
// closes, and answers "ok n" or "err n <error>" on stdout.
func childCrossUser() error {
	dir := os.Getenv(envCrossDir)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		if err != nil {
			return fmt.Errorf("round number %q: %w", in.Text(), err)
		}
		if err := crossOpen(crossPath(dir, n), "nobody", WithMode(crossMode)); err != nil {
			fmt.Printf("err %d %v\n", n, err)
		} else {
			fmt.Printf("ok %d\n", n)
		}
	}
	return in.Err()
}

func triangle(n int) uint64 { return uint64(n) * uint64(n+1) / 2 }

// A stream is a deterministic list of operations that a child (or a
// goroutine) applies and the parent replays to compute the exact truth.
type opKind uint8

const (
	opAdd opKind = iota
	opAddString
	opAddN
	opBatch // the key goes into the next AddBatch
)

type op struct {
	key string
	n   uint64
	how opKind
}

const streamKeyspace = 2000

// streamOps returns stream number child: Zipf-distributed keys over
// streamKeyspace names shared by every stream, so that streams hit the same
// counters, through every way of adding.
func streamOps(child, n int) []op {
	r := rand.New(rand.NewPCG(uint64(child)+1, 0x5eed))
	z := rand.NewZipf(r, 1.1, 2, streamKeyspace-1)
	ops := make([]op, n)
	for i := range ops {
		o := op{key: "k-" + strconv.FormatUint(z.Uint64(), 10), n: 1, how: opBatch}
		switch i % 6 {
		case 0:
			o.how, o.n = opAddN, uint64(1+i%7)
		case 1:
			o.how = opAdd
		case 2:
			o.how = opAddString
		}
		ops[i] = o
	}
	return ops
}

// batchSizes cycles through a batch too small for the C core, one it
// serves in a single crossing and one that takes two.
var batchSizes = []int{3, 64, 300}

// applyOps applies ops to c, checking that every estimate an add returns
// is at least what this caller alone has added to the key so far.
func applyOps(c *CountMin, ops []op) error {
	own := map[string]uint64{}     // applied by this caller
	pending := map[string]uint64{} // in the batch being gathered
	var (
		batch   [][]byte
		want    []uint64
		flushes int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var est []uint64
		if flushes%2 == 0 {
			est = make([]uint64, len(batch))
		}
		flushes++
		if err := c.AddBatch(batch, est); err != nil {
			return err
		}
		for i, e := range est {
			if e < want[i] {
				return fmt.Errorf("AddBatch estimate for %q = %d, want >= %d", batch[i], e, want[i])
			}
		}
		for k, n := range pending {
			own[k] += n
		}
		clear(pending)
		batch, want = batch[:0], want[:0]
		return nil
	}
	for _, o := range ops {
		if o.how == opBatch {
			pending[o.key]++
			batch = append(batch, []byte(o.key))
			want = append(want, own[o.key]+pending[o.key])
			if len(batch) >= batchSizes[flushes%len(batchSizes)] {
				if err := flush(); err != nil {
					return err
				}
			}
			continue
		}
		own[o.key] += o.n
		var (
			got uint64
			err error
		)
		switch o.how {
		case opAdd:
			got, err = c.Add([]byte(o.key))
		case opAddString:
			got, err = c.AddString(o.key)
		case opAddN:
			got, err = c.AddN([]byte(o.key), o.n)
		}
		if err != nil {
			return err
		}
		if got < own[o.key] {
			return fmt.Errorf("add of %q returned %d, want >= %d", o.key, got, own[o.key])
		}
	}
	return flush()
}

// truthOf replays streams: each key's exact count, the total and the
// number of add calls (a batch counts once per key).
func truthOf(streams ...[]op) (truth map[string]uint64, total, adds uint64) {
	truth = map[string]uint64{}
	for _, ops := range streams {
		for _, o := range ops {
			truth[o.key] += o.n
			total += o.n
			adds += o.n // the add count counts what was added
		}
	}
	return truth, total, adds
}

// checkAgainstTruth asserts the exact total and add count, a clean Check,
// that no key is estimated low, and that at least 95% of keys are exact
// (which shows that the shape is wide enough for the check to mean
// something).
func checkAgainstTruth(t *testing.T, c *CountMin, truth map[string]uint64, total, adds uint64) {
	t.Helper()
	st := c.Stats()
	if st.Total != total {
		t.Errorf("Stats().Total = %d, want %d", st.Total, total)
	}
	if st.Adds != adds {
		t.Errorf("Stats().Adds = %d, want %d", st.Adds, adds)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	exact := 0
	for k, n := range truth {
		got := c.EstimateString(k)
		if got < n {
			t.Errorf("Estimate(%q) = %d, want >= %d", k, got, n)
		}
		if got == n {
			exact++
		}
	}
	if exact*100 < len(truth)*95 {
		t.Errorf("only %d of %d keys are estimated exactly, want at least 95%%", exact, len(truth))
	}
	t.Logf("%d keys, %d exact; total %d in %d adds", len(truth), exact, total, adds)
}

// helper is one child process. Its output is logged only if the test
// failed.
type helper struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when Wait returned
	err            error         // Wait's, valid after done
}

// startHelper starts exe (this test binary when "") as a child with the
// given role, environment and inherited files (fd 3 onwards). The child is
// killed when ctx ends and at the end of the test at the latest.
func startHelper(t *testing.T, ctx context.Context, exe, name, role string, env []string, files ...*os.File) *helper {
	t.Helper()
	if exe == "" {
		exe = selfExe(t)
	}
	h := &helper{name: name, done: make(chan struct{})}
	h.cmd = exec.CommandContext(ctx, exe, "-test.run=^TestHelperProcess$")
	h.cmd.Env = append(os.Environ(), envRole+"="+role,
		// A race-enabled child would sleep a second at exit, for nothing.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stdout, h.cmd.Stderr = &h.stdout, &h.stderr
	h.cmd.ExtraFiles = files
	h.cmd.WaitDelay = 5 * time.Second
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("%s (pid %d) exited with %v\n--- stdout:\n%s--- stderr:\n%s", h.name, h.cmd.Process.Pid, h.err, h.stdout.String(), h.stderr.String())
		}
	})
	return h
}

// wait waits for the child (bounded by its context) and fails the test if
// it did not exit 0.
func (h *helper) wait(t *testing.T) {
	t.Helper()
	<-h.done
	if h.err != nil {
		t.Errorf("%s: %v", h.name, h.err)
	}
}

// value returns what the child printed as "name=value".
func (h *helper) value(t *testing.T, name string) string {
	t.Helper()
	<-h.done
	sc := bufio.NewScanner(bytes.NewReader(h.stdout.Bytes()))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"="); ok {
			return v
		}
	}
	t.Errorf("%s printed no %s=", h.name, name)
	return ""
}

func selfExe(t *testing.T) string {
	t.Helper()
	requireReexec(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-run the test binary: %v", err)
	}
	return exe
}

// alternatingBuilds returns n test binaries for the children of one
// test: this build's, and, from the second on, every other one of the
// other build, where it can be built and the run is not -short, so that
// processes of both builds share a file.
func alternatingBuilds(t *testing.T, n int) []string {
	t.Helper()
	self, other := selfExe(t), ""
	if ob := map[string]string{"cgo": "purego", "purego": "cgo"}[Backend]; !testing.Short() && canBuildBackend(ob) {
		other = backendBinary(t, ob)
	}
	exes := make([]string, n)
	for i := range exes {
		exes[i] = self
		if i%2 == 1 && other != "" {
			exes[i] = other
		}
	}
	return exes
}

// requireReexec skips a multi-process test where this binary cannot start
// itself again (see canReexec).
func requireReexec(t *testing.T) {
	t.Helper()
	if !canReexec(t) {
		t.Skip("this test binary cannot re-run itself here")
	}
}

// childSpec is one member of a group started behind a barrier.
type childSpec struct {
	exe, name, role string
	env             []string
}

// startGroup starts the children, waits until each is ready, then releases
// them all at once by closing the start pipe.
func startGroup(t *testing.T, ctx context.Context, specs []childSpec) []*helper {
	t.Helper()
	startR, startW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer startW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	hs := make([]*helper, len(specs))
	for i, s := range specs {
		hs[i] = startHelper(t, ctx, s.exe, s.name, s.role, append(s.env, envBarrier+"=1"), startR, readyW)
	}
	// Only the children hold these ends now.
	startR.Close()
	readyW.Close()
	if dl, ok := ctx.Deadline(); ok {
		readyR.SetReadDeadline(dl)
	}
	if _, err := io.ReadFull(readyR, make([]byte, len(specs))); err != nil {
		t.Fatalf("waiting for %d children to be ready: %v", len(specs), err)
	}
	startW.Close() // go
	return hs
}

func childContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), childTimeout)
	t.Cleanup(cancel)
	return ctx
}

func envs(kv ...any) []string {
	var env []string
	for i := 0; i < len(kv); i += 2 {
		env = append(env, fmt.Sprintf("%s=%v", kv[i], kv[i+1]))
	}
	return env
}

// TestCountMin_FourProcesses has four processes open one path at once (one
// creates, three attach) and add deterministic streams; the parent then
// checks the result against the exact counts.
func TestCountMin_FourProcesses(t *testing.T) {
	requireReexec(t)
	const children, nops = 4, 40000
	path := tempPath(t, "cms")
	ctx := childContext(t)
	var specs []childSpec
	var streams [][]op
	for i := 0; i < children; i++ {
		specs = append(specs, childSpec{name: fmt.Sprintf("child %d", i), role: "stream",
			env: envs(envPath, path, envChild, i, envOps, nops, envRows, 4, envWidth, 1<<16)})
		streams = append(streams, streamOps(i, nops))
	}
	hs := startGroup(t, ctx, specs)
	truth, total, adds := truthOf(streams...)
	for _, h := range hs {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	c := mustOpen(t, path, CountMinConfig{})
	if c.Config().Rows != 4 || c.Config().Width != 1<<16 {
		t.Errorf("shape %d x %d, want 4 x %d", c.Config().Rows, c.Config().Width, 1<<16)
	}
	checkAgainstTruth(t, c, truth, total, adds)
	seed := strconv.FormatUint(c.Seed(), 10)
	for _, h := range hs {
		if got := h.value(t, "seed"); got != seed {
			t.Errorf("%s saw seed %s, the file has %s", h.name, got, seed)
		}
	}
}

// TestCountMin_RaceToCreate has eight processes race to create one path
// that does not exist: all must succeed on the same file.
func TestCountMin_RaceToCreate(t *testing.T) {
	requireReexec(t)
	const children = 8
	dir := t.TempDir()
	path := filepath.Join(dir, "cms")
	ctx := childContext(t)
	var specs []childSpec
	for i := 0; i < children; i++ {
		specs = append(specs, childSpec{name: fmt.Sprintf("child %d", i), role: "race",
			env: envs(envPath, path, envChild, i, envRows, 4, envWidth, 1<<12)})
	}
	hs := startGroup(t, ctx, specs)
	for _, h := range hs {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"cms"}) {
		t.Errorf("directory holds %q, want exactly [cms]", names)
	}
	c := mustOpen(t, path, CountMinConfig{})
	if got := c.EstimateString("shared"); got < children*1000 {
		t.Errorf("Estimate(%q) = %d, want >= %d", "shared", got, children*1000)
	}
	for i := 0; i < children; i++ {
		k := fmt.Sprintf("own-%d", i)
		if got := c.EstimateString(k); got < 1000 {
			t.Errorf("Estimate(%q) = %d, want >= %d", k, got, 1000)
		}
	}
	st := c.Stats()
	if st.Total != children*2000 || st.Adds != children*2000 {
		t.Errorf("Stats() Total, Adds = %d, %d, want %d, %d", st.Total, st.Adds, children*2000, children*2000)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	// A random seed is drawn by whoever creates the file: one seed means
	// one creator.
	seed := strconv.FormatUint(c.Seed(), 10)
	for _, h := range hs {
		if got := h.value(t, "seed"); got != seed {
			t.Errorf("%s saw seed %s, the file has %s", h.name, got, seed)
		}
	}
}

// killKeys is the key space of the kill test's sequence.
const killKeys = 997

// TestCountMin_KillMidStream SIGKILLs a process in the middle of a tight
// add loop and checks what the file says afterwards.
//
// An add increments one counter per row, in row order, with one atomic add
// each, and only then the add count. A process killed part way through an
// add therefore leaves the first few rows one higher than the rest: the
// rows differ by at most that one add, and only at that one key's counters,
// so every other key's estimate is still an upper bound, and the minimum
// row sum is the number of adds that completed.
func TestCountMin_KillMidStream(t *testing.T) {
	requireReexec(t)
	torn := 0
	for iter, threshold := range []uint64{2000, 40000, 150000} {
		path := tempPath(t, "cms")
		c0 := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 12})
		ctx := childContext(t)
		h := startHelper(t, ctx, "", fmt.Sprintf("loop %d", iter), "loop", envs(envPath, path))
		tick := time.NewTicker(time.Millisecond)
		for c0.Stats().Total < threshold {
			select {
			case <-h.done:
				t.Fatalf("%s exited before it was killed: %v", h.name, h.err)
			case <-ctx.Done():
				t.Fatalf("Total did not reach %d: %v", threshold, ctx.Err())
			case <-tick.C:
			}
		}
		tick.Stop()
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.done
		var ee *exec.ExitError
		if !errors.As(h.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: %v, want killed by SIGKILL", h.name, h.err)
		}

		// A new handle, with the zero config: the file must still open.
		c := mustOpen(t, path, CountMinConfig{})
		sums := make([]uint64, c.Config().Rows)
		c.core.RowSums(&c.l, sums)
		lo, hi := slices.Min(sums), slices.Max(sums)
		if hi-lo > 1 {
			t.Errorf("iteration %d: row sums %v differ by more than one add", iter, sums)
		}
		err := c.Check()
		switch {
		case err == nil && lo != hi:
			t.Errorf("iteration %d: Check() = nil with row sums %v", iter, sums)
		case err != nil && !errors.Is(err, ErrTornAdd):
			t.Errorf("iteration %d: Check() = %v, want nil or ErrTornAdd", iter, err)
		case err != nil && lo == hi:
			t.Errorf("iteration %d: Check() = %v with equal row sums %v", iter, err, sums)
		case err != nil:
			torn++
		}
		m := lo // adds that completed
		if m+1 < threshold {
			t.Errorf("iteration %d: %d adds survived, Total had reached %d", iter, m, threshold)
		}
		st := c.Stats()
		if st.Total != hi {
			t.Errorf("iteration %d: Stats().Total = %d, want the largest row sum %d", iter, st.Total, hi)
		}
		// The add count is bumped after the rows: killed between the two,
		// the rows are all one ahead of it.
		if st.Adds != m && st.Adds+1 != m {
			t.Errorf("iteration %d: Stats().Adds = %d, want %d or %d", iter, st.Adds, m-1, m)
		}
		var buf []byte
		low := 0
		for k := uint64(0); k < killKeys; k++ {
			want := m / killKeys
			if k < m%killKeys {
				want++
			}
			buf = loopKey(buf[:0], k)
			if got := c.Estimate(buf); got < want && low < 10 {
				t.Errorf("iteration %d: Estimate(%q) = %d, want >= %d", iter, buf, got, want)
				low++
			}
		}
		t.Logf("iteration %d: killed after %d adds, row sums %v, Check: %v", iter, m, sums, err)
		c.Close()
		c0.Close()
	}
	t.Logf("%d of 3 kills tore an add", torn)
}

// TestCountMin_MemfdChild hands a memfd sketch to a child through
// ExtraFiles; each side sees the other's counts.
func TestCountMin_MemfdChild(t *testing.T) {
	requireReexec(t)
	const pkeys, ckeys = 50, 40
	c, err := OpenCountMin(Memfd("memfd-child"), CountMinConfig{Rows: 4, Width: 1 << 12, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st unix.Stat_t
	if err := unix.Fstat(c.m.res.fd, &st); err != nil {
		t.Fatal(err)
	}
	if n := countFDs(t, st); n != 1 {
		t.Fatalf("%d descriptors of the memfd open before File(), want 1", n)
	}
	for i := 0; i < pkeys; i++ {
		if _, err := c.AddN(fmt.Appendf(nil, "p-%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	if n := countFDs(t, st); n != 2 {
		t.Errorf("%d descriptors of the memfd open after File(), want 2", n)
	}
	ctx := childContext(t)
	h := startHelper(t, ctx, "", "memfd child", "memfd",
		envs(envSeed, 42, envPKeys, pkeys, envCKeys, ckeys), f)
	// The child has its own copy now: the parent's duplicate is the
	// parent's to close, and closing it leaves the sketch alone.
	if err := f.Close(); err != nil {
		t.Fatalf("closing the duplicate from File(): %v", err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close of the duplicate = %v, want os.ErrClosed", err)
	}
	if n := countFDs(t, st); n != 1 {
		t.Errorf("%d descriptors of the memfd open after closing the duplicate, want 1", n)
	}
	h.wait(t)
	if got := strings.TrimSpace(h.stdout.String()); got != "ok" {
		t.Errorf("child printed %q, want \"ok\"", got)
	}
	if t.Failed() {
		t.FailNow()
	}
	for j := 0; j < ckeys; j++ {
		k := fmt.Sprintf("c-%d", j)
		if got := c.EstimateString(k); got < uint64(j+1) {
			t.Errorf("Estimate(%q) = %d, want >= %d", k, got, j+1)
		}
	}
	s := c.Stats()
	if want := triangle(pkeys) + triangle(ckeys); s.Total != want {
		t.Errorf("Stats().Total = %d, want %d", s.Total, want)
	}
	if want := triangle(pkeys) + triangle(ckeys); s.Adds != want {
		t.Errorf("Stats().Adds = %d, want %d", s.Adds, want)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countFDs(t, st); n != 0 {
		t.Errorf("%d descriptors of the memfd open after Close, want 0", n)
	}
	t.Run("NotASketch", testAttachNotASketch)
}

// countFDs counts this process's descriptors open on the file st describes.
func countFDs(t *testing.T, st unix.Stat_t) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list descriptors: %v", err)
	}
	n := 0
	for _, e := range ents {
		var s unix.Stat_t
		if unix.Stat("/proc/self/fd/"+e.Name(), &s) == nil && s.Dev == st.Dev && s.Ino == st.Ino {
			n++
		}
	}
	return n
}

// testAttachNotASketch attaches to descriptors that hold no sketch: each
// fails with ErrCorrupt and leaves the descriptor open.
func testAttachNotASketch(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	files := map[string]*os.File{"pipe": r, "/dev/null": devNull}
	for name, content := range map[string][]byte{
		"empty file":    nil,
		"zero file":     make([]byte, 8192),
		"garbage file":  bytes.Repeat([]byte{0xab}, 8192),
		"short garbage": []byte("not a sketch"),
	} {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		// Read-write: a read-only descriptor fails earlier, in mmap.
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[name] = f
	}
	for name, f := range files {
		c, err := OpenCountMin(Inherited(f.Fd()), CountMinConfig{})
		if !errors.Is(err, ErrCorrupt) {
			c.Close()
			t.Errorf("OpenCountMin(Inherited(%s)) error = %v, want ErrCorrupt", name, err)
		}
		if _, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil {
			t.Errorf("%s descriptor after a failed OpenCountMin(Inherited): %v", name, err)
		}
	}
	// The pipe still works.
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if b := make([]byte, 1); func() error { _, err := r.Read(b); return err }() != nil || b[0] != 'x' {
		t.Errorf("pipe unusable after a failed OpenCountMin(Inherited)")
	}
}

// TestCountMin_CgoAndPuregoProcesses runs a child with the C core and one
// with the pure-Go core at once on one file: the two must lay out, hash
// and count identically.
func TestCountMin_CgoAndPuregoProcesses(t *testing.T) {
	requireReexec(t)
	exes := map[string]string{Backend: selfExe(t)}
	dir := t.TempDir()
	for _, b := range []string{"cgo", "purego"} {
		if exes[b] == "" {
			exes[b] = buildTestBinary(t, dir, b)
		}
	}
	const nops = 40000
	path := tempPath(t, "cms")
	ctx := childContext(t)
	var specs []childSpec
	var streams [][]op
	for i, b := range []string{"cgo", "purego"} {
		specs = append(specs, childSpec{exe: exes[b], name: b + " child", role: "stream",
			env: envs(envPath, path, envChild, i, envOps, nops, envRows, 4, envWidth, 1<<16)})
		streams = append(streams, streamOps(i, nops))
	}
	start := time.Now()
	hs := startGroup(t, ctx, specs)
	truth, total, adds := truthOf(streams...)
	for _, h := range hs {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("children ran in %v", time.Since(start))
	for i, b := range []string{"cgo", "purego"} {
		if got := hs[i].value(t, "backend"); got != b {
			t.Errorf("%s reports backend %q, want %q", hs[i].name, got, b)
		}
	}
	c := mustOpen(t, path, CountMinConfig{})
	checkAgainstTruth(t, c, truth, total, adds)
	// Every core in this binary walks the grid to the same sums.
	var first []uint64
	for _, core := range countMinCores() {
		sums := make([]uint64, c.Config().Rows)
		core.RowSums(&c.l, sums)
		if first == nil {
			first = sums
		} else if !slices.Equal(sums, first) {
			t.Errorf("%s core row sums %v, want %v", core.Name(), sums, first)
		}
	}
}

// buildTestBinary builds this package's test binary with the given backend
// into dir, skipping the test when there is no toolchain (or, for cgo, no C
// compiler).
func buildTestBinary(t *testing.T, dir, backend string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			t.Skipf("no go command to build the %s test binary: not in PATH, and %s: %v", backend, goTool, err)
		}
	}
	cgo := "0"
	if backend == "cgo" {
		cgo = "1"
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		if _, err := exec.LookPath(cc); err != nil {
			t.Skipf("no C compiler (%s) to build the cgo test binary: %v", cc, err)
		}
	}
	out := filepath.Join(dir, "sketch."+backend+".test")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, goTool, "test", "-c", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=%s go test -c: %v\n%s", cgo, err, b)
	}
	t.Logf("built the %s test binary in %v", backend, time.Since(start))
	return out
}

// TestCountMin_ConcurrentGoroutines has eight goroutines add through two
// handles on one file at once.
func TestCountMin_ConcurrentGoroutines(t *testing.T) {
	const goroutines, nops = 8, 10000
	path := tempPath(t, "cms")
	handles := []*CountMin{
		mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 16}),
		mustOpen(t, path, CountMinConfig{}),
	}
	var streams [][]op
	for g := 0; g < goroutines; g++ {
		streams = append(streams, streamOps(100+g, nops))
	}
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Go(func() { errs[g] = applyOps(handles[g%2], streams[g]) })
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", g, err)
		}
	}
	truth, total, adds := truthOf(streams...)
	for _, c := range handles {
		checkAgainstTruth(t, c, truth, total, adds)
	}
}
