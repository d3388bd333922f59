package cells

import (
	"testing"
)

// TestMurmur3x64_Known: the first half of MurmurHash3_x64_128 with seed 0
// of the keys whose 128-bit hashes are published widely (the empty key
// hashes to 0; "hello" to cbd8a7b341bd9b02 5b1e906a48ae1d19; the quick
// brown fox to e34bbc7bbc071b6c 7a433ca9c49a9347).
func TestMurmur3x64_Known(t *testing.T) {
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"", 0},
		{"hello", 0xcbd8a7b341bd9b02},
		{"The quick brown fox jumps over the lazy dog", 0xe34bbc7bbc071b6c},
	} {
		if got := Murmur3x64([]byte(c.key), 0); got != c.want {
			t.Errorf("Murmur3x64(%q, 0) = %#x, want %#x", c.key, got, c.want)
		}
		if got := Murmur3x64String(c.key, 0); got != c.want {
			t.Errorf("Murmur3x64String(%q, 0) = %#x, want %#x", c.key, got, c.want)
		}
	}
}

// murmur3Golden are what PostgreSQL's hll extension (2.x, on x86-64)
// returned for hll_hash_bytea(k) and hll_hash_bytea(k, 42), k the first n
// bytes of murmur3Alphabet: every tail length, one and two 16-byte blocks.
// The extension returns the hash as a bigint.
const murmur3Alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

var murmur3Golden = []struct {
	n             int
	seed0, seed42 int64
}{
	{0, 0, -1140915396076141277},
	{1, -8839064797231613815, 2892890568104748720},
	{2, -7815133031266706642, -3134239147634227163},
	{3, -5434086359492102041, 974194376405153750},
	{4, -5153323217664422577, -2999719165963585417},
	{5, 2321271983248423864, -6869410085975292154},
	{6, -1982280103179862187, 6926363183275043777},
	{7, -6427428730009885543, -4712238092897612452},
	{8, -3708139591217214462, -3287295052886898686},
	{9, 380484692874131812, -4702164690925945866},
	{10, -5277837174909203303, 5610821277554054440},
	{11, -6298899011365987070, 7510647467242993923},
	{12, -8145996112604765804, -829672792226166345},
	{13, 1605577856027523699, 6009313333496144475},
	{14, -7939682693950507552, -3618404279653731335},
	{15, -8449275918290243589, -2623473959512195819},
	{16, -4266531025627334877, 89032927946649868},
	{17, 8459014091212432983, -5198778736060967917},
	{18, 8642562632588429904, 168765916987453338},
	{19, 1553948733687623048, -4105700470140531906},
	{20, 3533978973131760369, -3638006137760626291},
	{21, -3903098180127962820, -94088447533006261},
	{22, -7671632165822793642, 8692701583055167031},
	{23, 4631964013369959310, -1017014864571848150},
	{24, 7247582695085976823, 4100540692138878450},
	{25, 8207752751930119695, 5300602197780266116},
	{26, 8402764170624191145, -1474629207146899299},
	{27, 9092165682507669573, -8485101961058803003},
	{28, -8356906267494875295, -7609304814623155338},
	{29, 3598323262868853886, 7307883241605898563},
	{30, 4713044501803512641, 4420076162987194792},
	{31, 5471981472859969704, -7442029481564184097},
	{32, 1630628199398509283, -8420130898312492673},
	{33, -1250327740062015352, 2748543323510000057},
	{34, -5794442041261327086, 3483995741850562371},
	{35, -15075074245973240, 2399921001839300007},
	{36, -983632591049499078, -1377725981038518673},
}

// TestMurmur3x64_PostgreSQL: Murmur3x64 is hll_hash_bytea at every length
// from 0 to 36 bytes, with seeds 0 and 42.
func TestMurmur3x64_PostgreSQL(t *testing.T) {
	for _, g := range murmur3Golden {
		key := murmur3Alphabet[:g.n]
		if got := int64(Murmur3x64([]byte(key), 0)); got != g.seed0 {
			t.Errorf("Murmur3x64(%q, 0) = %d, want %d", key, got, g.seed0)
		}
		if got := int64(Murmur3x64([]byte(key), 42)); got != g.seed42 {
			t.Errorf("Murmur3x64(%q, 42) = %d, want %d", key, got, g.seed42)
		}
	}
}

// TestMurmur3x64_Allocs: hashing allocates nothing.
func TestMurmur3x64_Allocs(t *testing.T) {
	key := "a key of some thirty-three bytes."
	if n := testing.AllocsPerRun(100, func() { Murmur3x64String(key, 0) }); n != 0 {
		t.Errorf("Murmur3x64String allocates %v times", n)
	}
}
