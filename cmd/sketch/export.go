package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

var exportCmd = &command{
	name:       "export",
	opensFiles: true,
	args:       "--format redis|postgresql FILE[:NAME] [-o OUT]",
	summary:    "write a distinct count or window as Redis's HyperLogLog (SET, PFMERGE, PFCOUNT) or PostgreSQL's hll",
	details: `
Export writes a distinct count of 16384 registers (precision 14) as the
bytes of Redis's dense HyperLogLog: what SET stores under a key, after
which PFCOUNT counts it and PFMERGE merges it with other HyperLogLogs, in
Redis, Redis Cluster or Valkey. It writes to standard output, or to OUT
(made with mode 0600, replaced whole). The count may be live (each
register is read once while adds go on) or frozen; it is opened read-only.
Made with create --redis, the count hashes as PFADD does, so its export
merges with keys added in Redis too; a count of the default, seeded hash
merges in Redis with the exports of counts of the same seed only. A
distinct window exports the union of the periods it covers.

--format postgresql writes a distinct count of at most 2^17 registers as
a value of the hll type of PostgreSQL's hll extension (postgresql-hll):
FULL, regwidth 5, log2m the count's precision, explicit and sparse off,
which hll_cardinality counts and hll_union_agg unites with values of the
same log2m. Made with create --postgresql, the count hashes as
hll_hash_bytea does, and its export is what hll_add_agg(hll_hash_bytea(k),
P, 5, 0, 0) makes of the same keys; a count of the default, seeded hash
unites with the exports of counts of the same seed only.`,
	example: `sketch export --format redis /dev/shm/web.arena:clients-distinct -o clients.hll
redis-cli -x SET clients:$(hostname) < clients.hll
redis-cli PFMERGE clients:fleet clients:web1 clients:web2 && redis-cli PFCOUNT clients:fleet
sketch export --format postgresql /dev/shm/web.arena:clients-pg -o clients.pghll
psql -c "INSERT INTO clients VALUES ('$(hostname)', decode('$(xxd -p clients.pghll | tr -d '\n')', 'hex')::hll)"`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		format := fs.String("format", "", "`FORMAT` to write: redis or postgresql (required)")
		out := fs.String("o", "", "write to `OUT` instead of standard output")
		return func(args []string) error {
			if *format != "redis" && *format != "postgresql" {
				return usageError("--format is redis or postgresql")
			}
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			s, err := openTarget(t, false)
			if err != nil {
				return err
			}
			defer s.Close()
			d, ok := s.(exporter)
			if !ok {
				return fmt.Errorf("%s is a %s: only a distinct count or window exports as a Redis HyperLogLog or a PostgreSQL hll", t, s.describe())
			}
			export := d.ExportRedis
			if *format == "postgresql" {
				export = d.ExportPostgreSQL
			}
			b, err := export()
			if err != nil {
				return err
			}
			if *out == "" {
				_, err = stdout.Write(b)
				return err
			}
			return writeWhole(*out, b)
		}
	},
}

// exporter is a structure that exports as Redis's HyperLogLog and as
// PostgreSQL's hll: a distinct count, or a distinct window (the union of
// its periods).
type exporter interface {
	ExportRedis() ([]byte, error)
	ExportPostgreSQL() ([]byte, error)
}

// writeWhole writes b to path through a temporary file renamed over it,
// so that a reader never sees half an export.
func writeWhole(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
