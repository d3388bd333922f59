package bench

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/shmsketch/sketch"
)

// A model of UltraLogLog (Otmar Ertl, "UltraLogLog: A Practical and More
// Space-Efficient Alternative to HyperLogLog for Approximate Distinct
// Counting", PVLDB 17(7), 2024), built to measure it beside
// sketch.Distinct at the same bytes: 2^p one-byte registers, the key
// placed as sketch.Distinct places it (register: the hash's low p bits;
// update value k: one more than the zeros above them, 1..w with w = 65-p,
// the rank sketch.Distinct stores), each register raised with a CAS on
// the aligned 8-byte word that holds it, as sketch.Distinct does.
//
// A register keeps the largest update value u it was given and whether it
// was given u-1 and u-2: r = 4u + 2·[u-1 seen] + [u-2 seen], 0 while
// empty (the paper's encoding; hash4j stores r + 4p - 8 instead, so that
// the largest value is 255 at every p). So r>>2 is the HyperLogLog
// register of the same hash, exactly. Values only rise, adds commute and
// repeat harmlessly, and the union of two registers is the register of
// the union of their update values: what merge computes, which is not the
// larger byte.

// ull is an UltraLogLog of 2^p registers.
type ull struct {
	p     uint
	words []uint64 // register j is bits 8(j%8) to 8(j%8)+7 of word j/8
}

func newULL(p uint) *ull { return &ull{p: p, words: make([]uint64, (1<<p)/8)} }

// ullHash is the hash both sketches get here: the low word of XXH3-128
// with a seed, what sketch.Distinct's default profile hashes with.
func ullHash(key []byte, seed uint64) uint64 { return xxh3.Hash128Seed(key, seed).Lo }

// place returns a hash's register and update value, as sketch.Distinct's
// place does.
func place(h uint64, p uint) (reg uint64, k uint) {
	return h & (1<<p - 1), uint(bits.TrailingZeros64(h>>p|1<<(64-p))) + 1
}

// ullUnpack turns a register into the set of update values it stands
// for: bit k for value k (at most 61, at p = 4).
func ullUnpack(r uint64) uint64 {
	if r == 0 {
		return 0
	}
	return (4 | r&3) << (r >> 2) >> 2
}

// ullPack turns a set of update values back into a register: the largest
// and the two flags below it.
func ullPack(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	u := uint64(63 - bits.LeadingZeros64(x))
	return 4*u | x<<2>>u&3
}

// add adds a hash and reports whether its register changed.
func (s *ull) add(h uint64) bool {
	reg, k := place(h, s.p)
	w := &s.words[reg>>3]
	shift := 8 * (reg & 7)
	for {
		old := atomic.LoadUint64(w)
		r := old >> shift & 0xff
		nr := ullPack(ullUnpack(r) | 1<<k)
		if nr == r {
			return false
		}
		if atomic.CompareAndSwapUint64(w, old, old&^(0xff<<shift)|nr<<shift) {
			return true
		}
	}
}

func (s *ull) register(j uint64) uint64 {
	return atomic.LoadUint64(&s.words[j>>3]) >> (8 * (j & 7)) & 0xff
}

// merge adds o's registers to s's, a word at a time with a CAS: each
// register becomes the register of the union of both sets of values.
func (s *ull) merge(o *ull) {
	for i := range s.words {
		src := atomic.LoadUint64(&o.words[i])
		if src == 0 {
			continue
		}
		for {
			old := atomic.LoadUint64(&s.words[i])
			var nw uint64
			for sh := uint(0); sh < 64; sh += 8 {
				nw |= ullPack(ullUnpack(old>>sh&0xff)|ullUnpack(src>>sh&0xff)) << sh
			}
			if nw == old || atomic.CompareAndSwapUint64(&s.words[i], old, nw) {
				break
			}
		}
	}
}

