package sketch

// A window's election asks the file lock's liveness tokens who is alive
// (lock_linux.go).

// tokenID is the handle's token id, which a clear it runs is recorded
// under.
func tokenID(lk *fileLock) int { return lk.id }

// tokenAlive reports whether the handle with token id is open, in any
// process.
func tokenAlive(lk *fileLock, id int) bool { return lk.alive(id) }

// holdDeadToken takes token id's byte, which succeeds only while no handle
// holds it; releaseDeadToken gives it back.
func holdDeadToken(lk *fileLock, id int) bool { return lk.holdToken(id) }
func releaseDeadToken(lk *fileLock, id int)   { lk.releaseToken(id) }
