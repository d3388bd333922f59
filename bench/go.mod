module github.com/shmsketch/sketch/bench

go 1.26.0

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/shmsketch/sketch v0.0.0-00010101000000-000000000000
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/d4l3k/messagediff v1.2.1 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
)

replace github.com/shmsketch/sketch => ../
