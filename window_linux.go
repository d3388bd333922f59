package sketch

// A window's election asks the file lock's liveness tokens who is alive
// (token_linux.go).

// tokenID is the handle's token id, which a clear it runs is recorded
// under.
func tokenID(lk *fileLock) int { return lk.id }

// tokenAlive reports whether the handle with token id is open, in any
// process. An id past the token table names nobody: a damaged word.
func tokenAlive(lk *fileLock, id int) bool {
	return id >= 0 && id < lk.tokens.n && lk.alive(id)
}

// holdDeadToken claims token id for this process while its dead holder's
// clear is taken over, which succeeds only while no live handle holds it;
// releaseDeadToken frees it again.
func holdDeadToken(lk *fileLock, id int) bool {
	if id < 0 || id >= lk.tokens.n {
		return true // no such token: nobody can take it meanwhile
	}
	_, ok := lk.tokens.holdDead(lk.fd, id)
	return ok
}

func releaseDeadToken(lk *fileLock, id int) {
	if id >= 0 && id < lk.tokens.n {
		lk.tokens.releaseHeld(id)
	}
}
