//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
)

type cmsAnswerJSON struct {
	Key      string `json:"key"`
	Base64   []byte `json:"key_base64"`
	Estimate uint64 `json:"estimate"`
	Low      uint64 `json:"low"`
}

type cbfAnswerJSON struct {
	Key     string `json:"key"`
	Count   uint64 `json:"count"`
	Present bool   `json:"present"`
}

type statsOut[S any] struct {
	File       string `json:"file"`
	Structures []struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		Description string `json:"description"`
		Stats       S      `json:"stats"`
	} `json:"structures"`
}

func cmsStats(t *testing.T, path string) sketch.CountMinStats {
	t.Helper()
	var s statsOut[sketch.CountMinStats]
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats --json"), &s)
	if len(s.Structures) != 1 || s.File != path || s.Structures[0].Kind != "countmin" {
		t.Fatalf("stats --json: %+v", s)
	}
	return s.Structures[0].Stats
}

func TestCreate(t *testing.T) {
	var c struct {
		File        string               `json:"file"`
		Kind        string               `json:"kind"`
		Description string               `json:"description"`
		Bytes       uint64               `json:"bytes"`
		Stats       sketch.CountMinStats `json:"stats"`
	}
	path := t.TempDir() + "/c.cms"
	decode(t, sk(t, "create", path, "--error", "0.0002", "--confidence", "0.999", "--mode", "0640", "--json").ok(t, "create"), &c)
	rows, width := sketch.SuggestCountMin(0.0002, 0.999)
	if c.File != path || c.Kind != "countmin" || c.Stats.Rows != rows || c.Stats.Width != width || c.Bytes != c.Stats.Bytes {
		t.Errorf("create --json = %+v, want a %d x %d Count-Min", c, rows, width)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 || uint64(st.Size()) != c.Bytes {
		t.Errorf("the file: %v, %v; want mode 0640 and %d bytes", st.Mode(), err, c.Bytes)
	}
	// It refuses an existing file, and leaves it alone.
	if r := sk(t, "create", path, "--rows", "2", "--width", "64"); r.code != 1 || !strings.Contains(r.stderr, path) {
		t.Errorf("create over an existing file: exit %d, %q", r.code, r.stderr)
	}
	if cmsStats(t, path).Rows != rows {
		t.Error("create over an existing file changed it")
	}

	out := sk(t, "create", path+".2", "--rows", "3", "--width", "1000").ok(t, "create --rows --width")
	if !strings.Contains(out, "3 x 1024 counters") || !strings.Contains(out, "of the total") {
		t.Errorf("create --rows 3 --width 1000: %q", out)
	}

	var b struct {
		File        string                    `json:"file"`
		Kind        string                    `json:"kind"`
		Description string                    `json:"description"`
		Bytes       uint64                    `json:"bytes"`
		Stats       sketch.CountingBloomStats `json:"stats"`
	}
	decode(t, sk(t, "create", path+".cbf", "--kind", "countingbloom", "--capacity", "100000", "--fp-rate", "0.001", "--json").ok(t, "create cbf"), &b)
	if b.Kind != "countingbloom" || b.Stats.Capacity != 100000 || b.Stats.FPRate != 0.001 || b.Stats.Hashes != 10 {
		t.Errorf("create --kind countingbloom --json = %+v", b)
	}
	out = sk(t, "create", path+".cbf2", "--kind", "countingbloom", "--capacity", "1000").ok(t, "create cbf")
	if !strings.Contains(out, "false positives about 1% at 1000 items") {
		t.Errorf("create countingbloom: %q", out)
	}
	// A bad config is the library's refusal of a bad argument: exit 2,
	// naming the file (TestCreate_BadConfig).
	if r := sk(t, "create", path+".3", "--error", "2"); r.code != 2 || !strings.Contains(r.stderr, path+".3") {
		t.Errorf("create --error 2: exit %d, %q", r.code, r.stderr)
	}
}

// stream is a skewed stream of keys: key i appears about n/(i+1) times.
func stream(n, keys int, seed uint64) ([]string, map[string]uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 1, uint64(keys-1))
	lines := make([]string, n)
	truth := map[string]uint64{}
	for i := range lines {
		k := "client-" + strconv.FormatUint(z.Uint64(), 10)
		lines[i] = k
		truth[k]++
	}
	return lines, truth
}

