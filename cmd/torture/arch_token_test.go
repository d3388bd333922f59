package main

import (
	"encoding/binary"
	"testing"
)

func TestStatStart(t *testing.T) {
	tests := []struct {
		stat string
		want uint64
		ok   bool
	}{
		{"1234 (torture) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 987654 1000 100", 987654, true},
		{"1234 (a) b) c) R 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 42 1000 100", 42, true},
		{"1234 (short) R 1 2", 0, false},
		{"no parenthesis", 0, false},
	}
	for _, tt := range tests {
		got, ok := statStart(tt.stat)
		if got != tt.want || ok != tt.ok {
			t.Errorf("statStart(%q) = %d, %v, want %d, %v", tt.stat, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDecodeTokens(t *testing.T) {
	table := make([]byte, 3*tokenBytes)
	put := func(i int, w0, w1 uint64) {
		binary.NativeEndian.PutUint64(table[i*tokenBytes:], w0)
		binary.NativeEndian.PutUint64(table[i*tokenBytes+8:], w1)
	}
	const gen = 5
	put(0, 4321<<tokPIDShift|gen<<tokGenShift|tokOFDBit|tokClaimBit, 777<<tokStartOf|gen)
	put(1, 99<<tokPIDShift|gen<<tokGenShift, 0)                             // free
	put(2, 1234<<tokPIDShift|gen<<tokGenShift|tokClaimBit, 5<<tokStartOf|4) // word 1 of an earlier claim
	got := decodeTokens(table)
	want := []tokenRecord{{pid: 4321, ofd: true, start: 777, genMet: true}, {pid: 1234, start: 5}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("decodeTokens = %+v, want %+v", got, want)
	}
}
