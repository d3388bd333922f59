//go:build race

package sketch

// raceEnabled: the race detector slows the hot paths about tenfold, so
// statistical tests take fewer samples under it.
const raceEnabled = true