// TestAdd_PipeMillion pipes a million keys through add and checks the
// total and every key's estimate against the exact counts.
func TestAdd_PipeMillion(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "65536", "--seed-file", seedFile(t, "7"))
	const n = 1_000_000
	lines, truth := stream(n, 5000, 1)
	input := strings.Join(lines, "\n") + "\n"
	var sum struct {
		File          string  `json:"file"`
		Keys          uint64  `json:"keys"`
		Total         uint64  `json:"total"`
		Seconds       float64 `json:"seconds"`
		KeysPerSecond float64 `json:"keys_per_second"`
	}
	r := skIn(t, strings.NewReader(input), "add", "--json", path)
	decode(t, r.ok(t, "add from a pipe"), &sum)
	if sum.Keys != n || sum.Total != n || sum.File != path {
		t.Fatalf("add --json = %+v, want %d keys", sum, n)
	}
	if r.stderr != "" {
		t.Errorf("add wrote to standard error, which is not a terminal: %q", r.stderr)
	}
	t.Logf("%d keys in %.2fs: %.0f keys/s", sum.Keys, sum.Seconds, sum.KeysPerSecond)
	st := cmsStats(t, path)
	if st.Total != n || st.Adds != n {
		t.Errorf("stats: total %d, adds %d; want %d", st.Total, st.Adds, n)
	}
	checkEstimates(t, path, truth, st.ErrorBound)
}

// checkEstimates queries every key of truth through standard input and
// checks that none is low, every one is within the error bar, and the
// bar is what stats reports.
func checkEstimates(t *testing.T, path string, truth map[string]uint64, bound uint64) {
	t.Helper()
	var keys []string
	for k := range truth {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	r := skIn(t, strings.NewReader(strings.Join(keys, "\n")), "query", "--json", path)
	answers := decodeLines[cmsAnswerJSON](t, r.ok(t, "query from standard input"))
	if len(answers) != len(keys) {
		t.Fatalf("query: %d answers for %d keys", len(answers), len(keys))
	}
	over := 0
	for i, a := range answers {
		want := truth[keys[i]]
		switch {
		case a.Key != keys[i]:
			t.Fatalf("answer %d is for %q, want %q", i, a.Key, keys[i])
		case a.Estimate < want:
			t.Errorf("Estimate(%q) = %d, want >= %d", a.Key, a.Estimate, want)
		case a.Low != a.Estimate-min(a.Estimate, bound):
			t.Errorf("%q: low %d, want estimate %d - bound %d", a.Key, a.Low, a.Estimate, bound)
		case a.Estimate > want:
			over++
		}
	}
	// Fixed seed and a wide grid: collisions in every row are rare.
	if over > len(keys)/100 {
		t.Errorf("%d of %d estimates are above the truth", over, len(keys))
	}
}

func TestAdd_ArgsAndWeighted(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "4096")
	out := sk(t, "add", path, "alpha", "beta", "alpha").ok(t, "add KEY...")
	if out != "alpha\t1\tbetween 0 and 1\nbeta\t1\tbetween 0 and 1\nalpha\t2\tbetween 1 and 2\n" {
		t.Errorf("add alpha beta alpha printed %q", out)
	}
	answers := decodeLines[cmsAnswerJSON](t, sk(t, "add", "-n", "40", "--json", path, "alpha").ok(t, "add -n 40"))
	if len(answers) != 1 || !cmp.Equal(answers[0], cmsAnswerJSON{Key: "alpha", Estimate: 42, Low: 42 - 1}) {
		t.Errorf("add -n 40 --json alpha = %+v, want estimate 42 with bound 1", answers)
	}
	// Weighted lines, a key with a tab in it, CRLF endings and empty lines.
	in := "gamma\t1000\r\n\nweird\tkey\t3\n\ndelta\t1\n"
	out = skIn(t, strings.NewReader(in), "add", "--weighted", path).ok(t, "add --weighted")
	if !strings.HasPrefix(out, "added 3 keys to "+path) {
		t.Errorf("add --weighted: %q", out)
	}
	truth := map[string]uint64{"alpha": 42, "beta": 1, "gamma": 1000, "weird\tkey": 3, "delta": 1}
	checkEstimates(t, path, map[string]uint64{"alpha": 42, "beta": 1, "gamma": 1000, "delta": 1}, cmsStats(t, path).ErrorBound)
	if st := cmsStats(t, path); st.Total != 1047 {
		t.Errorf("total %d, want %d", st.Total, 1047)
	}
	out = sk(t, "query", path, "weird\tkey").ok(t, "query")
	if !strings.HasPrefix(out, fmt.Sprintf("%q\t%d\t", "weird\tkey", truth["weird\tkey"])) {
		t.Errorf("query of a key with a tab: %q, want it quoted", out)
	}
	// A bad weighted line fails, naming the line.
	r := skIn(t, strings.NewReader("a\t1\nb\n"), "add", "--weighted", path)
	if r.code != 1 || !strings.Contains(r.stderr, "line 2") {
		t.Errorf("add --weighted with a bad line: exit %d, %q", r.code, r.stderr)
	}
	// "-" reads standard input, for add and query (and its old name).
	skIn(t, strings.NewReader("beta\n"), "add", path, "-").ok(t, "add -")
	for _, cmd := range []string{"query", "estimate"} {
		out = skIn(t, strings.NewReader("beta\n"), cmd, path, "-").ok(t, cmd+" -")
		if !strings.HasPrefix(out, "beta\t2\t") {
			t.Errorf("%s FILE - with beta on standard input: %q", cmd, out)
		}
	}
	// A key longer than the reader's buffer.
	long := strings.Repeat("x", 3<<20)
	skIn(t, strings.NewReader(long+"\n"), "add", path).ok(t, "add a long key")
	if out := skIn(t, strings.NewReader(long), "query", path).ok(t, "query a long key"); !strings.HasPrefix(out, long+"\t1\t") {
		t.Errorf("query of a 3 MiB key: %.40q...", out[len(long):])
	}
}

