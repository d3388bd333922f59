//go:build linux

package sketch

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// The PostgreSQL profile and ExportPostgreSQL against a real PostgreSQL
// with the postgresql-hll extension (Debian's postgresql-15 and
// postgresql-15-hll; .ci/install-deps installs them). Each test starts
// its own server (startPostgreSQL): a cluster made by initdb in a
// temporary directory, listening on a unix socket in that directory only,
// stopped at the end. PostgreSQL refuses to run as root, so as root the
// server and its clients run as the postgres system user.

// pgBin is where Debian installs PostgreSQL 15's programs.
const pgBin = "/usr/lib/postgresql/15/bin"

// pgServer is a running server and how to reach it.
type pgServer struct {
	t    *testing.T
	dir  string              // the cluster and the socket
	cred *syscall.Credential // whom the programs run as; nil: this process's user
}

// pgMissing skips the test, or fails it under CI=true, saying how to
// install what is missing.
func pgMissing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s, and CI=true runs everything: .ci/install-deps installs postgresql-15 and postgresql-15-hll", what)
	}
	t.Skipf("%s: install PostgreSQL and its hll extension (apt-get install postgresql-15 postgresql-15-hll, or .ci/install-deps as root) to check the PostgreSQL exports", what)
}

// startPostgreSQL starts a server with the hll extension created in its
// database, and stops it when the test ends.
func startPostgreSQL(t *testing.T) *pgServer {
	t.Helper()
	for _, prog := range []string{"initdb", "postgres", "psql"} {
		if _, err := os.Stat(filepath.Join(pgBin, prog)); err != nil {
			pgMissing(t, fmt.Sprintf("%s not found (%v)", prog, err))
		}
	}
	s := &pgServer{t: t}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			pgMissing(t, fmt.Sprintf("running as root, and no postgres user to run PostgreSQL as (%v)", err))
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("the postgres user's ids: %v", err)
		}
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent is private to this user, and the
	// postgres user must reach the directory.
	dir, err := os.MkdirTemp("", "sketch-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
				t.Fatalf("the postgres user cannot reach %s: %s is not searchable by others (%v); set TMPDIR elsewhere", dir, d, err)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	if out, err := s.command(context.Background(), "initdb", "-D", filepath.Join(dir, "data"), "-U", "sketch", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := s.command(ctx, "postgres", "-D", filepath.Join(dir, "data"), "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "shared_buffers=16MB")
	// SIGINT is PostgreSQL's fast shutdown: sessions end, the server
	// writes a checkpoint and exits.
	srv.Cancel = func() error { return srv.Process.Signal(syscall.SIGINT) }
	srv.WaitDelay = 30 * time.Second // then SIGKILL
	var log bytes.Buffer
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		cancel()
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Wait()
		if t.Failed() {
			t.Logf("postgres (pid %d) output:\n%s", srv.Process.Pid, log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.try("SELECT 1")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not answer on %s within 30s: %v", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.try("CREATE EXTENSION hll"); err != nil {
		pgMissing(t, fmt.Sprintf("CREATE EXTENSION hll: %v", err))
	}
	return s
}

// command is one of PostgreSQL's programs, run as s.cred.
func (s *pgServer) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(pgBin, prog), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// try runs the script sql (COPY data inline) through psql in a session
// of its own, and returns what it printed: unaligned, tuples only.
func (s *pgServer) try(sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := s.command(ctx, "psql", "-At", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", s.dir, "-U", "sketch", "-d", "postgres", "-f", "-")
	cmd.Stdin = strings.NewReader(sql)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// query is try, failing the test on an error.
func (s *pgServer) query(sql string) string {
	s.t.Helper()
	out, err := s.try(sql)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// hllBytes decodes the text form of an hll value, \x and hex digits.
func hllBytes(t *testing.T, text string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(text, `\x`))
	if err != nil || !strings.HasPrefix(text, `\x`) {
		t.Fatalf("not an hll value: %.80q (%v)", text, err)
	}
	return b
}

// hllLiteral is an hll value as SQL: the bytes, decoded from hex and cast.
func hllLiteral(b []byte) string { return fmt.Sprintf("decode('%x', 'hex')::hll", b) }

// pgKeys is SQL that makes the temporary table keys (k text) of keys
// first .. first+n-1 of distinctKey's family, by COPY: they are ASCII,
// without tab, backslash or newline, so each line of data is its key.
func pgKeys(first, n int) string {
	var b strings.Builder
	b.WriteString("CREATE TEMP TABLE keys (k text);\nCOPY keys FROM STDIN;\n")
	for i := first; i < first+n; i++ {
		b.Write(distinctKey(i))
		b.WriteByte('\n')
	}
	b.WriteString("\\.\n")
	return b.String()
}

// pgAddAgg is hll_add_agg over the table keys, each hashed with
// hll_hash_bytea of its UTF-8 bytes, with log2m p, regwidth 5, explicit
// and sparse off: what ExportPostgreSQL writes.
func pgAddAgg(p int) string {
	return fmt.Sprintf("hll_add_agg(hll_hash_bytea(convert_to(k, 'UTF8')), %d, 5, 0, 0)", p)
}

// pgEstimateGap is how far hll_cardinality and Count of the same
// registers may be apart: half a standard error of the count, and one
// key. The two estimate the same registers with different formulas: the
// extension with linear counting while its raw estimate is under 2.5m
// (m registers) and the original HyperLogLog's harmonic mean past that,
// this count with Ertl's estimator. Just past the extension's switch, n
// between about 1.5m and 4m, its raw estimate is biased high (the bias
// HyperLogLog++ corrects) and the two can be 3 standard errors apart;
// elsewhere, over three seeds, precisions 10, 12 and 14 and n from 1 to
// 200000, they were at most 0.44 standard errors apart. The cases here
// stay out of that band: n <= 1.25m or n >= 4.3m.
func pgEstimateGap(count float64, p int) float64 {
	return 1 + 0.5*count*distinctStdError(uint(p))
}

// TestDistinct_PostgreSQLHash: hll_hash_bytea is cells.Murmur3x64, seed
// 0, as a bigint, at lengths around the 16-byte blocks.
func TestDistinct_PostgreSQLHash(t *testing.T) {
	pg := startPostgreSQL(t)
	keys := []string{"", "a", "hello", "client-1", "0123456789abcdef", "0123456789abcdef!", "The quick brown fox jumps over the lazy dog"}
	var sql strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sql, "SELECT hll_hash_bytea(convert_to('%s', 'UTF8'));\n", k)
	}
	got := strings.Split(pg.query(sql.String()), "\n")
	if len(got) != len(keys) {
		t.Fatalf("%d answers for %d keys: %q", len(got), len(keys), got)
	}
	for i, k := range keys {
		if want := strconv.FormatInt(int64(cells.Murmur3x64([]byte(k), 0)), 10); got[i] != want {
			t.Errorf("hll_hash_bytea(%q) = %s, Murmur3x64 %s", k, got[i], want)
		}
	}
}

// TestDistinct_PostgreSQLExport: the export of a PostgreSQL-profile count
// is byte for byte hll_add_agg over the same keys; hll_cardinality of the
// export is Count within pgEstimateGap; and it unions with keys hashed in
// SQL as if they had been added here.
func TestDistinct_PostgreSQLExport(t *testing.T) {
	pg := startPostgreSQL(t)
	for _, p := range []int{10, 11, 14} {
		for _, n := range []int{1, 100, 30000} {
			t.Run(fmt.Sprintf("p=%d/n=%d", p, n), func(t *testing.T) {
				d := mustDistinct(t, DistinctConfig{PostgreSQL: true, Precision: p})
				addRange(t, d, 0, n)
				exp, err := d.ExportPostgreSQL()
				if err != nil {
					t.Fatal(err)
				}
				want := hllBytes(t, pg.query(pgKeys(0, n)+"SELECT "+pgAddAgg(p)+" FROM keys;"))
				if !bytes.Equal(exp, want) {
					t.Fatalf("ExportPostgreSQL (%d bytes) is not hll_add_agg's (%d bytes):\n got %.80x\nwant %.80x", len(exp), len(want), exp, want)
				}
				card, err := strconv.ParseFloat(pg.query("SELECT hll_cardinality("+hllLiteral(exp)+")"), 64)
				if err != nil {
					t.Fatal(err)
				}
				est := d.Stats().Estimate
				if gap := pgEstimateGap(est, p); math.Abs(math.Round(card)-float64(d.Count())) > gap {
					t.Errorf("hll_cardinality = %.2f, Count() = %d: more than %.1f apart", card, d.Count(), gap)
				}
				t.Logf("%d keys: hll_cardinality %.2f, Count() %d (estimate %.2f)", n, card, d.Count(), est)

				// Keys n .. 2n-1 hashed in SQL, united with the export, are
				// the export of a count that has every key.
				union := pg.query(pgKeys(n, n) + "SELECT hll_union(" + hllLiteral(exp) + ", " + pgAddAgg(p) + ") FROM keys;")
				addRange(t, d, n, n)
				if both, _ := d.ExportPostgreSQL(); !bytes.Equal(hllBytes(t, union), both) {
					t.Error("hll_union of the export and keys added in SQL is not the export of a count of both")
				}
			})
		}
	}
}

// TestDistinct_PostgreSQLUnionAgg: hll_union_agg over four hosts'
// exports (the default profile, one seed) is the export of the Merge of
// the three counts, and its hll_cardinality their Count within
// pgEstimateGap.
func TestDistinct_PostgreSQLUnionAgg(t *testing.T) {
	pg := startPostgreSQL(t)
	const p = 12
	cfg := DistinctConfig{Precision: p, Seed: 0x5eed}
	fleet := mustDistinct(t, cfg)
	var rows []string
	for h := range 4 {
		d := mustDistinct(t, cfg)
		addRange(t, d, h*4000, 10000) // overlapping: 22000 keys in all
		exp, err := d.ExportPostgreSQL()
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, "("+hllLiteral(exp)+")")
		if err := fleet.Merge(d); err != nil {
			t.Fatal(err)
		}
	}
	out := strings.Split(pg.query("SELECT hll_union_agg(h), hll_cardinality(hll_union_agg(h)) FROM (VALUES "+strings.Join(rows, ", ")+") v(h)"), "|")
	if len(out) != 2 {
		t.Fatalf("psql printed %q", out)
	}
	want, err := fleet.ExportPostgreSQL()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hllBytes(t, out[0]), want) {
		t.Error("hll_union_agg of the hosts' exports is not the export of their Merge")
	}
	card, err := strconv.ParseFloat(out[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	if gap := pgEstimateGap(fleet.Stats().Estimate, p); math.Abs(math.Round(card)-float64(fleet.Count())) > gap {
		t.Errorf("hll_cardinality(hll_union_agg) = %.2f, Count() of the merge = %d: more than %.1f apart", card, fleet.Count(), gap)
	}
	t.Logf("22000 keys on 4 hosts: hll_cardinality of the union %.2f, Count() of the merge %d", card, fleet.Count())
}