func (s *ull) histogram(c *[256]uint64) {
	for i := range s.words {
		x := atomic.LoadUint64(&s.words[i])
		for range 8 {
			c[x&0xff]++
			x >>= 8
		}
	}
}

func (s *ull) estimate() float64 {
	var c [256]uint64
	s.histogram(&c)
	return ullEstimate(&c, s.p)
}

// The FGRA estimator ("further generalized remaining area", the paper's
// section 3 and algorithm 6): n = λ_p · S^(-1/τ), S the sum of every
// register's contribution η_j · 2^(-τu) (r = 4u + j). Registers whose
// flags cannot be trusted get their expected contribution instead: the
// small-range correction for empty registers and u = 1, 2 (the flags
// would refer to values below 1), from z ≈ e^(-n/m) estimated from how
// many registers are in those states; the large-range correction for
// u = w, where every larger value piled up. τ minimises the estimator's
// variance; η_j and the variance factor v follow from τ (the paper's
// derivation, computed here rather than tabled).
const ullTau = 0.8194911375910897

var (
	ullEta, ullV  = ullWeights(ullTau)
	ullEtaX       = ullEta[0] - ullEta[1] - ullEta[2] + ullEta[3]
	ull2MinusTau  = math.Pow(2, -ullTau)
	ull4MinusTau  = math.Pow(4, -ullTau)
	ullPhiAtOne   = ullEta[0] / (math.Pow(2, ullTau) * (math.Pow(2, ullTau+1) - 1))
	ullPhiInitial = ull4MinusTau / (2 - ull2MinusTau)
)

// ullOmega is the paper's ω_j(t), j = 0..3, one per flag state, from which
// the optimal weights and the variance follow.
func ullOmega(t float64) [4]float64 {
	f := func(b float64) float64 { return math.Pow(b, -t) }
	return [4]float64{
		f(7) - f(8),
		f(3) - f(4) - f(7) + f(8),
		f(5) - f(6) - f(7) + f(8),
		1 - f(2) - f(3) + f(4) - f(5) + f(6) + f(7) - f(8),
	}
}

// ullWeights returns the weights η_j that make the estimator unbiased
// with the least variance for exponent t, and that variance factor v
// (relative standard error sqrt(v/m)).
func ullWeights(t float64) (eta [4]float64, v float64) {
	o1, o2 := ullOmega(t), ullOmega(2*t)
	var den float64
	for j := range 4 {
		den += o1[j] * o1[j] / o2[j]
	}
	pre := math.Ln2 / math.Gamma(t) / den
	for j := range 4 {
		eta[j] = pre * o1[j] / o2[j]
	}
	return eta, (pre*math.Gamma(2*t)/math.Gamma(t) - 1) / (t * t)
}

// ullLambda is λ_p = m^(1+1/τ) with the first-order correction of the
// bias that S^(-1/τ) brings: 1 / (1 + (1+τ)·v / 2m).
func ullLambda(p uint) float64 {
	m := float64(uint64(1) << p)
	return m * math.Pow(m, 1/ullTau) / (1 + (1+ullTau)*ullV/(2*m))
}

// ullPsi is the expected η of a register whose value u-1 went unseen with
// probability z and u-2 with probability z².
func ullPsi(z float64) float64 {
	e := &ullEta
	return e[3] + (e[1]-e[3])*z + (e[2]-e[3])*z*z + ullEtaX*z*z*z
}

// ullSigma is the expected contribution of an empty register over z: the
// sum over the values u = 0, -1, -2, ... it would have held had they
// existed, 2^(τi)·(z^(2^i) - z^(2^(i+1)))·ψ(z^(2^(i+1))) for i >= 0.
func ullSigma(z float64) float64 {
	if z <= 0 {
		return ullEta[3]
	}
	if z >= 1 {
		return math.Inf(1)
	}
	var s float64
	a, b, t := z, z*z, 1.0
	for {
		prev := s
		s += t * (a - b) * ullPsi(b)
		if !(s > prev) {
			return s / z
		}
		a, b, t = b, b*b, t/ull2MinusTau
	}
}

