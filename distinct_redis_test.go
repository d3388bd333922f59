//go:build linux

package sketch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The Redis profile against a real redis-server, started by the test on a
// unix socket in a temporary directory and spoken to in RESP by the small
// client below: exports load with SET, count with PFCOUNT and merge with
// PFMERGE as Redis's own HyperLogLogs do, and their registers are those
// PFADD sets for the same keys.

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
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return &redisConn{c: c, r: bufio.NewReader(c)}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within 10s: %v", sock, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisKeys are n client keys from first, as Redis PFADD takes them.
func redisKeys(first, n int) []any {
	keys := make([]any, n)
	for i := range keys {
		keys[i] = distinctKey(first + i)
	}
	return keys
}

// TestDistinct_RedisRegisters: a Redis-profile count and Redis's PFADD of
// the same keys hold the same registers: the export is, byte for byte
// after the header, what PFMERGE makes of the PFADDed key; and Redis
// counts the export as Count does.
func TestDistinct_RedisRegisters(t *testing.T) {
	rc := startRedis(t)
	d := mustDistinct(t, DistinctConfig{Redis: true})
	const n = 30_000
	addRange(t, d, 0, n)
	for i := 0; i < n; i += 1000 {
		rc.mustDo(t, append([]any{"PFADD", "added"}, redisKeys(i, 1000)...)...)
	}
	rc.mustDo(t, "PFMERGE", "dense", "added") // PFMERGE writes the dense encoding
	dense := []byte(rc.mustDo(t, "GET", "dense").(string))
	exp, err := d.ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) != len(dense) || !bytes.Equal(exp[:5], dense[:5]) {
		t.Fatalf("export of %d bytes starting %q, Redis's dense HyperLogLog %d starting %q", len(exp), exp[:5], len(dense), dense[:5])
	}
	if !bytes.Equal(exp[redisHLLHeader:], dense[redisHLLHeader:]) {
		t.Error("the export's registers differ from those PFADD set for the same keys")
	}
	rc.mustDo(t, "SET", "exported", exp)
	got := rc.mustDo(t, "PFCOUNT", "exported").(int64)
	if want := int64(d.Count()); got != want {
		t.Errorf("PFCOUNT of the export = %d, Count() = %d", got, want)
	}
	if rel := math.Abs(float64(got)-n) / n; rel > 4*d.StdError() {
		t.Errorf("PFCOUNT of the export = %d for %d keys", got, n)
	}
	if got, want := rc.mustDo(t, "PFCOUNT", "added").(int64), int64(d.Count()); got != want {
		t.Errorf("PFCOUNT of the PFADDed key = %d, Count() = %d", got, want)
	}
}

// TestDistinct_RedisFleet: N hosts' exports (overlapping key sets),
// PFMERGEd in Redis, count what the merge of the same counts counts here,
// in both profiles (the default one with one seed across the hosts); an
// export of a frozen read-only count is the live one's.
func TestDistinct_RedisFleet(t *testing.T) {
	rc := startRedis(t)
	for _, cfg := range []DistinctConfig{{Redis: true}, {Seed: 0x5eed}} {
		const hosts = 4
		fleet := mustDistinct(t, cfg)
		keys := []any{"PFMERGE", fmt.Sprintf("fleet-%v", cfg.Redis)}
		for h := range hosts {
			d := mustIn(t, OpenDistinct, Path(filepath.Join(t.TempDir(), "host")), cfg)
			addRange(t, d, h*15_000, 25_000)
			if h == hosts-1 {
				if err := d.Freeze(); err != nil {
					t.Fatal(err)
				}
				ro := mustIn(t, OpenDistinct, Path(d.Path()), DistinctConfig{}, WithReadOnly())
				live, _ := d.ExportRedis()
				frozen, err := ro.ExportRedis()
				if err != nil || !bytes.Equal(live, frozen) {
					t.Fatalf("export of a frozen read-only copy: %v (equal to the live one's: %v)", err, bytes.Equal(live, frozen))
				}
				d = ro
			}
			exp, err := d.ExportRedis()
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("host%d-%v", h, cfg.Redis)
			rc.mustDo(t, "SET", key, exp)
			keys = append(keys, key)
			if err := fleet.Merge(d); err != nil {
				t.Fatal(err)
			}
		}
		rc.mustDo(t, keys...)
		got := rc.mustDo(t, "PFCOUNT", keys[1]).(int64)
		if want := int64(fleet.Count()); got != want {
			t.Errorf("Redis=%v: PFCOUNT of the PFMERGEd exports = %d, Count() of the merge = %d", cfg.Redis, got, want)
		}
		// PFCOUNT of several keys counts their union too.
		if got2 := rc.mustDo(t, append([]any{"PFCOUNT"}, keys[2:]...)...).(int64); got2 != got {
			t.Errorf("Redis=%v: PFCOUNT of the %d exports = %d, of their PFMERGE %d", cfg.Redis, hosts, got2, got)
		}
		const truth = 3*15_000 + 25_000
		if rel := math.Abs(float64(got)-truth) / truth; rel > 4*fleet.StdError() {
			t.Errorf("Redis=%v: fleet count %d for %d distinct keys", cfg.Redis, got, truth)
		}
		t.Logf("Redis=%v: %d distinct keys on %d hosts: PFCOUNT %d, Count %d", cfg.Redis, truth, hosts, got, fleet.Count())
	}
}

// TestDistinct_ExportRedisRefused: only Redis's 16384 registers export,
// and a closed handle does not.
func TestDistinct_ExportRedisRefused(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{Precision: 12})
	if _, err := d.ExportRedis(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ExportRedis of 2^12 registers = %v, want ErrIncompatible", err)
	}
	d14 := mustDistinct(t, DistinctConfig{})
	d14.Close()
	if _, err := d14.ExportRedis(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportRedis of a closed count = %v, want ErrClosed", err)
	}
}

// TestDistinctWindow_RedisFleet: three hosts' distinct windows, each with
// keys in two periods, export the union of their covered periods; PFCOUNT
// of one export is the host's Count, and of all three the count of the
// merge of the hosts' snapshots.
func TestDistinctWindow_RedisFleet(t *testing.T) {
	rc := startRedis(t)
	cfg := DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Redis: true}}
	fleet := mustDistinct(t, DistinctConfig{Redis: true})
	keys := []any{"PFCOUNT"}
	for h := range 3 {
		w := mustIn(t, OpenDistinctWindow, Memory(), cfg)
		addRange(t, w, h*10_000, 8_000)
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		addRange(t, w, h*10_000+5_000, 8_000)
		exp, per, err := w.ExportRedisCovered()
		if err != nil {
			t.Fatal(err)
		}
		if per != (Periods{Oldest: 0, Current: 1}) {
			t.Errorf("host %d: export covers %+v, want 0..1", h, per)
		}
		key := fmt.Sprintf("win-%d", h)
		rc.mustDo(t, "SET", key, exp)
		keys = append(keys, key)
		if got, want := rc.mustDo(t, "PFCOUNT", key).(int64), int64(w.Count()); got != want {
			t.Errorf("host %d: PFCOUNT of the export = %d, Count() = %d", h, got, want)
		}
		snap, err := w.Snapshot(Memory())
		if err != nil {
			t.Fatal(err)
		}
		if err := fleet.Merge(snap); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rc.mustDo(t, keys...).(int64), int64(fleet.Count()); got != want {
		t.Errorf("PFCOUNT of the three exports = %d, Count() of the merged snapshots = %d", got, want)
	}
}
