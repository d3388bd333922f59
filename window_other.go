//go:build !linux

package sketch

// Elsewhere than Linux a window lives in one handle's memory, so every
// clearer is one of the handle's own goroutines, which wait for each other:
// nobody is ever taken for dead.

// heldToken is what holdDeadToken holds: nothing here.
type heldToken struct{}

func tokenID(lk *fileLock) int                              { return 0 }
func tokenAlive(lk *fileLock, tag int) bool                 { return true }
func holdDeadToken(lk *fileLock, tag int) (heldToken, bool) { return heldToken{}, false }
func releaseDeadToken(lk *fileLock, h heldToken)            {}