// ullSmallZ estimates z = e^(-n/m) from the registers in the four
// smallest states (0, u = 1, u = 2 without and with u-1): the root of a
// quadratic in z^(1/4).
func ullSmallZ(c0, c4, c8, c10, m float64) float64 {
	a := m + 3*(c0+c4+c8+c10)
	b := m - c0 - c4
	g := 4*c0 + 2*c4 + 3*c8 + c10
	y := (math.Sqrt(b*b+4*a*g) - b) / (2 * a)
	return y * y * y * y
}

// ullPhi is the large-range series φ of the paper (rz = sqrt(z)).
func ullPhi(rz, z float64) float64 {
	if rz <= 0 {
		return 0
	}
	if rz >= 1 {
		return ullPhiAtOne
	}
	cur, next := rz, math.Sqrt(rz)
	q := ullPhiInitial / (1 + next)
	ps := ullPsi(cur)
	s := 2 * next * ps * q
	for {
		cur, next = next, math.Sqrt(next)
		nps := ullPsi(cur)
		q *= ull2MinusTau / (1 + next)
		prev := s
		s += next * (2*nps - (cur+next)*ps) * q
		if !(s > prev) {
			return s
		}
		ps = nps
	}
}

// ullLarge is the contribution of the c[j] registers at u = w (flags j).
func ullLarge(c [4]float64, m float64, w uint) float64 {
	a := m + 3*(c[0]+c[1]+c[2]+c[3])
	b := c[0] + c[1] + 2*(c[2]+c[3])
	g := m + 2*c[0] + c[2] - c[3]
	z := math.Sqrt((math.Sqrt(b*b+4*a*g) - b) / (2 * a))
	rz := math.Sqrt(z)
	e := &ullEta
	s := ullPhi(rz, z) * (c[0] + c[1] + c[2] + c[3])
	s += z * (1 + rz) * (c[0]*e[0] + c[1]*e[1] + c[2]*e[2] + c[3]*e[3])
	s += rz * ull2MinusTau * ((c[0]+c[1])*(z*(e[0]-e[2])+e[2]) + (c[2]+c[3])*(z*(e[1]-e[3])+e[3]))
	return s * math.Pow(ull2MinusTau, float64(w)) / ((1 + rz) * (1 + z))
}

// ullEstimate is the FGRA estimate over the histogram c of the register
// values of 2^p registers.
func ullEstimate(c *[256]uint64, p uint) float64 {
	m := float64(uint64(1) << p)
	w := 65 - p
	var s float64
	for u := uint(3); u < w; u++ {
		t := math.Pow(ull2MinusTau, float64(u))
		for j := range uint(4) {
			if n := c[4*u+j]; n != 0 {
				s += float64(n) * ullEta[j] * t
			}
		}
	}
	c0, c4, c8, c10 := float64(c[0]), float64(c[4]), float64(c[8]), float64(c[10])
	if c0+c4+c8+c10 > 0 {
		z := ullSmallZ(c0, c4, c8, c10, m)
		s += c0 * ullSigma(z)
		s += c4 * ull2MinusTau * ullPsi(z)
		s += c8 * ull4MinusTau * (ullEta[0]*z + ullEta[1]*(1-z))
		s += c10 * ull4MinusTau * (ullEta[2]*z + ullEta[3]*(1-z))
	}
	top := [4]float64{float64(c[4*w]), float64(c[4*w+1]), float64(c[4*w+2]), float64(c[4*w+3])}
	if top[0]+top[1]+top[2]+top[3] > 0 {
		s += ullLarge(top, m, w)
	}
	return ullLambda(p) * math.Pow(s, -1/ullTau)
}

