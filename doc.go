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
//	cms, err := sketch.OpenCountMin(sketch.Path("/dev/shm/requests.cms"), sketch.CountMinConfig{ErrorRate: 0.001})
//	if err != nil { ... }
//	defer cms.Close()
//	if seen, _ := cms.AddString(clientIP); seen > limit { ... }
//
// A [CountingBloom] answers "have I seen it at all", and can forget: m
// 4-bit counters, sized by capacity and false-positive rate. "No" is exact
// for every item added and not removed, whatever other processes do at the
// same time. Its lookups take no lock; adds take the file's shared lock and
// removes, clears, merges and freezes its exclusive one, a futex
// reader/writer lock in the file that recovers from a holder killed with
// SIGKILL within about 10 ms, by asking the kernel (an open-file-description
// lock each handle holds), never by PID (docs/DESIGN.md).
//
// A [Bloom] filter answers "have I seen it" without removal and without any
// lock: a key's bits sit in one 64-byte cache line, set with atomic ORs.
// "No" is exact; the false-positive rate at capacity is the one it was
// sized for.
//
// A [CountMinWindow] turns a Count-Min sketch over with time, in the file:
// every process computes the same current period (from the clock, or from
// a count of [CountMinWindow.Rotate] calls), adds go to it, and estimates
// sum the last Keep periods. Exactly one process clears an expired period,
// ahead of its turn, and a clearer that dies is taken over. This is the
// shared rate limiter. A [BloomWindow] does the same for a Bloom filter:
// "seen in the last Keep periods".
//
// A [Set] answers exactly, for what must not be approximate (bans,
// allowlists): a hash table of a fixed Capacity that stores its keys
// (listed by [Set.Keys]), refuses a new key when full ([ErrFull]) rather
// than evict one, and adds and removes under the file's write lock, so
// that of any number of processes adding one new key at once exactly one
// is told it is new. Its lookups take no lock. A [SetWindow] holds each
// key for the Keep periods from the one it was added in: replay detection
// within a window.
//
// A Count-Min sketch or window created with [CountMinConfig].Candidates
// also answers "who is loud": it keeps a table of its K loudest keys
// beside the counters, and [CountMin.Top] lists them with their estimates
// read from the counters now (never low) and their low ends. Adds feed the
// table without a lock: an add whose estimate passes the table's floor
// word looks for its key in two buckets of 8 ways, and only a key taken
// in takes the file's write lock (well under 1% of the adds of a skewed
// stream). A process killed while it writes a way leaves the way empty.
// This is the candidate set beside the sketch that Count-Min's authors
// describe for heavy hitters: the sketch supplies the counts, the table
// the names.
//
// A [Distinct] answers "how many distinct keys": a HyperLogLog of 2^p
// one-byte registers (16384 by default, 16 KiB) estimated with Ertl's
// improved estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", 2017), unbiased from zero keys up, within a
// relative standard error of 1.04/sqrt(2^p) (0.81% by default). A key
// raises at most one register with a CAS on its word, and registers only
// rise, so adds from any number of processes commute and a process killed
// at any instant leaves nothing to repair; Merge is the register-wise
// maximum. [Distinct.Count] is cached per handle and walks the registers
// again only after a change count in the file moved. Chosen at create,
// the Redis profile ([DistinctConfig] Redis) hashes keys as Redis's PFADD
// does, with Redis's public MurmurHash64A and seed (crafted keys can aim
// at it; the default hash is seeded and secret), and [Distinct.ExportRedis]
// writes any count of 16384 registers as Redis's dense HyperLogLog, which
// SET stores and PFMERGE and PFCOUNT merge and count: each host counts in
// shared memory, the fleet's count comes from Redis. The PostgreSQL
// profile ([DistinctConfig] PostgreSQL) hashes keys as the postgresql-hll
// extension's hll_hash_bytea does, and [Distinct.ExportPostgreSQL] writes
// any count of up to 2^17 registers as a value of the extension's hll
// type, which hll_cardinality counts and hll_union_agg unites. A
// [DistinctWindow] counts distinct keys over the last Keep periods ("distinct clients in
// the last minute"): one HyperLogLog a period on the window base the
// other windows share, its count the union of the covered periods (the
// register-wise maximum), cached until one of their registers rises or
// the period turns, and exported or snapshotted as that union.
//
// A [GCRA] answers "may this one pass" with a rate and a burst, as
// nginx's limit_req and Redis's GCRA do: per key a theoretical arrival
// time in a Count-Min-shaped grid of times, a key's time the least of its
// cells, so that a collision only makes a key look busier. A decision is
// lock-free, and racing decisions in any processes are ordered, so a key
// is never allowed more than span/interval + Burst+1 over any span of
// time. [Limits] decides a key against several limits together (rate
// limiters and Count-Min windows with their limits), counting a refused
// request in none; package httplimit answers either over HTTP.
//
// [Counters] are a small fixed set of named exact counters (requests by
// status code, by route): names fixed at create and stored in the
// structure, an add one atomic add on the counter's own cache line, by
// name or through a [Counter] resolved once, and exported to Prometheus
// as counters (the prom module). They are served in Go in both builds.
//
// Where a structure lives is one value, a [Place]: a file ([Path]), a new
// memfd for child processes ([Memfd]), a descriptor this process inherited
// ([Inherited]), memory for one process ([Memory]), or a name in an
// [Arena], which holds many named structures in one file ([Arena.Place]).
// Each kind has one constructor that takes the place and the kind's
// config: [OpenCountMin], [OpenBloom], [OpenCountingBloom],
// [OpenCountMinWindow], [OpenBloomWindow], [OpenDistinct],
// [OpenDistinctWindow], [OpenGCRA], [OpenCounters], and [OpenArena] for the arena, with an
// [ArenaConfig].
// Every process asks for the same place and config; the first to ask
// creates the structure, the rest attach. [Arena.Remove] takes a
// structure out of its arena, so that its name opens a new one with
// another config; handles open on it keep it, and its room is reused once
// no read-write one is (docs/FORMAT.md, "Removing and reusing").
//
// The methods mean the same on every kind that has them: Add, AddString
// and AddBatch count or insert; Contains, ContainsString and
// ContainsBatch ask a filter; Estimate, EstimateString and EstimateBatch
// ask for a count; Remove, Reset, Merge (of any number of others), Stats.
// What every structure shares is its [Handle]: every structure opens
// read-only ([WithReadOnly]), verifies its file ([Handle.Check]), seals for
// good ([Handle.Freeze]) to ship a copy to other hosts, where a collector
// merges copies of the same shape and seed ([CountMin.Merge],
// [Bloom.Merge], [CountingBloom.Merge], [Distinct.Merge]). To ship without
// sealing the live file, Snapshot copies a structure while every process
// keeps writing it into a new sealed one ([CountMin.Snapshot]; a window's
// snapshot is one plain structure of the periods it covers). An arena's
// [Arena.Metrics] serves every structure's stats as JSON (an expvar.Var
// and an http.Handler); the Prometheus collector is the module
// github.com/shmsketch/sketch/prom.
//
// # Files and processes
//
// A sketch lives in a file (on tmpfs such as /dev/shm for speed, or on disk
// to keep it), in a memfd handed to child processes, or behind a descriptor
// a process inherited. Every process opens the same path with the same
// config: the first creates the file, the rest attach, also when several
// processes, of one user or of several, race on a path that does not exist
// yet. A creator builds the file complete under no name, with its exact
// mode ([WithMode], default 0600) and its blocks reserved, and then links
// it at the path, so a file at a path is always complete and attaching
// takes no lock. Anything that is not a sketch file is [ErrCorrupt]. The
// format is in docs/FORMAT.md. [Inspect] reads any sketch file's header,
// directory and lock state (who holds the lock, and whether they are
// alive) without writing to it or locking it; the sketch command's
// inspect and check use it.
//
// A file owned by someone the caller has no reason to trust is refused
// ([ErrNotOwner]): whoever owns a file can rewrite it, or truncate it and
// so kill every process that maps it with SIGBUS. Trusted are the caller,
// root, users named with [WithOwner], and the owner of a private directory
// the file sits in; never a file that another user planted in a shared
// directory such as /dev/shm. Anyone who can write the file can still
// change its counters: grant write permission accordingly. The memfds the
// package creates are sealed against shrinking and growing; a descriptor
// handed over is attached only when it is such a sealed memfd or a file,
// made by a trusted user ([ErrUnsealed], [ErrNotOwner]); a file every user
// may write is refused read-write ([ErrLooseMode]), and another user's file
// with holes is refused on every route ([ErrSparse]).
//
// Each file has a random hash seed unless its config's Seed
// ([CountMinConfig.Seed], [ArenaConfig.Seed], ...) gives one, so that
// nobody who cannot read the file can craft keys that collide. The seed
// is secret: it is in no error message and not in Stats. Every
// structure's Seed method returns it ([CountMin.Seed]), to create other
// files with the same seed: structures merge only when they hash with
// one seed.
//
// An add is one atomic increment per row. A process killed part way
// through an add has counted its key in some rows and not others: that
// add, which never returned, may be missing from the key's estimate, while
// every add that returned is counted, in every process, crash or not, and
// [CountMin.Check] reports the torn add ([ErrTornAdd]). There is no lock to
// recover and nothing to repair. Counters no add, even cut short, can
// leave are damage, which Check reports as [ErrDamaged].
//
// [CountMin.Close] may run while other goroutines still use the handle:
// their calls finish on memory that stays mapped until the handle is
// unreachable, and every call after it reports [ErrClosed].
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
//   - Reset is not atomic: an estimate made during a reset may be low, and
//     an add made during it may survive in some rows only (Check names
//     that, without calling the file damaged). Rotate two sketches when
//     that matters.
//   - Counters saturate at 2^63 rather than wrap.
//   - Linux only. The package builds elsewhere and every constructor
//     returns [ErrUnsupported].
package sketch