func TestCountingBloom_AddQuery(t *testing.T) {
	path := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "10000", "--seed-file", seedFile(t, "3"))
	out := sk(t, "add", path, "k1", "k1", "k2").ok(t, "add")
	if out != "k1\t1\nk1\t2\nk2\t1\n" {
		t.Errorf("add k1 k1 k2 printed %q", out)
	}
	lines, truth := stream(20000, 500, 2)
	skIn(t, strings.NewReader(strings.Join(lines, "\n")), "add", path).ok(t, "add from a pipe")
	skIn(t, strings.NewReader("w\t20\nv\t3\n"), "add", "--weighted", path).ok(t, "add --weighted")
	truth["k1"], truth["k2"], truth["w"], truth["v"] = 2, 1, 15, 3 // counters stick at 15
	var keys []string
	for k := range truth {
		keys = append(keys, k)
	}
	keys = append(keys, "absent-1", "absent-2")
	answers := decodeLines[cbfAnswerJSON](t, skIn(t, strings.NewReader(strings.Join(keys, "\n")), "query", "--json", path).ok(t, "query"))
	wrong := 0
	for i, a := range answers {
		want := min(truth[keys[i]], 15)
		if a.Key != keys[i] || uint64(a.Count) < want || a.Present != (a.Count > 0) {
			t.Errorf("query %q: %+v, want count >= %d", keys[i], a, want)
		}
		if uint64(a.Count) != want {
			wrong++
		}
	}
	if wrong > 2 {
		t.Errorf("%d of %d counts are above the truth", wrong, len(keys))
	}
	var s statsOut[sketch.CountingBloomStats]
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats"), &s)
	if st := s.Structures[0].Stats; st.Capacity != 10000 || st.Adds == 0 || st.Set == 0 || !st.ReadOnly {
		t.Errorf("stats --json: %+v", st)
	}
}