// hllRaise is sketch.Distinct's register update on words laid out as
// ull's: the rank replaces a smaller register, by a CAS on its word. The
// tests check ull's HyperLogLog projection against it, and
// BenchmarkULLAdd times it beside ull's update.
func hllRaise(words []uint64, h uint64, p uint) bool {
	reg, k := place(h, p)
	w := &words[reg>>3]
	shift := 8 * (reg & 7)
	for {
		old := atomic.LoadUint64(w)
		if old>>shift&0xff >= uint64(k) {
			return false
		}
		if atomic.CompareAndSwapUint64(w, old, old&^(0xff<<shift)|uint64(k)<<shift) {
			return true
		}
	}
}

// hashFor returns a hash that lands in register reg with update value k.
func hashFor(p uint, reg uint64, k uint) uint64 {
	if k == 65-p {
		return reg
	}
	return reg | 1<<(p+k-1)
}

// TestULL_Registers follows one register through a sequence of update
// values, each register value worked out by hand from the definition.
func TestULL_Registers(t *testing.T) {
	const p = 4 // w = 61
	s := newULL(p)
	for _, step := range []struct {
		k       uint
		want    uint64
		changed bool
	}{
		{1, 4*1 + 0, true},  // {1}
		{2, 4*2 + 2, true},  // {1,2}: u = 2, 1 seen
		{1, 4*2 + 2, false}, // again
		{5, 4*5 + 0, true},  // {1,2,5}: 4 and 3 unseen
		{3, 4*5 + 1, true},  // 3 = u-2
		{4, 4*5 + 3, true},  // 4 = u-1
		{2, 4*5 + 3, false}, // below u-2: nothing to keep
		{6, 4*6 + 3, true},  // {..,4,5,6}
		{8, 4*8 + 1, true},  // 7 unseen, 6 seen
		{61, 4*61 + 0, true},
		{60, 4*61 + 2, true},
		{59, 4*61 + 3, true}, // the largest value at p = 4: 247
	} {
		if changed := s.add(hashFor(p, 9, step.k)); changed != step.changed {
			t.Errorf("add(k=%d) changed = %v, want %v", step.k, changed, step.changed)
		}
		if got := s.register(9); got != step.want {
			t.Fatalf("after k=%d: register = %d, want %d", step.k, got, step.want)
		}
	}
	for j := range uint64(1 << p) {
		if j != 9 && s.register(j) != 0 {
			t.Errorf("register %d = %d, want 0", j, s.register(j))
		}
	}
}

// TestULL_Definition adds seeded hashes and checks every register against
// the paper's definition computed from the set of values it was given
// (u the largest, flags for u-1 and u-2), and against sketch.Distinct's
// update rule: u is the HyperLogLog register.
func TestULL_Definition(t *testing.T) {
	for _, p := range []uint{4, 10} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			s := newULL(p)
			hll := make([]uint64, (1<<p)/8)
			seen := make([]map[uint]bool, 1<<p)
			for i := range seen {
				seen[i] = map[uint]bool{}
			}
			var key [8]byte
			for i := range uint64(20_000) {
				binary.LittleEndian.PutUint64(key[:], i)
				h := ullHash(key[:], 7)
				if i%97 == 0 {
					h = hashFor(p, h&(1<<p-1), 65-p) // some saturated
				}
				s.add(h)
				hllRaise(hll, h, p)
				reg, k := place(h, p)
				seen[reg][k] = true
			}
			for j := range uint64(1 << p) {
				var u uint
				for k := range seen[j] {
					u = max(u, k)
				}
				want := uint64(0)
				if u > 0 {
					want = 4 * uint64(u)
					if seen[j][u-1] {
						want += 2
					}
					if seen[j][u-2] {
						want++
					}
				}
				if got := s.register(j); got != want {
					t.Fatalf("register %d = %d, want %d (values %v)", j, got, want, seen[j])
				}
				if hr := hll[j>>3] >> (8 * (j & 7)) & 0xff; want>>2 != hr {
					t.Fatalf("register %d: u = %d, the HyperLogLog register %d", j, want>>2, hr)
				}
			}
		})
	}
}

