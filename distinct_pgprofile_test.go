package sketch

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// The PostgreSQL profile's config: what it accepts and refuses, what
// Stats, Config and Inspect say of it, and whom it merges with. The test
// against a real PostgreSQL is distinct_postgresql_test.go.

func TestDistinctConfig_PostgreSQL(t *testing.T) {
	for _, c := range []struct {
		cfg  DistinctConfig
		want error
	}{
		{DistinctConfig{PostgreSQL: true}, nil},
		{DistinctConfig{PostgreSQL: true, Precision: 4}, nil},
		{DistinctConfig{PostgreSQL: true, Precision: 17}, nil},
		{DistinctConfig{PostgreSQL: true, Precision: 18}, ErrInvalidConfig},
		{DistinctConfig{PostgreSQL: true, Error: 0.002}, ErrInvalidConfig}, // p = 18
		{DistinctConfig{PostgreSQL: true, Redis: true}, ErrInvalidConfig},
	} {
		t.Run(fmt.Sprintf("%+v", c.cfg), func(t *testing.T) {
			d, err := OpenDistinct(Memory(), c.cfg)
			if !errors.Is(err, c.want) {
				t.Fatalf("OpenDistinct(%+v) = %v, want %v", c.cfg, err, c.want)
			}
			if err != nil {
				return
			}
			defer d.Close()
			if st := d.Stats(); !st.PostgreSQL || st.Redis {
				t.Errorf("Stats: PostgreSQL %v, Redis %v; want true, false", st.PostgreSQL, st.Redis)
			}
			if cfg := d.Config(); !cfg.PostgreSQL || cfg.Redis {
				t.Errorf("Config() = %+v, want PostgreSQL", cfg)
			}
		})
	}
}

// TestDistinct_PostgreSQLAttach: an explicit config of another profile is
// refused on attach; the zero config and the stored one attach; Inspect
// decodes the profile.
func TestDistinct_PostgreSQLAttach(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pg.hll")
	d := mustIn(t, OpenDistinct, Path(path), DistinctConfig{PostgreSQL: true, Precision: 12})
	for _, cfg := range []DistinctConfig{{Precision: 12}, {Precision: 12, Seed: 1}, {Redis: true}} {
		if o, err := OpenDistinct(Path(path), cfg); !errors.Is(err, ErrIncompatible) {
			o.Close()
			t.Errorf("OpenDistinct(%+v) on a PostgreSQL-profile count = %v, want ErrIncompatible", cfg, err)
		}
	}
	for _, cfg := range []DistinctConfig{{}, d.Config()} {
		mustIn(t, OpenDistinct, Path(path), cfg)
	}
	info, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Entries) != 1 {
		t.Fatalf("Inspect lists %d entries", len(info.Entries))
	}
	ps := info.Entries[0].Params
	if ps["postgresql"] != 1 || ps["redis"] != 0 || ps["precision"] != 12 {
		t.Errorf("Inspect params = %v, want postgresql 1, redis 0, precision 12", ps)
	}
}

// TestDistinct_PostgreSQLMerge: counts of the PostgreSQL profile merge
// with each other whatever their seeds (the hash has none), and not with
// the other profiles'.
func TestDistinct_PostgreSQLMerge(t *testing.T) {
	a := mustDistinct(t, DistinctConfig{PostgreSQL: true, Seed: 1})
	b := mustDistinct(t, DistinctConfig{PostgreSQL: true, Seed: 2})
	addRange(t, a, 0, 1000)
	addRange(t, b, 500, 1000)
	if err := a.Merge(b); err != nil {
		t.Fatalf("Merge of two PostgreSQL-profile counts: %v", err)
	}
	whole := mustDistinct(t, DistinctConfig{PostgreSQL: true})
	addRange(t, whole, 0, 1500)
	if a.Count() != whole.Count() {
		t.Errorf("merged Count() = %d, the count of every key %d", a.Count(), whole.Count())
	}
	for _, cfg := range []DistinctConfig{{Seed: 1}, {Redis: true}} {
		if err := a.Merge(mustDistinct(t, cfg)); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Merge(%+v) into a PostgreSQL-profile count = %v, want ErrIncompatible", cfg, err)
		}
	}
}

// TestDistinctWindow_PostgreSQL: a window's periods take the profile, and
// its Stats say so.
func TestDistinctWindow_PostgreSQL(t *testing.T) {
	w := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{PostgreSQL: true, Precision: 10}})
	addRange(t, w, 0, 100)
	if st := w.Stats(); !st.PostgreSQL || st.Redis {
		t.Errorf("Stats: PostgreSQL %v, Redis %v; want true, false", st.PostgreSQL, st.Redis)
	}
	if cfg := w.Config(); !cfg.Distinct.PostgreSQL {
		t.Errorf("Config() = %+v, want the PostgreSQL profile", cfg)
	}
	if _, err := OpenDistinctWindow(Memory(), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{PostgreSQL: true, Precision: 18}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a PostgreSQL-profile window of 2^18 registers: %v, want ErrInvalidConfig", err)
	}
}
