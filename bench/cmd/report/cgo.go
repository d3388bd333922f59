//go:build cgo

package main

/*
#cgo nocallback noop
static void noop(void) {}
*/
import "C"

func init() {
	emptyCalls = func(n int) {
		for range n {
			C.noop()
		}
	}
}
