// Package redistest starts a real redis-server for the fleet's tests.
package redistest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a real redis-server started by a test on a unix socket in
// a temporary directory, stopped by its PID at the test's end.
type Server struct {
	// Sock is the server's unix socket.
	Sock     string
	exe, dir string
	cmd      *exec.Cmd
	out      bytes.Buffer
}

// Start starts redis-server for the test. Without it the test skips,
// and fails under CI=true, which runs everything (.ci/install-deps
// installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	exe := serverPath(t)
	dir := t.TempDir()
	s := &Server{exe: exe, dir: dir, Sock: filepath.Join(dir, "redis.sock")}
	s.Start(t)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", s.out.String())
		}
	})
	return s
}

// serverPath finds redis-server. Without it the test skips, and fails
// under CI=true, which runs everything (.ci/install-deps installs it).
func serverPath(t testing.TB) string {
	t.Helper()
	exe, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (%v), and CI=true runs everything: .ci/install-deps installs it", err)
		}
		t.Skipf("redis-server not found (%v): install it (apt-get install redis-server, or .ci/install-deps as root) to test the fleet", err)
	}
	return exe
}

// Start starts the server (again, after stop: empty, as after a restart
// that lost its data) and waits until it answers.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(s.exe, "--port", "0", "--unixsocket", s.Sock, "--unixsocketperm", "700",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--daemonize", "no")
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	c := s.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer on %s within 30s", s.Sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server by its PID and waits for it.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// IOTimeout is how long the tests' clients wait for a read or a write:
// go-redis's default, 3 s, would cut short the agents' generous Timeout on
// a loaded machine. A context's earlier deadline still bounds a call.
const IOTimeout = time.Minute

// Client is a client of the server, closed at the test's end; its reads
// and writes wait up to IOTimeout.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: s.Sock, MaxRetries: -1, DialTimeout: 5 * time.Second,
		ReadTimeout: IOTimeout, WriteTimeout: IOTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}
