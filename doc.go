// Package sketch holds probabilistic sketches in shared memory, so that
// many processes on one host count keys in the same fixed-size structure,
// lock-free, and a crash leaves nothing to repair.
//
// A [CountMin] answers "how often have I seen this key" in memory fixed at
// creation, however many distinct keys arrive. Its estimates are never
// below the truth and, with the confidence it was sized for, above it by at
// most ErrorRate times the total of everything counted (Cormode and
// Muthukrishnan, "An Improved Data Stream Summary: The Count-Min Sketch and
// its Applications", 2005).
//
//	cms, err := sketch.OpenCountMin("/dev/shm/requests.cms", sketch.CountMinConfig{ErrorRate: 0.001})
//	if err != nil { ... }
//	defer cms.Close()
//	if seen, _ := cms.AddString(clientIP); seen > limit { ... }
//
// # Files and processes
//
// A sketch lives in a file (on tmpfs such as /dev/shm for speed, or on disk
// to keep it), in a memfd handed to child processes, or behind a descriptor
// a process inherited. Every process opens the same path with the same
// config: the first creates the file, the rest attach, also when several
// race on a path that does not exist yet. Files are created with
// O_EXCL|O_NOFOLLOW and mode 0600 unless [WithMode] says otherwise, their
// blocks reserved up front, and validated on attach; anything that is not a
// sketch file is [ErrCorrupt]. The format is in docs/FORMAT.md.
//
// Each file has a random hash seed unless [CountMinConfig].Seed is set, so
// that nobody who cannot read the file can craft keys that collide.
//
// An add is one atomic increment per row. A process killed part way through
// an add has counted its key in some rows and not others: that key may read
// a little low until it is counted again, every other key is unaffected,
// and [CountMin.Check] reports the torn add. There is no lock to recover.
//
// # Backends
//
// The same operations exist in two cores that agree bit for bit: the same
// XXH3-128 hash, the same counters, the same header, so a cgo process and
// a pure-Go process can share one file at the same moment. [Backend] says
// which one a build uses for batches ([CountMin.AddBatch],
// [CountMin.EstimateBatch]) and walks over the whole grid (Stats, Check,
// Reset): "cgo", the C core in csrc/, when built with cgo, or "purego" when
// built with CGO_ENABLED=0 or the purego tag. Single keys are served in Go
// in both builds, because a cgo crossing costs more than a whole add. A
// batch pays one crossing per 256 keys; on a sketch larger than the CPU's
// L2 cache the C core hashes and prefetches keys ahead of their adds, and
// within L2 the Go loop is as fast and serves the batch.
//
// # Caveats
//
//   - The error is relative to the total, not to the key's own count: a
//     sketch at ε = 0.001 over ten million adds is accurate to ten thousand.
//     It finds the loud; it says nothing about the quiet.
//   - It cannot list keys: it stores none. Keep candidate names beside it.
//   - There is no decrement and no conservative update: either could make an
//     estimate low when processes race, and a low answer is the one this
//     structure promises never to give.
//   - Reset is not atomic: an estimate made during a reset may be low.
//     Rotate two sketches when that matters.
//   - Counters saturate at 2^63 rather than wrap.
//   - Linux only. The package builds elsewhere and every constructor
//     returns [ErrUnsupported].
package sketch
