package sketch_test

import (
	"fmt"
	"log"

	"github.com/shmsketch/sketch"
)

// A count of the PostgreSQL profile exports the hll value that
// PostgreSQL's hll_add_agg(hll_hash_bytea(k), 4, 5, 0, 0) builds from the
// same keys: three header bytes (version 1 FULL; regwidth 5, log2m 4;
// explicit and sparse off), then 16 registers of 5 bits. In psql,
// SELECT hll_cardinality('\x1484...'::hll) counts it.
func ExampleDistinct_ExportPostgreSQL() {
	d, err := sketch.OpenDistinct(sketch.Memory(), sketch.DistinctConfig{PostgreSQL: true, Precision: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.AddString("a")
	d.AddString("b")
	b, err := d.ExportPostgreSQL()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes, header %x\n", len(b), b[:3])
	fmt.Printf("\\x%x\n", b)
	// Output:
	// 13 bytes, header 148400
	// \x14840000000000000100000040
}
