package sketch

// The package's test helpers, in one place (as bbolt's internal/btesting):
// keys, structures opened for a test, real files made to be broken, the
// edits that break them, the checks of what opening them says, and bounded
// waits for a lock (mustAcquire, mustBlock). Those that need Linux (a
// tmpfs, a child of the other backend) stay beside their tests, which need
// Linux too.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/xxh3"
)

// patience bounds every wait for a condition that a quiet machine meets
// in milliseconds (a lock recovered, a child started, a clear finished):
// only a hang reaches it, however loaded the machine is (make test beside
// another make test, -race, qemu). A deadline that a slow pass can reach
// fails a test that nothing is wrong with.
const patience = 2 * time.Minute

// raceScale is n operations for a test whose cost is the work it does, a
// quarter of them under -race, which slows the hot paths 10 to 50 times.
// The tests that use it run again at full size without -race in make
// test's cgo part (test-cgo's RACE_SCALED), so neither build loses them.
func raceScale(n int) int {
	if raceEnabled {
		return max(n/4, 1)
	}
	return n
}

// bloomKey is key number i of a family named prefix: "prefix-i".
func bloomKey(prefix string, i int) []byte { return []byte(fmt.Sprintf("%s-%d", prefix, i)) }

// cbfKey is bloomKey, under the name the counting filter's tests know.
func cbfKey(prefix string, i int) []byte { return bloomKey(prefix, i) }

