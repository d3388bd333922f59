module github.com/shmsketch/sketch

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.50.0
)

require github.com/klauspost/cpuid/v2 v2.2.10 // indirect