func TestQuery_Top(t *testing.T) {
	for _, kind := range []string{"countmin", "countingbloom"} {
		t.Run(kind, func(t *testing.T) {
			args := []string{"--kind", kind, "--seed-file", seedFile(t, "11")}
			if kind == "countingbloom" {
				args = append(args, "--capacity", "1000")
			}
			path := create(t, "s", args...)
			var in strings.Builder
			for i := 0; i < 20; i++ {
				fmt.Fprintf(&in, "key-%d\t%d\n", i, i/2+1) // key-19 and key-18 are the loudest, then key-17 and key-16
			}
			skIn(t, strings.NewReader(in.String()), "add", "--weighted", path).ok(t, "add")
			// Candidates with repeats and keys never added.
			cands := "key-3\nkey-19\nnever\nkey-18\nkey-17\nkey-19\nkey-16\nkey-0\n"
			out := skIn(t, strings.NewReader(cands), "query", "--top", "3", path).ok(t, "query --top")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
			if want := "key-18 key-19 key-16"; strings.Join(got, " ") != want {
				t.Errorf("query --top 3: %q, want %s (loudest first, ties in key order)", out, want)
			}
		})
	}
}

// TestStats_Text: the table has every field, aligned.
func TestStats_Text(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "1024")
	sk(t, "add", "-n", "41", path, "alpha").ok(t, "add")
	out := sk(t, "stats", path).ok(t, "stats")
	for _, want := range []string{"shape        4 x 1024 counters\n", "total        41\n", "adds         41\n", "error bound  1 ", "frozen       no\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats: no %q in\n%s", want, out)
		}
	}
}

// tearAdd is tearAddAt of a standalone file's sketch.
func tearAdd(t *testing.T, path string) {
	t.Helper()
	tearAddAt(t, path, 0)
}

type checkOut struct {
	File     string   `json:"file"`
	Status   string   `json:"status"`
	Findings []string `json:"findings"`
	ExitCode int      `json:"exit_code"`
}

func TestCheck(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "1024")
	sk(t, "add", "-n", "5", path, "alpha").ok(t, "add")
	if out := sk(t, "check", path).ok(t, "check"); !strings.HasSuffix(out, "\nok\n") {
		t.Errorf("check of a sound file: %q", out)
	}
	var c checkOut
	decode(t, sk(t, "check", "--json", path).stdout, &c)
	if c.Status != "ok" || c.ExitCode != 0 || len(c.Findings) != 0 {
		t.Errorf("check --json of a sound file: %+v", c)
	}

	tearAdd(t, path)
	r := sk(t, "check", path)
	if r.code != 3 || !strings.Contains(r.stdout, "torn add") {
		t.Errorf("check of a torn add: exit %d, %q", r.code, r.stdout)
	}
	r = sk(t, "check", "--json", path)
	decode(t, r.stdout, &c)
	if r.code != 3 || c.Status != "interrupted" || c.ExitCode != 3 || len(c.Findings) != 1 {
		t.Errorf("check --json of a torn add: exit %d, %+v", r.code, c)
	}
	// A reset clears the finding.
	sk(t, "reset", path).ok(t, "reset")
	sk(t, "check", path).ok(t, "check after reset")

	// Damage is 1, JSON or not.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte{1}, 40) // the lock region's offset, under the checksum
	f.Close()
	r = sk(t, "check", "--json", path)
	decode(t, r.stdout, &c)
	if r.code != 1 || c.Status != "corrupt" || c.ExitCode != 1 || !strings.Contains(r.stderr, path) {
		t.Errorf("check --json of a corrupt file: exit %d, %+v, stderr %q", r.code, c, r.stderr)
	}

	// A counting Bloom filter whose lock a dead writer holds: 3, saying so.
	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "100")
	sk(t, "check", cbf).ok(t, "check of a counting Bloom filter")
	holdLock(t, cbf, 41)
	r = sk(t, "check", cbf)
	if r.code != 3 || !strings.Contains(r.stdout, "handle 41, which is dead") {
		t.Errorf("check with a dead writer's lock: exit %d, %q", r.code, r.stdout)
	}
}