// mustIn opens a structure with open (OpenBloom, OpenCountingBloom, ...)
// at a place for the test, failing it when that fails, and closes the
// structure when the test ends.
func mustIn[S io.Closer, C any](t testing.TB, open func(Place, C, ...Option) (S, error), at Place, cfg C, opts ...Option) S {
	t.Helper()
	s, err := open(at, cfg, opts...)
	if err != nil {
		t.Fatalf("open %T with %+v: %v", s, cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustBloom is a Bloom filter in memory for the test.
func mustBloom(t testing.TB, cfg BloomConfig) *Bloom {
	t.Helper()
	return mustIn(t, OpenBloom, Memory(), cfg)
}

// mustCBF is a counting Bloom filter in memory for the test.
func mustCBF(t testing.TB, cfg CountingBloomConfig) *CountingBloom {
	t.Helper()
	return mustIn(t, OpenCountingBloom, Memory(), cfg)
}

// mustNotPanic runs f and reports a panic as a test error.
func mustNotPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// makeWith makes a real file at a fresh path (its last element name):
// it opens a structure there with open, cfg and opts, adds keys to it with
// add, one call each, and closes it. It returns the path and the file's
// bytes.
func makeWith[S io.Closer, C any](t testing.TB, name string, open func(Place, C, ...Option) (S, error), cfg C, opts []Option,
	add func(s S, key string) error, keys ...string) (string, []byte) {
	t.Helper()
	path := tempPath(t, name)
	s, err := open(Path(path), cfg, opts...)
	if err != nil {
		t.Fatalf("open %T at %s with %+v: %v", s, path, cfg, err)
	}
	for _, k := range keys {
		if err := add(s, k); err != nil {
			s.Close()
			t.Fatalf("adding %q to %s: %v", k, path, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// otCfg is the shape of the Count-Min files the tests break: 1 x 8
// counters, which makes a 36 KiB file.
var otCfg = CountMinConfig{Rows: 1, Width: 8, Seed: 0x5eed}

// otDirOff is where a file made by this package keeps its directory.
const otDirOff = slotsOff + defaultSlots*(slotSize+tokenSize)

// otMakeFile creates a sketch file with OpenCountMin at a fresh path, counts
// a few keys, closes it and returns its path and contents.
func otMakeFile(t testing.TB, cfg CountMinConfig, opts ...Option) (string, []byte) {
	t.Helper()
	return makeWith(t, "cms", OpenCountMin, cfg, opts, func(c *CountMin, k string) error { _, err := c.AddString(k); return err }, "a", "b", "c", "a")
}

// otWriteAt overwrites part of the file at path.
func otWriteAt(t testing.TB, path string, off int64, p []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(p, off); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// otRewrite replaces the contents of the existing file at path.
func otRewrite(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// otFlip inverts the byte at off in the file at path.
func otFlip(t testing.TB, path string, b []byte, off int) {
	t.Helper()
	otWriteAt(t, path, int64(off), []byte{^b[off]})
}

// otResum rewrites the header's checksum and directory entry 0's checksum
// the way encodeHeader does, so that only the structural checks can catch
// a change to the fields they cover.
func otResum(b []byte) {
	native.PutUint64(b[offChecksum:], xxh3.Hash(b[offVersion:offChecksum]))
	if len(b) >= otDirOff+entrySize { // not when the test cut the file short
		eb := b[otDirOff:][:entrySize]
		native.PutUint64(eb[entChecksum:], entryChecksum(eb))
	}
}

// otResumAll recomputes the header checksum and the checksum of every
// directory entry in use that lies inside b, wherever the header says the
// directory is.
func otResumAll(b []byte) []byte {
	if len(b) < offDirCount+4 {
		return b
	}
	native.PutUint64(b[offChecksum:], xxh3.Hash(b[offVersion:offChecksum]))
	dirOff := uint64(native.Uint32(b[offDirOff:]))
	n := min(uint64(native.Uint32(b[offDirCount:])), maxDirEntries)
	for i := uint64(0); i < n && dirOff+(i+1)*entrySize <= uint64(len(b)); i++ {
		eb := b[dirOff+i*entrySize:][:entrySize]
		native.PutUint64(eb[entChecksum:], entryChecksum(eb))
	}
	return b
}

// otOther is the byte order opposite to this machine's.
var otOther = func() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		return binary.LittleEndian // this machine is big-endian
	}
	return binary.BigEndian
}()

type otField struct{ off, size int }

// otHeaderFields lists every word of the header, mutable part included.
var otHeaderFields = []otField{
	{offMagic, 8}, {offVersion, 4}, {offHdrSize, 4}, {offFileSize, 8},
	{offSeed, 8}, {offFlags, 8}, {offLockOff, 4}, {offLockSize, 4},
	{offSlotsOff, 4}, {offSlotsN, 4}, {offDirOff, 4}, {offDirCap, 4},
	{offDataOff, 8}, {offChecksum, 8}, {offDirCount, 4},
}

// otEntryFields lists every word of a directory entry (the name is bytes).
var otEntryFields = func() []otField {
	fs := []otField{{entKind, 4}, {entFlags, 4}, {entOff, 8}, {entSize, 8}, {entChecksum, 8}}
	for i := 0; i < 8; i++ {
		fs = append(fs, otField{entParams + 8*i, 8})
	}
	return fs
}()

func otConvertField(p []byte, size int, from, to binary.ByteOrder) {
	switch size {
	case 4:
		to.PutUint32(p, from.Uint32(p))
	case 8:
		to.PutUint64(p, from.Uint64(p))
	}
}

// otSwapHeader byte-swaps every header field of b in place, checksums
// included, without recomputing anything.
func otSwapHeader(b []byte) {
	for _, f := range otHeaderFields {
		otConvertField(b[f.off:], f.size, native, otOther)
	}
}

// otConvert returns b, a file written in byte order from, as a machine of
// byte order to would have written it: every header word, reader slot,
// directory entry word and counter converted, and the checksums recomputed
// and stored in the new order. The lock words are left alone (zero at rest).
func otConvert(b []byte, from, to binary.ByteOrder) []byte {
	b = bytes.Clone(b)
	slots := uint64(from.Uint32(b[offSlotsN:]))
	dirOff := uint64(from.Uint32(b[offDirOff:]))
	n := uint64(from.Uint32(b[offDirCount:]))
	for _, f := range otHeaderFields {
		otConvertField(b[f.off:], f.size, from, to)
	}
	for i := uint64(0); i < slots; i++ {
		otConvertField(b[slotsOff+i*slotSize:], 8, from, to)
	}
	for i := uint64(0); i < n; i++ {
		eb := b[dirOff+i*entrySize:][:entrySize]
		off, size := from.Uint64(eb[entOff:]), from.Uint64(eb[entSize:])
		for _, f := range otEntryFields {
			otConvertField(eb[f.off:], f.size, from, to)
		}
		for p := off; p+8 <= off+size; p += 8 {
			otConvertField(b[p:], 8, from, to)
		}
		to.PutUint64(eb[entChecksum:], entryChecksum(eb))
	}
	to.PutUint64(b[offChecksum:], xxh3.Hash(b[offVersion:offChecksum]))
	return b
}

// otSpecific lists the sentinels that wrap ErrCorrupt.
var otSpecific = []error{ErrByteOrder, ErrVersion, ErrChecksum, ErrInterruptedCreate}

// otOpenErr opens path and returns the error. A sketch that opens although
// the test expects an error is exercised first, so that a bad mapping shows
// as a failure rather than going unnoticed, and closed.
func otOpenErr(t testing.TB, path string, cfg CountMinConfig, opts ...Option) error {
	t.Helper()
	c, err := OpenCountMin(Path(path), cfg, opts...)
	if err == nil {
		otExercise(t, c)
		c.Close()
	}
	return err
}

// otExercise runs every read and write operation on c and returns Check's
// verdict. A panic, or a fault in Go code (turned into a panic), fails t.
func otExercise(t testing.TB, c *CountMin) (check error) {
	t.Helper()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("panic using an opened sketch: %v\n%s", r, debug.Stack())
		}
	}()
	if _, err := c.Add([]byte("x")); err != nil {
		t.Errorf("Add: %v", err)
	}
	if _, err := c.AddN([]byte("y"), 3); err != nil {
		t.Errorf("AddN: %v", err)
	}
	if _, err := c.AddString("z"); err != nil {
		t.Errorf("AddString: %v", err)
	}
	keys := [][]byte{[]byte("k0"), []byte("k1"), []byte("k2"), []byte("k3"), []byte("k4"), []byte("k5"), []byte("k6"), []byte("k7"), []byte("k8")}
	est := make([]uint64, len(keys))
	if err := c.AddBatch(keys, est); err != nil {
		t.Errorf("AddBatch: %v", err)
	}
	if err := c.EstimateBatch(keys, est); err != nil {
		t.Errorf("EstimateBatch: %v", err)
	}
	_ = c.Estimate([]byte("x"))
	_ = c.EstimateString("y")
	_ = c.Stats()
	return c.Check()
}

// otWantErr checks that err is the sentinel want (exactly ErrCorrupt, not
// one of the sentinels that wrap it, when want is ErrCorrupt), that it
// matches ErrCorrupt when want wraps it, and that it names the file.
func otWantErr(t testing.TB, err error, path string, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("OpenCountMin(%s) succeeded, want %v", path, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("OpenCountMin(%s) error = %v, want %v", path, err, want)
	}
	if errors.Is(want, ErrCorrupt) && !errors.Is(err, ErrCorrupt) {
		t.Errorf("error %v does not match ErrCorrupt", err)
	}
	if want == ErrCorrupt {
		for _, s := range otSpecific {
			if errors.Is(err, s) {
				t.Errorf("error = %v, want plain ErrCorrupt, not %v", err, s)
			}
		}
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file %s", err, path)
	}
}

func otMode(t testing.TB, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// otWorks checks that c counts, estimates and passes Check.
func otWorks(t testing.TB, c *CountMin) {
	t.Helper()
	before := c.EstimateString("otWorks")
	if got, err := c.AddString("otWorks"); err != nil || got < before+1 {
		t.Errorf("AddString = %d, %v, want >= %d", got, err, before+1)
	}
	if got := c.EstimateString("otWorks"); got < before+1 {
		t.Errorf("EstimateString = %d, want >= %d", got, before+1)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}

// mustOpenArena opens the arena at path for the test, closed at its end.
func mustOpenArena(t testing.TB, path string, size int64, opts ...Option) *Arena {
	t.Helper()
	a, err := OpenArena(Path(path), ArenaConfig{Size: size}, opts...)
	if err != nil {
		t.Fatalf("OpenArena(%s, ArenaConfig{Size: %d}): %v", path, size, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// mustInspect is Inspect(path), failing the test when it fails.
func mustInspect(t *testing.T, path string) FileInfo {
	t.Helper()
	fi, err := Inspect(path)
	if err != nil {
		t.Fatalf("Inspect(%s): %v", path, err)
	}
	return fi
}

// mustAcquire takes the lock in a goroutine and fails unless it is held
// within limit; it returns how long it took.
func mustAcquire[F func() | func() error](t *testing.T, take F, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { callTake(t, take); close(done) }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("the lock was not taken within %v", limit)
		return 0
	}
}

// callTake calls a lock's take, failing the test when it returns an error.
func callTake[F func() | func() error](t *testing.T, take F) {
	switch f := any(take).(type) {
	case func():
		f()
	case func() error:
		if err := f(); err != nil {
			t.Errorf("taking the lock: %v", err)
		}
	}
}

// mustBlock starts take in a goroutine and fails if it returns within
// wait; it returns a channel closed when take has returned.
func mustBlock[F func() | func() error](t *testing.T, take F, wait time.Duration) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() { callTake(t, take); close(done) }()
	select {
	case <-done:
		t.Fatalf("the lock was taken while another process held it")
	case <-time.After(wait):
	}
	return done
}

// A real redis-server for the tests of exports (Distinct.ExportRedis and
// MergeRedis, Bloom.ExportBits and MergeBits), started on a unix socket in
// a temporary directory and spoken to in RESP by the small client below.

// redisConn is a RESP client of one connection: enough for SET, GET,
// PFADD, PFMERGE and PFCOUNT.
type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

// do sends one command and returns its reply: a string, an int64, nil, or
// an error for Redis's error replies.
func (rc *redisConn) do(args ...any) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		var s []byte
		switch a := a.(type) {
		case []byte:
			s = a
		case string:
			s = []byte(a)
		default:
			s = fmt.Append(nil, a)
		}
		fmt.Fprintf(&b, "$%d\r\n", len(s))
		b.Write(s)
		b.WriteString("\r\n")
	}
	rc.c.SetDeadline(time.Now().Add(patience))
	if _, err := rc.c.Write(b.Bytes()); err != nil {
		return nil, err
	}
	return rc.reply()
}

func (rc *redisConn) reply() (any, error) {
	line, err := rc.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short RESP line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	}
	return nil, fmt.Errorf("RESP reply %q not understood", line)
}

// mustDo is do, failing the test on an error.
func (rc *redisConn) mustDo(t testing.TB, args ...any) any {
	t.Helper()
	v, err := rc.do(args...)
	if err != nil {
		t.Fatalf("redis %v: %v", args[0], err)
	}
	return v
}

// startRedis starts redis-server on a unix socket for the test and
// connects to it. Without redis-server the test skips, and fails under
// CI=true, which runs everything (.ci/install-deps installs it).
func startRedis(t *testing.T) *redisConn {
	t.Helper()
	exe, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (%v), and CI=true runs everything: .ci/install-deps installs it", err)
		}
		t.Skipf("redis-server not found (%v): install it (apt-get install redis-server, or .ci/install-deps as root) to check exports against Redis", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exe, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(patience)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return &redisConn{c: c, r: bufio.NewReader(c)}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within %v: %v", sock, patience, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// periodsOf lists the periods of a window's export.
func periodsOf(ps []WindowPeriod) []uint64 {
	var out []uint64
	for _, p := range ps {
		out = append(out, p.Period)
	}
	return out
}
