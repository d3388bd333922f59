package sketch_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// Every process opens the same path: the first creates the sketch, the
// rest attach, and all of them count into the same counters.
func ExampleOpenCountMin() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	cms, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "requests.cms")), sketch.CountMinConfig{
		ErrorRate:  0.001, // estimates within 0.1% of the total...
		Confidence: 0.99,  // ...with 99% probability
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()

	for _, ip := range []string{"192.0.2.1", "192.0.2.7", "192.0.2.1"} {
		seen, err := cms.AddString(ip)
		if err != nil {
			log.Fatal(err)
		}
		if seen > 1 {
			fmt.Printf("%s seen %d times\n", ip, seen)
		}
	}
	fmt.Println("192.0.2.7:", cms.EstimateString("192.0.2.7"))
	fmt.Printf("shape: %d x %d\n", cms.Config().Rows, cms.Config().Width)
	// Output:
	// 192.0.2.1 seen 2 times
	// 192.0.2.7: 1
	// shape: 5 x 4096
}

// An estimate is quoted with its error bar: it is never low, and high by at
// most ErrorBound with the sketch's confidence.
func ExampleCountMin_Stats() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	cms, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "clients.cms")), sketch.CountMinConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()

	for i := 0; i < 100_000; i++ {
		cms.AddString(fmt.Sprintf("client-%d", i%1000))
	}
	cms.AddN([]byte("client-loud"), 50_000)

	s := cms.Stats()
	n := cms.EstimateString("client-loud")
	fmt.Printf("total %d, error bound %d\n", s.Total, s.ErrorBound)
	fmt.Printf("client-loud: between %d and %d\n", n-min(n, s.ErrorBound), n)
	// Output:
	// total 150000, error bound 100
	// client-loud: between 49900 and 50000
}

// A memfd-backed sketch lives in no directory: hand its descriptor to a
// child process with exec.Cmd.ExtraFiles, where it appears as fd 3, and
// attach there with sketch.OpenCountMin(sketch.Inherited(3), sketch.CountMinConfig{}).
func ExampleMemfd() {
	cms, err := sketch.OpenCountMin(sketch.Memfd("requests"), sketch.CountMinConfig{Rows: 4, Width: 1024})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()

	f, err := cms.File() // for cmd.ExtraFiles = []*os.File{f}
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	// Attaching through a descriptor is what the child does.
	other, err := sketch.OpenCountMin(sketch.Inherited(f.Fd()), sketch.CountMinConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	other.AddString("from the child")
	fmt.Println(cms.EstimateString("from the child"))
	// Output:
	// 1
}

// SuggestCountMin shows the shape a sizing gives before anything is created.
func ExampleSuggestCountMin() {
	rows, width := sketch.SuggestCountMin(0.001, 0.99)
	fmt.Printf("%d rows x %d counters = %d KiB\n", rows, width, rows*width*8/1024)
	// Output:
	// 5 rows x 4096 counters = 160 KiB
}

// A batch counts many keys in one call, and can return each key's estimate
// right after its add.
func ExampleCountMin_AddBatch() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	cms, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "paths.cms")), sketch.CountMinConfig{Rows: 4, Width: 1 << 16})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()

	keys := [][]byte{[]byte("/login"), []byte("/api/v2/users"), []byte("/login")}
	est := make([]uint64, len(keys))
	if err := cms.AddBatch(keys, est); err != nil {
		log.Fatal(err)
	}
	fmt.Println(est)
	fmt.Println(cms.Stats().Adds)
	// Output:
	// [1 1 2]
	// 3
}

// A counting Bloom filter shared by every process that opens the file: add,
// test and remove items; "no" is exact.
func ExampleOpenCountingBloom() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	seen, err := sketch.OpenCountingBloom(sketch.Path(filepath.Join(dir, "tokens.cbf")), sketch.CountingBloomConfig{
		Capacity: 10_000, // items held at once
		FPRate:   0.001,  // false-positive rate at that load
	})
	if err != nil {
		log.Fatal(err)
	}
	defer seen.Close()

	already, _ := seen.AddString("token-1")
	fmt.Println("already:", already)
	already, _ = seen.AddString("token-1")
	fmt.Println("already the second time:", already, "count:", seen.EstimateString("token-1"))
	seen.RemoveString("token-1")
	fmt.Println("after one remove:", seen.ContainsString("token-1"))
	seen.RemoveString("token-1")
	fmt.Println("after two:", seen.ContainsString("token-1"))
	st := seen.Stats()
	fmt.Printf("%d counters, %d hashes\n", st.Counters, st.Hashes)
	// Output:
	// already: false
	// already the second time: true count: 2
	// after one remove: true
	// after two: false
	// 262144 counters, 10 hashes
}

