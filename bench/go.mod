module github.com/shmsketch/sketch/bench

go 1.26.0

require (
	github.com/axiomhq/hyperloglog v0.3.0
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/shmsketch/sketch v0.0.0-00010101000000-000000000000
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.50.0
	golang.org/x/time v0.16.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/d4l3k/messagediff v1.2.1 // indirect
	github.com/dgryski/go-metro v0.0.0-20250106013310-edb8663e5e33 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/kamstrup/intmap v0.5.2 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace github.com/shmsketch/sketch => ../
