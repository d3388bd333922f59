module github.com/shmsketch/sketch/fleet

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/shmsketch/sketch v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.50.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)

replace github.com/shmsketch/sketch => ../
