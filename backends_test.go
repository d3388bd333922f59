package sketch

// The one switch of backends for tests: the parity suites, the benchmarks
// and every test that compares cores take their lists from here.

// testBackends are the backends this test binary has: the Go cores always,
// and the build's own (the C core) when they are others.
func testBackends() []cores {
	bs := []cores{goCores}
	if Backend != "purego" {
		bs = append(bs, buildCores)
	}
	return bs
}

// countMinCores are the Count-Min cores of testBackends.
func countMinCores() []countMinCore {
	var cs []countMinCore
	for _, b := range testBackends() {
		cs = append(cs, b.countMin)
	}
	return cs
}

// bloomCores are the Bloom cores of testBackends.
func bloomCores() []bloomCore {
	var cs []bloomCore
	for _, b := range testBackends() {
		cs = append(cs, b.bloom)
	}
	return cs
}

// countingBloomCores are the counting Bloom cores of testBackends.
func countingBloomCores() []countingBloomCore {
	var cs []countingBloomCore
	for _, b := range testBackends() {
		cs = append(cs, b.countingBloom)
	}
	return cs
}

// addedOf adds keys to b in one batch and returns how many were new, from
// AddBatch's answers.
func addedOf(b *CountingBloom, keys [][]byte) (int, error) {
	already := make([]bool, len(keys))
	err := b.AddBatch(keys, already)
	n := 0
	for _, a := range already {
		if !a {
			n++
		}
	}
	return n, err
}