// TestULL_Merge checks that a merge gives the registers the union of the
// keys gives, register for register, that merging twice changes nothing,
// and that a merge is not the larger byte.
func TestULL_Merge(t *testing.T) {
	const p = 10
	a, b, union := newULL(p), newULL(p), newULL(p)
	var key [8]byte
	for i := range uint64(30_000) {
		binary.LittleEndian.PutUint64(key[:], i)
		h := ullHash(key[:], 3)
		if i < 20_000 {
			a.add(h)
		}
		if i >= 10_000 {
			b.add(h)
		}
		union.add(h)
	}
	a.merge(b)
	a.merge(b)
	for j := range uint64(1 << p) {
		if a.register(j) != union.register(j) {
			t.Fatalf("merged register %d = %d, the union's %d", j, a.register(j), union.register(j))
		}
	}
	x, y := newULL(p), newULL(p)
	x.add(hashFor(p, 0, 5))
	y.add(hashFor(p, 0, 4))
	x.merge(y)
	if got, want := x.register(0), uint64(4*5+2); got != want {
		t.Errorf("merge of {5} and {4}: register %d, want %d", got, want)
	}
}

// TestULL_Concurrent checks that no CAS loses an update, round after
// round on a sketch of two words (16 registers): four goroutines,
// released together, add interleaved quarters of the keys to one sketch;
// two add the even keys to another while a fifth merges a sketch of the
// odd keys into it. Both must end register for register as one
// goroutine's sketch of all the keys.
func TestULL_Concurrent(t *testing.T) {
	const p, n, rounds = 4, 512, 2000
	hashes := make([]uint64, n)
	var key [8]byte
	for r := range uint64(rounds) {
		want, odd, shared, merged := newULL(p), newULL(p), newULL(p), newULL(p)
		for i := range hashes {
			binary.LittleEndian.PutUint64(key[:], uint64(i))
			hashes[i] = ullHash(key[:], r)
			want.add(hashes[i])
			if i%2 == 1 {
				odd.add(hashes[i])
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				<-start
				for i := g; i < n; i += 4 {
					shared.add(hashes[i])
					if i%2 == 0 {
						merged.add(hashes[i])
					}
				}
			})
		}
		wg.Go(func() {
			<-start
			for range 4 {
				merged.merge(odd)
			}
		})
		close(start)
		wg.Wait()
		for j := range uint64(1 << p) {
			if shared.register(j) != want.register(j) || merged.register(j) != want.register(j) {
				t.Fatalf("round %d, register %d: concurrent adds %d, adds and merges %d, want %d",
					r, j, shared.register(j), merged.register(j), want.register(j))
			}
		}
	}
}

// TestULL_Constants checks the weights computed from τ against the
// paper's (and hash4j's) published values, that τ minimises v, and that
// λ_p and the contributions match hash4j's tables.
func TestULL_Constants(t *testing.T) {
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*math.Abs(want) {
			t.Errorf("%s = %.17g, want %.17g", name, got, want)
		}
	}
	for j, want := range []float64{4.663135422063788, 2.1378502137958524, 2.781144650979996, 0.9824082545153715} {
		near(fmt.Sprintf("η%d", j), ullEta[j], want, 1e-12)
	}
	near("v", ullV, 0.6118931496978437, 1e-12)
	for _, d := range []float64{-1e-3, 1e-3} {
		if _, v := ullWeights(ullTau + d); v <= ullV {
			t.Errorf("v(τ%+g) = %v <= v(τ) = %v", d, v, ullV)
		}
	}
	for p, want := range map[uint]float64{4: 455.6358404615186, 10: 4824374.384717942, 14: 2.275794725435168e9, 18: 1.0730444972228585e12} {
		near(fmt.Sprintf("λ_%d", p), ullLambda(p), want, 1e-13)
	}
	// contributions of r = 12, 13, 14, 15 (u = 3), 16 (u = 4)
	for i, want := range []float64{0.8484061093359406, 0.38895829052007685, 0.5059986252327467, 0.17873835725405993, 0.48074234060273024} {
		r := 12 + i
		near(fmt.Sprintf("g(%d)", r), ullEta[r&3]*math.Pow(ull2MinusTau, float64(r>>2)), want, 1e-13)
	}
}

