package main

// emptyCalls makes n empty cgo calls (as the sketch's C core declares its
// entry points: nocallback); nil when built without cgo (cgo.go).
var emptyCalls func(n int)