// Freeze seals a file for good; read-only views, here or on a copy shipped
// to another host, read it without any lock.
func ExampleCountingBloom_Freeze() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "known.cbf")

	known, err := sketch.OpenCountingBloom(sketch.Path(path), sketch.CountingBloomConfig{Capacity: 1000})
	if err != nil {
		log.Fatal(err)
	}
	known.AddBatch([][]byte{[]byte("alice"), []byte("bob")}, nil)
	if err := known.Freeze(); err != nil {
		log.Fatal(err)
	}
	_, err = known.AddString("carol")
	fmt.Println("add after freeze:", errors.Is(err, sketch.ErrFrozen))
	known.Close()

	ro, err := sketch.OpenCountingBloom(sketch.Path(path), sketch.CountingBloomConfig{}, sketch.WithReadOnly())
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	fmt.Println("alice:", ro.ContainsString("alice"), "frozen:", ro.Frozen())
	// Output:
	// add after freeze: true
	// alice: true frozen: true
}

// An in-memory sketch serves one process's goroutines, and unit tests on
// any system.
func ExampleMemory() {
	cms, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1024})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()
	cms.AddN([]byte("k"), 3)
	fmt.Println(cms.Estimate([]byte("k")))
	// Output: 3
}

// StatsVar publishes a sketch's Stats on /debug/vars (expvar) in one line.
func ExampleCountMin_StatsVar() {
	cms, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer cms.Close()
	cms.AddN([]byte("k"), 3)

	// expvar.Publish("requests", cms.StatsVar()) serves this at /debug/vars:
	fmt.Println(cms.StatsVar())
	// Output:
	// {"rows":2,"width":8,"total":3,"adds":3,"error_bound":2,"error_rate":0.33978522855738064,"confidence":0.8646647167633873,"bytes":36864,"frozen":false,"read_only":false,"closed":false}
}

// A gateway keeps its structures in one arena: every worker opens the
// same file and asks for each structure by name; the first to ask creates
// it, the rest attach.
func ExampleOpenArena() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)

	arena, err := sketch.OpenArena(sketch.Path(filepath.Join(dir, "gateway.arena")), sketch.ArenaConfig{Size: 16 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Close()
	clients, err := sketch.OpenCountMin(arena.Place("requests-per-client"), sketch.CountMinConfig{ErrorRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	defer clients.Close()
	banned, err := sketch.OpenCountingBloom(arena.Place("banned-keys"), sketch.CountingBloomConfig{Capacity: 10_000})
	if err != nil {
		log.Fatal(err)
	}
	defer banned.Close()

	clients.AddString("192.0.2.1")
	banned.AddString("key-123")
	for _, e := range arena.List() {
		fmt.Printf("%s: %s, %d bytes\n", e.Name, e.Kind, e.Bytes)
	}
	fmt.Println("key-123 banned:", banned.ContainsString("key-123"))
	// Output:
	// requests-per-client: countmin, 167936 bytes
	// banned-keys: countingbloom, 69632 bytes
	// key-123 banned: true
}

// Remove takes a sketch file away from its path, as the handle's Unlink
// does, but by path: a deploy script that retires yesterday's file needs
// no handle, and a file that is not a sketch is left alone.
func ExampleRemove() {
	dir, _ := os.MkdirTemp("", "sketch-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "yesterday.bloom")

	b, err := sketch.OpenBloom(sketch.Path(path), sketch.BloomConfig{Capacity: 1000})
	if err != nil {
		log.Fatal(err)
	}
	b.AddString("alice")
	if err := sketch.Remove(path); err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(path)
	fmt.Println("file gone:", errors.Is(err, os.ErrNotExist))
	fmt.Println("handle still answers:", b.ContainsString("alice"))
	b.Close()

	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a sketch"), 0o600)
	err = sketch.Remove(notes)
	fmt.Println("notes.txt refused:", errors.Is(err, sketch.ErrCorrupt))
	// Output:
	// file gone: true
	// handle still answers: true
	// notes.txt refused: true
}