// ullStdError is the FGRA estimator's asymptotic relative standard
// error, sqrt(v/m), about 0.782/sqrt(m).
func ullStdError(p uint) float64 { return math.Sqrt(ullV / float64(uint64(1)<<p)) }

// TestULL_Estimate adds n distinct keys under several seeds and checks
// each estimate within 5 standard errors, their mean within 4 standard
// errors of the mean, an empty sketch at 0 and one key at 1.
func TestULL_Estimate(t *testing.T) {
	const runs = 20
	for _, p := range []uint{10, 14} {
		if got := newULL(p).estimate(); got != 0 {
			t.Errorf("p=%d: empty estimate %v, want 0", p, got)
		}
		for _, n := range []uint64{1, 2, 3, 10, 100, 1000, 10_000, 100_000} {
			t.Run(fmt.Sprintf("p=%d/n=%d", p, n), func(t *testing.T) {
				sigma := ullStdError(p)
				var mean float64
				var key [8]byte
				for r := range uint64(runs) {
					s := newULL(p)
					for i := range n {
						binary.LittleEndian.PutUint64(key[:], i)
						s.add(ullHash(key[:], r*0x9e3779b97f4a7c15+1))
					}
					est := s.estimate()
					rel := (est - float64(n)) / float64(n)
					if math.Abs(rel) > 5*sigma || n == 1 && math.Abs(rel) > 0.01 {
						t.Errorf("seed %d: estimate %.3f for %d keys", r, est, n)
					}
					mean += rel / runs
				}
				if math.Abs(mean) > 4*sigma/math.Sqrt(runs) {
					t.Errorf("mean relative error %.4f, past %.4f", mean, 4*sigma/math.Sqrt(runs))
				}
			})
		}
	}
}

// TestULL_LargeRange draws register states from the Poisson model at
// counts no stream here could reach (2^50 to 2^63 distinct keys, where
// many registers sit at u = w), so that the large-range correction
// decides the estimate: each within 5 standard errors, the mean within 4
// of the mean.
func TestULL_LargeRange(t *testing.T) {
	const p, runs = 10, 50
	w := uint(65 - p)
	rng := newSplitMix(99)
	for _, e := range []int{50, 56, 60, 62, 63} {
		n := math.Ldexp(1, e)
		x := n / float64(uint64(1)<<p) // keys per register
		var mean float64
		saturated := 0
		for range runs {
			s := newULL(p)
			for j := range uint64(1 << p) {
				var set uint64
				for k := uint(1); k <= w; k++ {
					q := math.Ldexp(1, -int(min(k, w-1))) // P(value k), the tail at w
					if rng.float() >= math.Exp(-x*q) {
						set |= 1 << k
					}
				}
				r := ullPack(set)
				s.words[j>>3] |= r << (8 * (j & 7))
				if r>>2 == uint64(w) {
					saturated++
				}
			}
			rel := (s.estimate() - n) / n
			if math.Abs(rel) > 5*ullStdError(p) {
				t.Errorf("n=2^%d: relative error %.4f", e, rel)
			}
			mean += rel / runs
		}
		if math.Abs(mean) > 4*ullStdError(p)/math.Sqrt(runs) {
			t.Errorf("n=2^%d: mean relative error %.4f (%d saturated registers in %d runs)", e, mean, saturated, runs)
		}
		if e == 62 && saturated == 0 {
			t.Errorf("n=2^62: no register at u = w: the test tests nothing")
		}
	}
}

// splitMix is a small seeded generator (SplitMix64) for the Poisson draws.
type splitMix uint64

