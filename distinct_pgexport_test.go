package sketch

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
)

// ExportPostgreSQL without a PostgreSQL: the bytes the extension returned
// for two keys, the layout against a decoder written from the storage
// specification, the cap at 31, the refusals. The test against a real
// server is distinct_postgresql_test.go.

// TestDistinct_ExportPostgreSQLKnown: keys "a" and "b" at log2m 4 give the
// bytes PostgreSQL's hll_add_agg(hll_hash_bytea(k), 4, 5, 0, 0) returned
// for them: \x14840000000000000100000040.
func TestDistinct_ExportPostgreSQLKnown(t *testing.T) {
	d := mustDistinct(t, DistinctConfig{PostgreSQL: true, Precision: 4})
	for _, k := range []string{"a", "b"} {
		if err := d.AddString(k); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ExportPostgreSQL()
	if err != nil {
		t.Fatal(err)
	}
	if want := "14840000000000000100000040"; hex.EncodeToString(got) != want {
		t.Errorf("ExportPostgreSQL = %x, want %s", got, want)
	}
}

// pgRegisters decodes a FULL hll value of regwidth 5 as the storage
// specification describes it, bit by bit, most significant first.
func pgRegisters(t *testing.T, b []byte) (log2m uint, regs []byte) {
	t.Helper()
	if len(b) < 3 || b[0] != 0x14 || b[1]>>5 != 4 || b[2] != 0 {
		t.Fatalf("header %x: want 14, regwidth 5, cutoff 00", b[:min(len(b), 3)])
	}
	log2m = uint(b[1] & 0x1f)
	m := 1 << log2m
	if len(b) != 3+(5*m+7)/8 {
		t.Fatalf("%d bytes for 2^%d registers of 5 bits", len(b), log2m)
	}
	regs = make([]byte, m)
	for j := range regs {
		for bit := 5 * j; bit < 5*j+5; bit++ {
			regs[j] = regs[j]<<1 | b[3+bit/8]>>(7-bit%8)&1
		}
	}
	return log2m, regs
}

// TestDistinct_ExportPostgreSQLLayout: every profile and several
// precisions export the count's registers, capped at 31, in the
// specification's layout.
func TestDistinct_ExportPostgreSQLLayout(t *testing.T) {
	for _, cfg := range []DistinctConfig{{Precision: 4, Seed: 5}, {Precision: 10, PostgreSQL: true}, {Redis: true}, {Precision: 17, Seed: 5}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			d := mustDistinct(t, cfg)
			addRange(t, d, 0, 5000)
			own := registersOf(d)
			own[3] = 40 // a rank past 31: the export caps it
			got, err := d.ExportPostgreSQL()
			if err != nil {
				t.Fatal(err)
			}
			p, regs := pgRegisters(t, got)
			if p != uint(d.Config().Precision) {
				t.Errorf("log2m %d, want %d", p, d.Config().Precision)
			}
			for j, r := range own {
				if want := min(r, 31); regs[j] != want {
					t.Fatalf("register %d exported as %d, want %d", j, regs[j], want)
				}
			}
		})
	}
}

// TestDistinct_ExportPostgreSQLRefuses: past 2^17 registers is
// ErrIncompatible, a damaged register ErrDamaged, a closed handle
// ErrClosed.
func TestDistinct_ExportPostgreSQLRefuses(t *testing.T) {
	if _, err := mustDistinct(t, DistinctConfig{Precision: cells.PostgreSQLMaxP + 1}).ExportPostgreSQL(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ExportPostgreSQL of 2^18 registers = %v, want ErrIncompatible", err)
	}
	d := mustDistinct(t, DistinctConfig{PostgreSQL: true, Precision: 8})
	registersOf(d)[9] = byte(64 - 8 + 2) // past the largest rank 57
	if b, err := d.ExportPostgreSQL(); !errors.Is(err, ErrDamaged) || b != nil {
		t.Errorf("ExportPostgreSQL of a damaged count = %d bytes, %v; want ErrDamaged", len(b), err)
	}
	d.Close()
	if _, err := d.ExportPostgreSQL(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportPostgreSQL after Close = %v, want ErrClosed", err)
	}
}

// TestDistinctWindow_ExportPostgreSQL: a window's export is the export
// of the union of its covered periods; a damaged covered slot is refused.
func TestDistinctWindow_ExportPostgreSQL(t *testing.T) {
	cfg := DistinctConfig{PostgreSQL: true, Precision: 10}
	w := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: cfg})
	union := mustDistinct(t, cfg)
	for round := range 3 {
		addRange(t, w, round*1000, 1500)
		if round > 0 {
			addRange(t, union, round*1000, 1500)
		}
		if round < 2 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, per, err := w.ExportPostgreSQLCovered()
	if err != nil {
		t.Fatal(err)
	}
	if per.Oldest != per.Current-1 {
		t.Errorf("the export covers %+v, want two periods", per)
	}
	if want, _ := union.ExportPostgreSQL(); !bytes.Equal(got, want) {
		t.Error("the window's export is not the export of its covered periods' union")
	}
	big := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 18}})
	if _, err := big.ExportPostgreSQL(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("a window of 2^18 registers: %v, want ErrIncompatible", err)
	}
	for s := range w.slots {
		slotRegisters(w, s)[7] = byte(64 - 10 + 2)
	}
	if b, err := w.ExportPostgreSQL(); !errors.Is(err, ErrDamaged) || b != nil {
		t.Errorf("ExportPostgreSQL of a damaged window = %d bytes, %v; want ErrDamaged", len(b), err)
	}
}