// holdLock writes the lock's state word as a writer with token id left
// it: the token nobody holds, so a dead one.
func holdLock(t *testing.T, path string, id uint32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], 1<<31|(id+1))
	if _, err := f.WriteAt(b[:], 192); err != nil {
		t.Fatal(err)
	}
}

func TestInspect(t *testing.T) {
	const seed uint64 = 9876543210123
	path := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "1000", "--seed-file", seedFile(t, strconv.FormatUint(seed, 10)))
	seedForms := []string{strconv.FormatUint(seed, 10), strconv.FormatUint(seed, 16)}
	out := sk(t, "inspect", path).ok(t, "inspect")
	for _, want := range []string{fmt.Sprintf("format version  %d", sketch.FormatVersion), "countingbloom", "capacity=1000", "writer   none", "sealed          no"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect: no %q in\n%s", want, out)
		}
	}
	var fi sketch.FileInfo
	js := sk(t, "inspect", "--json", path).ok(t, "inspect --json")
	decode(t, js, &fi)
	if fi.Path != path || fi.FormatVersion != sketch.FormatVersion || len(fi.Entries) != 1 || fi.Entries[0].Params["capacity"] != 1000 || fi.Seed != 0 {
		t.Errorf("inspect --json: %+v", fi)
	}
	for _, o := range []string{out, js} {
		for _, s := range seedForms {
			if strings.Contains(o, s) {
				t.Errorf("inspect without --show-seed shows the seed:\n%s", o)
			}
		}
	}
	var withSeed struct {
		sketch.FileInfo
		Seed uint64 `json:"seed"`
	}
	decode(t, sk(t, "inspect", "--json", "--show-seed", path).ok(t, "inspect --show-seed"), &withSeed)
	if withSeed.Seed != seed {
		t.Errorf("inspect --json --show-seed: seed %d, want %d", withSeed.Seed, seed)
	}
	if out := sk(t, "inspect", "--show-seed", path).ok(t, "inspect --show-seed"); !strings.Contains(out, seedForms[1]) {
		t.Errorf("inspect --show-seed: no seed %#x in\n%s", seed, out)
	}
	// An incompatible merge fails without naming the seeds.
	other := create(t, "o.cbf", "--kind", "countingbloom", "--capacity", "1000", "--seed-file", seedFile(t, "5"))
	r := sk(t, "merge", path, other)
	if r.code != 1 || !strings.Contains(r.stderr, "seed") {
		t.Errorf("merge of filters with other seeds: exit %d, %q", r.code, r.stderr)
	}
	for _, s := range append(seedForms, "5 ") {
		if strings.Contains(r.stderr, s) {
			t.Errorf("an error shows a seed: %q", r.stderr)
		}
	}

	holdLock(t, path, 6)
	decode(t, sk(t, "inspect", "--json", path).ok(t, "inspect --json"), &fi)
	if want := (sketch.LockInfo{Writer: true, WriterToken: 6, SlotsClaimed: 1}); fi.Lock != want {
		t.Errorf("inspect --json of a dead writer's lock: %+v, want %+v", fi.Lock, want)
	}
	if out := sk(t, "inspect", path).ok(t, "inspect"); !strings.Contains(out, "held by handle 6, which is DEAD") {
		t.Errorf("inspect of a dead writer's lock:\n%s", out)
	}
}