func newSplitMix(seed uint64) *splitMix { s := splitMix(seed); return &s }

func (s *splitMix) float() float64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return float64((z^z>>31)>>11) / (1 << 53)
}

// ullRedis writes the HyperLogLog projection of s (each register's u) as
// Redis's dense HyperLogLog, the format sketch.Distinct.ExportRedis
// writes: "HYLL", encoding 0, three zero bytes, the cached cardinality
// marked stale, then 6-bit registers, least significant bit first.
func ullRedis(s *ull) []byte {
	out := make([]byte, 16+(1<<s.p)*6/8)
	copy(out, "HYLL")
	binary.LittleEndian.PutUint64(out[8:], 1<<63)
	regs := out[16:]
	for j := range uint64(1 << s.p) {
		v := s.register(j) >> 2
		bit := 6 * j
		regs[bit/8] |= byte(v << (bit % 8))
		if bit%8 > 2 {
			regs[bit/8+1] |= byte(v >> (8 - bit%8))
		}
	}
	return out
}

// TestULL_ExportRedis checks that the HyperLogLog registers are exactly
// recoverable from UltraLogLog's: sketch.Distinct (precision 14, the
// default profile) and the model get the same keys and seed, and the
// model's projection is byte for byte sketch.Distinct's Redis export.
func TestULL_ExportRedis(t *testing.T) {
	const p, s = 14, 0x5eed
	d, err := sketch.OpenDistinct(sketch.Memory(), sketch.DistinctConfig{Precision: p, Seed: s})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := newULL(p)
	var key [8]byte
	for i := range uint64(200_000) {
		binary.LittleEndian.PutUint64(key[:], i)
		if err := d.Add(key[:]); err != nil {
			t.Fatal(err)
		}
		m.add(ullHash(key[:], s))
	}
	want, err := d.ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	got := ullRedis(m)
	if len(got) != len(want) {
		t.Fatalf("projection is %d bytes, the export %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("projection differs from the export at byte %d: %#x, want %#x", i, got[i], want[i])
		}
	}
}

// ullErrors is one error case's figures: each sketch's mean and root mean
// square relative error.
type ullErrors struct{ hllBias, hllRMS, ullBias, ullRMS float64 }

// ullErrorCases holds the cases measured: each runs once per process,
// whatever b.N and -count.
var ullErrorCases struct {
	mu   sync.Mutex
	done map[[2]uint64]ullErrors
}

