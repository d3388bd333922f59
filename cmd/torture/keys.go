package main

import "fmt"

// The key space every worker and checker shares. Workers add only real keys;
// control keys are never added by anyone, only recorded by the negative
// control, so every checker must report them.
const (
	realKeys    = 4096
	controlKeys = 256
	allKeys     = realKeys + controlKeys
)

// keyBytes is the key with index i, the same bytes in every process.
func keyBytes(i int) []byte {
	return fmt.Appendf(nil, "torture-key-%05d", i)
}

// isControl reports whether key index i belongs to the negative control.
func isControl(i int) bool { return i >= realKeys }

// keyTable holds every key's bytes once, so hot loops allocate nothing.
var keyTable = func() [][]byte {
	t := make([][]byte, allKeys)
	for i := range t {
		t[i] = keyBytes(i)
	}
	return t
}()