func TestFreezeResetMergeRm(t *testing.T) {
	path := create(t, "c.cms")
	sk(t, "add", "-n", "9", path, "k").ok(t, "add")
	if out := sk(t, "freeze", path).ok(t, "freeze"); !strings.HasPrefix(out, "froze "+path) {
		t.Errorf("freeze: %q", out)
	}
	if out := sk(t, "freeze", path).ok(t, "freeze again"); !strings.Contains(out, "frozen already") {
		t.Errorf("freeze of a frozen file: %q", out)
	}
	for _, args := range [][]string{{"add", path, "k"}, {"reset", path}} {
		if r := sk(t, args...); r.code != 1 || !strings.Contains(r.stderr, "frozen") || !strings.Contains(r.stderr, path) {
			t.Errorf("%s on a frozen file: exit %d, %q", args[0], r.code, r.stderr)
		}
	}
	if st := cmsStats(t, path); !st.Frozen || st.Total != 9 {
		t.Errorf("stats of a frozen file: %+v", st)
	}

	other := create(t, "d.cms")
	sk(t, "add", "-n", "9", other, "k").ok(t, "add")
	sk(t, "reset", other).ok(t, "reset")
	if st := cmsStats(t, other); st.Total != 0 || st.Adds != 0 {
		t.Errorf("stats after reset: %+v", st)
	}
	if out := sk(t, "query", other, "k").ok(t, "query"); out != "k\t0\tbetween 0 and 0\n" {
		t.Errorf("query after reset: %q", out)
	}

	// Counting Bloom filters of one seed merge.
	a := create(t, "a.cbf", "--kind", "countingbloom", "--capacity", "1000", "--seed-file", seedFile(t, "9"))
	b := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "1000", "--seed-file", seedFile(t, "9"))
	c := create(t, "c.cbf", "--kind", "countingbloom", "--capacity", "1000", "--seed-file", seedFile(t, "9"))
	sk(t, "add", a, "x").ok(t, "add")
	sk(t, "add", b, "y", "y").ok(t, "add")
	sk(t, "add", c, "z").ok(t, "add")
	sk(t, "freeze", c).ok(t, "freeze") // a frozen source merges: it is read-only
	sk(t, "merge", a, b, c).ok(t, "merge")
	if out := sk(t, "query", a, "x", "y", "z", "w").ok(t, "query"); out != "x\tprobably present, count 1\ny\tprobably present, count 2\nz\tprobably present, count 1\nw\tdefinitely absent\n" {
		t.Errorf("query after merge: %q", out)
	}
	if r := sk(t, "merge", other, path); r.code != 1 || !strings.Contains(r.stderr, "seed") {
		t.Errorf("merge of Count-Min sketches of other seeds: exit %d, %q", r.code, r.stderr)
	}
	if r := sk(t, "merge", a, other); r.code != 1 || !strings.Contains(r.stderr, "Count-Min") {
		t.Errorf("merge of a Count-Min into a counting Bloom filter: exit %d, %q", r.code, r.stderr)
	}

	sk(t, "rm", path).ok(t, "rm")
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("rm left %s", path)
	}
}

// TestReadOnly_AsNobody: the commands that only read work on a 0444 file
// owned by root, run as a user who may not write it; add may not.
func TestReadOnly_AsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the command as another user")
	}
	dir := usersDir(t, "sketch-cli-readonly-", 0o755) // nobody may write it
	for _, kind := range []string{"countmin", "countingbloom"} {
		path := dir + "/" + kind
		if kind == "countmin" {
			sk(t, "create", path, "--kind", kind).ok(t, "create")
		} else {
			sk(t, "create", path, "--kind", kind, "--capacity", "1000").ok(t, "create")
		}
		sk(t, "add", path, "alpha", "alpha").ok(t, "add")
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"query", path, "alpha"}, {"stats", path}, {"inspect", path}, {"check", path},
			{"watch", path, "--count", "1", "--interval", "10ms"}, {"stats", "--json", path},
		} {
			r := asNobody(t, args...)
			if r.code != 0 {
				t.Errorf("as nobody, sketch %s: exit %d, %q", strings.Join(args, " "), r.code, r.stderr)
			}
			if want := map[string]string{"countmin": "alpha\t2\t", "countingbloom": "alpha\tprobably present, count 2\n"}[kind]; args[0] == "query" && !strings.HasPrefix(r.stdout, want) {
				t.Errorf("as nobody, query: %q", r.stdout)
			}
		}
		if r := asNobody(t, "add", path, "alpha"); r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "permission denied") {
			t.Errorf("as nobody, add: exit %d, %q; want 1, permission denied", r.code, r.stderr)
		}
	}
}

