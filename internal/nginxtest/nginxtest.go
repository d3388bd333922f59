// Package nginxtest starts a real nginx whose limit_req decides each
// request of a trace, so that a rate limiter can be checked against it:
// Start runs nginx as the test's child, GenerateTrace makes a seeded
// trace, and Replay sends the trace in real time and reads back nginx's
// decision and time for every request from its access log.
//
// The nginx under test is configured as
//
//	limit_req_zone $arg_k zone=z:1m rate=10r/s;
//	limit_req zone=z burst=20 nodelay;
//	limit_req_status 429;
//
// so each request's key is its k argument, the emission interval is
// Interval (100 ms) and the burst is Burst (20).
//
// # What nginx computes
//
// ngx_http_limit_req_module.c (nginx 1.22, ngx_http_limit_req_lookup)
// keeps for each key a node with last (ms) and excess (milli-requests).
// With nodelay and one zone, a request at now (ms) on a known node does
//
//	ms = now - last                        (negative ms counts as 0)
//	excess = lr->excess - rate*ms/1000 + 1000, then 0 if negative
//	refuse if excess > burst*1000          (the node is left alone)
//	otherwise lr->excess = excess; if ms != 0, lr->last = now
//
// with rate = 10000 for 10r/s (so rate*ms/1000 = 10*ms, exact), and a
// new key gets a node with excess 0 and last = now and is let through.
//
// This is the GCRA decision with T = 1000/rate s and b = burst: tat the
// key's theoretical arrival time (0 for a new key), newTat = max(tat,
// now) + T, allowed iff newTat-now <= (b+1)*T, and tat = newTat only
// when allowed. Write X = last + excess*T/1000 for the time at which the
// node would have drained to zero. The update above is X' = now +
// max(excess - (now-last)*1000/T + 1000, 0)*T/1000 = max(X+T, now), and
// GCRA's tat' - T = max(tat, now) = max((tat-T)+T, now): the same
// recurrence for X = tat - T. A new node (excess 0, last = now, X =
// now) is GCRA's new key after its first request (tat = now + T).
// nginx refuses iff X'-now > b*T, that is newTat-now > (b+1)*T, and
// neither side changes its state on a refusal. Nodes are removed only
// after 60 s idle with nothing left (ngx_http_limit_req_expire), which
// a trace shorter than a minute never reaches and which gives the same
// answer as the drained node anyway (a new node behaves like a node with
// excess 0, and 60 s drains 600 requests, more than the 21 a node can
// hold).
//
// One difference is only in the clocks: nginx decides on its monotonic
// ms clock (ngx_current_msec) while the access log's $msec is the wall
// clock, both read in the same ngx_time_update and truncated to ms each
// on its own, so a difference of two wall times can be 1 ms off the
// difference of the two monotonic ones. A model fed with the logged
// times therefore agrees with nginx exactly except on requests within
// 1 ms of a decision boundary.
package nginxtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Interval is the emission interval of the nginx under test: its rate is
// 10 requests a second.
const Interval = 100 * time.Millisecond

// Burst is the burst of the nginx under test: on top of the request
// that the rate allows, a key may spend up to Burst more at once.
const Burst = 20

// nginxExe is where Debian's nginx package puts nginx; /usr/sbin is not
// on every user's PATH.
const nginxExe = "/usr/sbin/nginx"

// Server is a real nginx started by a test on a free loopback port, with
// its configuration, logs and pid file in a temporary directory, stopped
// by its PID at the test's end.
type Server struct {
	// Addr is the host:port nginx listens on.
	Addr string
	// AccessLog is the access log: one line per limited request,
	// "i k status msec request_time" (see Replay).
	AccessLog string
	dir       string
	proc      *os.Process
	exited    chan struct{} // closed when nginx has exited and been waited for
	out       bytes.Buffer
}

// Start starts nginx for the test and waits until it answers. Without
// nginx the test skips, and fails under CI=true, which runs everything
// (.ci/install-deps installs it).
func Start(t *testing.T) *Server {
	t.Helper()
	exe, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat(nginxExe); serr != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("nginx not found (%v, nor %s), and CI=true runs everything: .ci/install-deps installs it", err, nginxExe)
			}
			t.Skipf("nginx not found (%v, nor %s): install it (apt-get install nginx, or .ci/install-deps as root) to compare with nginx's limit_req", err, nginxExe)
		}
		exe = nginxExe
	}
	s := &Server{dir: t.TempDir()}
	s.AccessLog = filepath.Join(s.dir, "access.log")
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			errlog, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
			t.Logf("nginx output:\n%s\nnginx error.log:\n%s", s.out.String(), errlog)
		}
	})
	// The free port is found by binding and closing it, so another
	// process may take it before nginx does: try a few.
	for attempt := 1; ; attempt++ {
		err := s.start(exe)
		if err == nil {
			return s
		}
		if attempt == 3 {
			t.Fatalf("start nginx: %v", err)
		}
		t.Logf("start nginx (attempt %d): %v; trying another port", attempt, err)
	}
}

// start writes the configuration for a free port, starts nginx and
// waits until it answers; on failure nginx is stopped.
func (s *Server) start(exe string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	www := filepath.Join(s.dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(www, "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		return err
	}
	conf := filepath.Join(s.dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(config(s.dir, s.Addr, os.Geteuid() == 0)), 0o644); err != nil {
		return err
	}
	s.out.Reset()
	// -e: the error log before the configuration is read (else the
	// compiled-in /var/log/nginx/error.log, not writable by every user).
	cmd := exec.Command(exe, "-p", s.dir+"/", "-c", conf, "-e", filepath.Join(s.dir, "error.log"))
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Start(); err != nil {
		return err
	}
	s.proc, s.exited = cmd.Process, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// waitReady polls nginx's unlimited, unlogged /ready location until it
// answers, nginx exits or the timeout passes.
func (s *Server) waitReady(timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get("http://" + s.Addr + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
			err = fmt.Errorf("GET /ready: %s", resp.Status)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("nginx exited before it answered on %s (last error: %v); its output: %s", s.Addr, err, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx did not answer on %s within %v: %v", s.Addr, timeout, err)
		}
	}
}

// Stop kills nginx by its PID and waits for it. It is safe to call more
// than once.
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.Kill()
		<-s.exited
		s.proc = nil
	}
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// config is nginx's configuration: one process (no master, so nothing
// to reap but nginx itself, and no worker to switch users; "user root"
// is given as root all the same, which a master would need), everything
// it writes under dir, and limit_req on /ok.txt keyed by the k argument.
// limit_req runs in the preaccess phase, after rewrite, so the limited
// location serves a file: a "return" there would answer before it.
// keepalive_requests is raised so that the replay keeps one connection.
func config(dir, addr string, root bool) string {
	user := ""
	if root {
		user = "user root;\n"
	}
	return fmt.Sprintf(`%sdaemon off;
master_process off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log notice;
events {
	worker_connections 64;
}
http {
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	log_format limitreq '$arg_i $arg_k $status $msec $request_time';
	access_log %[2]s/access.log limitreq;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	limit_req_zone $arg_k zone=z:1m rate=10r/s;
	limit_req_status 429;
	limit_req_log_level info;
	server {
		listen %[3]s;
		root %[2]s/www;
		location = /ready {
			access_log off;
			return 204;
		}
		location / {
			limit_req zone=z burst=20 nodelay;
		}
	}
}
`, user, dir, addr)
}
