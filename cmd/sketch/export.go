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
	args:       "--format redis FILE[:NAME] [-o OUT]",
	summary:    "write a distinct count or window as Redis's HyperLogLog, for SET, PFMERGE and PFCOUNT",
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
distinct window exports the union of the periods it covers.`,
	example: `sketch export --format redis /dev/shm/web.arena:clients-distinct -o clients.hll
redis-cli -x SET clients:$(hostname) < clients.hll
redis-cli PFMERGE clients:fleet clients:web1 clients:web2 && redis-cli PFCOUNT clients:fleet`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		format := fs.String("format", "", "`FORMAT` to write: redis (required)")
		out := fs.String("o", "", "write to `OUT` instead of standard output")
		return func(args []string) error {
			if *format != "redis" {
				return usageError("--format redis is the one format")
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
			d, ok := s.(redisExporter)
			if !ok {
				return fmt.Errorf("%s is a %s: only a distinct count or window exports as a Redis HyperLogLog", t, s.describe())
			}
			b, err := d.ExportRedis()
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

// redisExporter is a structure that exports as Redis's HyperLogLog: a
// distinct count, or a distinct window (the union of its periods).
type redisExporter interface{ ExportRedis() ([]byte, error) }

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