func TestWatch(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "1024")
	sk(t, "add", "-n", "1000", path, "k").ok(t, "add")
	lines := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "2", "--interval", "20ms", path).ok(t, "watch --json"))
	if len(lines) != 2 {
		t.Fatalf("watch --count 2: %d lines", len(lines))
	}
	for _, l := range lines {
		if l.File != path || l.Kind != "countmin" || l.Total != 1000 || l.ErrorBound == nil || *l.ErrorBound != 3 || l.Lock == nil || l.PerSecond != 0 || l.Fill != nil {
			t.Errorf("watch --json line: %+v", l)
		}
	}
	out := sk(t, "watch", "--count", "1", "--interval", "10ms", path).ok(t, "watch")
	if !strings.Contains(out, "total_adds=1,000") || !strings.Contains(out, "error_bound=3") || !strings.Contains(out, "lock=free") || strings.Count(out, "\n") != 1 {
		t.Errorf("watch to a pipe: %q, want one plain line", out)
	}
	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "100")
	sk(t, "add", cbf, "a", "b").ok(t, "add")
	l := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", cbf).ok(t, "watch"))[0]
	if l.Kind != "countingbloom" || l.Total != 2 || l.Fill == nil || *l.Fill == 0 || l.Count == nil || l.ErrorBound != nil {
		t.Errorf("watch --json of a counting Bloom filter: %+v", l)
	}
}

// TestWatch_Interrupt: watch runs until interrupted, and an interrupt is a
// normal end.
func TestWatch_Interrupt(t *testing.T) {
	path := create(t, "c.cms")
	cmd := exec.Command(bin, "watch", "--interval", "10ms", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 1)
	if _, err := out.Read(buf); err != nil { // it has drawn
		t.Fatal(err)
	}
	cmd.Process.Signal(os.Interrupt)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after an interrupt: %v, want exit 0", err)
	}
}

// TestDemo runs the demo small: worker processes, the live view, the
// final comparison with exact counts, the Bloom filter's false positives
// and the check.
func TestDemo(t *testing.T) {
	out := sk(t, "demo", "--procs", "3", "--adds", "30000").ok(t, "demo")
	// How much of the stream the window still covers depends on how long
	// the run took; the demo itself fails unless its total is what the
	// workers counted in its periods.
	for _, want := range []string{"requests/s across all processes", "estimates below the truth: 0 of", "estimates within the error bar:",
		"total in the window ", "request ids: 90000, all distinct", "check: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("demo to a pipe redrew in place:\n%q", out)
	}
	// Every id is distinct: what the filter called seen are false
	// positives, far fewer than 1% of 90000 in a filter sized for them.
	var fps int
	if i := strings.Index(out, "the filter called "); i < 0 {
		t.Errorf("demo: no false positives reported in\n%s", out)
	} else if _, err := fmt.Sscan(out[i+len("the filter called "):], &fps); err != nil || fps > 900 {
		t.Errorf("demo: %d ids called seen before (%v), want under 1%% of 90000", fps, err)
	}
	// It removes the file it made: its first line names it.
	first := strings.SplitN(out, "\n", 2)[0]
	made := strings.TrimSuffix(strings.Fields(first)[1], ",")
	if _, err := os.Lstat(made); !os.IsNotExist(err) {
		t.Errorf("demo left %s behind (%v)", made, err)
	}
	if _, err := os.Lstat(filepath.Dir(made)); !os.IsNotExist(err) {
		t.Errorf("demo left %s behind (%v)", filepath.Dir(made), err)
	}
}

// TestDemo_WindowTurns runs the demo long enough for the window to turn
// past its first periods: the comparison still holds for the periods it
// covers.
func TestDemo_WindowTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 4 seconds")
	}
	// The worker stops at the deadline, 4s on (20M requests take longer):
	// the window has turned 3 times at least, so keeping 3 it no longer
	// covers period 0; the second past 3 leaves room for a handle's clock
	// that a loaded machine ticks late.
	out := sk(t, "demo", "--procs", "1", "--adds", "20000000", "--duration", "4s").ok(t, "demo")
	for _, want := range []string{"window: periods ", "estimates below the truth: 0 of", "check: ok", "covers periods "} {
		if !strings.Contains(out, want) {
			t.Errorf("demo: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "covers periods 0-") {
		t.Errorf("after 4s of 1s periods, keeping 3, the window still covers the first period:\n%s", out)
	}
}
