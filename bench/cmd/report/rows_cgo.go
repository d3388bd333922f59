package main

import "errors"

// cgoRows is an empty cgo call, the price of one crossing into C, in the
// cgo build.
func cgoRows() []subject {
	k := Key{Struct: "cgo", Op: "call", Impl: "cgo", Build: "cgo", Shape: "-", Dist: "-", Batch: 1, Writers: 1, Procs: 1}
	return []subject{{Key: k, open: func(e *env) (opener, error) {
		if emptyCalls == nil {
			return opener{}, errors.New("not a cgo build")
		}
		return over(e.stream("uniform").Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) uint64 {
				emptyCalls(len(keys))
				return 0
			}
		}), nil
	}}}
}