// ullErrorCase adds the keys 0..n-1 (8 bytes, little-endian) to runs
// pairs of sketch.Distinct and the model at precision p, a pair per seed
// (both hash with it), and returns both's relative errors.
func ullErrorCase(b *testing.B, p uint, n uint64, runs int) ullErrors {
	ullErrorCases.mu.Lock()
	defer ullErrorCases.mu.Unlock()
	if e, ok := ullErrorCases.done[[2]uint64{uint64(p), n}]; ok {
		return e
	}
	keys := make([][]byte, 256)
	buf := make([]byte, 8*len(keys))
	for i := range keys {
		keys[i] = buf[8*i : 8*i+8]
	}
	var e ullErrors
	for r := range runs {
		seed := uint64(r)*0x9e3779b97f4a7c15 + 1
		d, err := sketch.OpenDistinct(sketch.Memory(), sketch.DistinctConfig{Precision: int(p), Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		s := newULL(p)
		for i := uint64(0); i < n; {
			k := min(uint64(len(keys)), n-i)
			for j := range k {
				binary.LittleEndian.PutUint64(keys[j], i+j)
				s.add(ullHash(keys[j], seed))
			}
			if err := d.AddBatch(keys[:k]); err != nil {
				b.Fatal(err)
			}
			i += k
		}
		rh := (d.Stats().Estimate - float64(n)) / float64(n)
		ru := (s.estimate() - float64(n)) / float64(n)
		d.Close()
		e.hllBias += rh
		e.hllRMS += rh * rh
		e.ullBias += ru
		e.ullRMS += ru * ru
	}
	e.hllBias /= float64(runs)
	e.ullBias /= float64(runs)
	e.hllRMS = math.Sqrt(e.hllRMS / float64(runs))
	e.ullRMS = math.Sqrt(e.ullRMS / float64(runs))
	if ullErrorCases.done == nil {
		ullErrorCases.done = map[[2]uint64]ullErrors{}
	}
	ullErrorCases.done[[2]uint64{uint64(p), n}] = e
	return e
}

// BenchmarkULLError measures the relative error of sketch.Distinct
// (HyperLogLog, Ertl's improved estimator) and of the UltraLogLog model
// (FGRA estimator) at the same bytes, 2^p registers of one byte, p = 10,
// 14 and 18, on n distinct keys (sequential numbers, 8 bytes) for n = 10
// to 10^7, both hashing each key with the same seeded XXH3: "hll-bias-%"
// and "ull-bias-%" are the mean relative errors over the runs (a seed
// each), "hll-rms/σ" and "ull-rms/σ" the root mean square relative errors
// over HyperLogLog's theoretical standard error 1.04/sqrt(2^p), and
// "mem-ratio" (ull-rms/hll-rms)²: the share of HyperLogLog's bytes
// UltraLogLog needs for HyperLogLog's error. Runs: 100 up to n = 10^6, 50
// at 10^7. Each case runs once per process; -benchtime=1x
// (make test's smoke run) stops at n = 10^4. ns/op is left out.
func BenchmarkULLError(b *testing.B) {
	top := 7
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		top = 4
	}
	for _, p := range []uint{10, 14, 18} {
		for e := 1; e <= top; e++ {
			n := uint64(math.Pow10(e))
			runs := 100
			if e == 7 {
				runs = 50
			}
			b.Run(fmt.Sprintf("p=%d/n=1e%d", p, e), func(b *testing.B) {
				r := ullErrorCase(b, p, n, runs)
				for b.Loop() {
				}
				sigma := 1.04 / math.Sqrt(float64(uint64(1)<<p))
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(100*r.hllBias, "hll-bias-%")
				b.ReportMetric(100*r.ullBias, "ull-bias-%")
				b.ReportMetric(r.hllRMS/sigma, "hll-rms/σ")
				b.ReportMetric(r.ullRMS/sigma, "ull-rms/σ")
				b.ReportMetric(r.ullRMS*r.ullRMS/(r.hllRMS*r.hllRMS), "mem-ratio")
			})
		}
	}
}

// BenchmarkULLAdd times one add, in one goroutine, on the uniform stream
// at precision 14: sketch.Distinct's Add and AddString (a shared file;
// the handle's checks, its XXH3, its CAS) beside the model's (zeebo/xxh3,
// then the CAS), and the register updates alone on hashes computed
// beforehand: HyperLogLog's (sketch.Distinct's rule, hllRaise) and
// UltraLogLog's.
func BenchmarkULLAdd(b *testing.B) {
	const p = 14
	keys, strs, mask := uniformKeys()
	d := openDistinct(b, sketch.DistinctConfig{Precision: p, Seed: seed})
	s := newULL(p)
	hll := make([]uint64, (1<<p)/8)
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = ullHash(k, seed)
	}
	runOps(b,
		op{"sketch-Add", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d.Add(keys[i&mask])
			}
		}},
		op{"sketch-AddString", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d.AddString(strs[i&mask])
			}
		}},
		op{"ull-Add", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s.add(xxh3.Hash128Seed(keys[i&mask], seed).Lo)
			}
		}},
		op{"ull-AddString", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s.add(xxh3.HashString128Seed(strs[i&mask], seed).Lo)
			}
		}},
		op{"hll-update", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				hllRaise(hll, hashes[i&mask], p)
			}
		}},
		op{"ull-update", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s.add(hashes[i&mask])
			}
		}})
}
