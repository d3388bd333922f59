package sketch

// A window's election asks the file lock's liveness tokens who is alive
// (token_linux.go). A clear is recorded under its clearer's tag: the token
// id and the low bits of the token's GEN, so that a clear left by a dead
// handle is not taken for a live one when a new handle took the same id.

const (
	tagIDBits = 12 // token ids are below maxSlots
	tagIDMask = 1<<tagIDBits - 1
	tagGenMax = 0xf // wsIDMask holds the id and four bits of GEN
)

// tokenID is the tag a clear by this handle is recorded under.
func tokenID(lk *fileLock) int {
	return lk.id | int(tokenGen(lk.rec)&tagGenMax)<<tagIDBits
}

// splitTag returns a tag's token id and GEN bits.
func splitTag(tag int) (id int, gen uint64) {
	return tag & tagIDMask, uint64(tag>>tagIDBits) & tagGenMax
}

// tokenAlive reports whether the handle that recorded a clear under tag is
// open, in any process: its token is held by the same claim, alive. An id
// past the token table names nobody: a damaged word.
func tokenAlive(lk *fileLock, tag int) bool {
	id, gen := splitTag(tag)
	if id >= lk.tokens.n {
		return false
	}
	v := loadToken(lk.tokens, id)
	return tokenGen(v)&tagGenMax == gen && lk.tokens.alive(lk.fd, id, v)
}

// holdDeadToken claims, for this process, the token of the dead handle
// that recorded a clear under tag, while the clear is taken over; it fails
// while that handle lives. When the token has been claimed anew since, the
// new holder's tag differs, so no clear of its can be in the word, and
// nothing needs holding. releaseDeadToken frees what it held.
func holdDeadToken(lk *fileLock, tag int) (heldToken, bool) {
	id, gen := splitTag(tag)
	if id >= lk.tokens.n {
		return heldToken{id: -1}, true // no such token: nobody can take it meanwhile
	}
	if v := loadToken(lk.tokens, id); v&tokClaimed != 0 && tokenGen(v)&tagGenMax != gen {
		return heldToken{id: -1}, true
	}
	return lk.tokens.holdDead(lk.fd, id)
}

func releaseDeadToken(lk *fileLock, h heldToken) {
	if h.id >= 0 {
		lk.tokens.release(h)
	}
}
