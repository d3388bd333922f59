package main

// Exact baselines: sync.Mutex + map[string]uint64 and sync.Map with an
// atomic counter per key, holding every key of the space (1M keys for the
// zipf and uniform streams, 10k for uniform10k) so that they measure a
// counter in its steady state. insert is m[k]++ (an atomic add for
// sync.Map), lookup is m[k].
func exactRows() []subject {
	var rows []subject
	for _, impl := range []string{"mutexmap", "syncmap"} {
		for _, d := range []string{"zipf", "uniform", "uniform10k"} {
			for _, op := range []string{"insert", "lookup"} {
				rows = append(rows, exactRow(impl, op, d, 1))
			}
		}
		rows = append(rows, exactRow(impl, "insert", "uniform", 2))
	}
	return rows
}

// exactKey is the key of an exact baseline.
func exactKey(impl, op, dist string, writers int) Key {
	size := "1M"
	if dist == "uniform10k" {
		size = "10k"
	}
	return Key{Struct: "map", Op: op, Impl: impl, Shape: size, Dist: dist, Batch: 1, Writers: writers, Procs: 1}
}

func exactRow(impl, op, dist string, writers int) subject {
	k := exactKey(impl, op, dist, writers)
	n := space
	if dist == "uniform10k" {
		n = smallSpace
	}
	return subject{Key: k, open: func(e *env) (opener, error) {
		strs := e.stream(dist).Strs
		if impl == "syncmap" {
			m := e.exactSyncMap(n)
			return over(strs, func() func([]string) uint64 {
				if op == "insert" {
					return func(keys []string) (sum uint64) {
						for _, k := range keys {
							sum += m.inc(k)
						}
						return sum
					}
				}
				return func(keys []string) (sum uint64) {
					for _, k := range keys {
						sum += m.get(k)
					}
					return sum
				}
			}), nil
		}
		m := e.exactMutexMap(n)
		return over(strs, func() func([]string) uint64 {
			if op == "insert" {
				return func(keys []string) uint64 {
					for _, k := range keys {
						m.mu.Lock()
						m.m[k]++
						m.mu.Unlock()
					}
					return 0
				}
			}
			return func(keys []string) (sum uint64) {
				for _, k := range keys {
					m.mu.Lock()
					sum += m.m[k]
					m.mu.Unlock()
				}
				return sum
			}
		}), nil
	}}
}
