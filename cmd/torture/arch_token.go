package main

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"
)

// What the arch part reads of the library's liveness tokens, from outside
// (token_linux.go has the layout): whether a process under qemu-user
// records its real start time, which a waiter in PID mode compares with
// /proc/PID/task/PID/stat before it takes the holder for dead. qemu-user
// makes up /proc/self/stat for its own process; the part records what that
// says too.

// The token table's place, from the header: the slot count at byte 52, the
// slots (8 bytes each) from byte 256, then one 16-byte record per slot.
const (
	hdrSlotsN   = 52
	slotsStart  = 256
	slotBytes   = 8
	tokenBytes  = 16
	tokClaimBit = 1
	tokOFDBit   = 2
	tokPIDShift = 10
	tokPIDMask  = 1<<22 - 1
	tokGenShift = 2
	tokGenMask  = 0xff
	tokStartOf  = 8 // word 1: START << 8 | GEN
)

// A tokenRecord is one claimed record of a file's token table.
type tokenRecord struct {
	pid    int
	ofd    bool   // its holder holds the OFD byte: asked by the lock, not the PID
	start  uint64 // clock ticks since boot, 0 when unknown
	genMet bool   // word 1 goes with this claim of the record
}

// readTokens reads the claimed records of the file at path.
func readTokens(path string) ([]tokenRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var n [4]byte
	if _, err := f.ReadAt(n[:], hdrSlotsN); err != nil {
		return nil, err
	}
	slots := int(binary.NativeEndian.Uint32(n[:]))
	table := make([]byte, slots*tokenBytes)
	if _, err := f.ReadAt(table, int64(slotsStart+slots*slotBytes)); err != nil {
		return nil, err
	}
	return decodeTokens(table), nil
}

// decodeTokens decodes the claimed records of a token table.
func decodeTokens(table []byte) []tokenRecord {
	var recs []tokenRecord
	for off := 0; off+tokenBytes <= len(table); off += tokenBytes {
		w0 := binary.NativeEndian.Uint64(table[off:])
		w1 := binary.NativeEndian.Uint64(table[off+8:])
		if w0&tokClaimBit == 0 {
			continue
		}
		recs = append(recs, tokenRecord{
			pid:    int(w0 >> tokPIDShift & tokPIDMask),
			ofd:    w0&tokOFDBit != 0,
			start:  w1 >> tokStartOf,
			genMet: w1&0xff == w0>>tokGenShift&tokGenMask,
		})
	}
	return recs
}

// statStart is the start time (field 22, clock ticks since boot) in the
// text of a /proc stat file.
func statStart(stat string) (uint64, bool) {
	i := strings.LastIndexByte(stat, ')') // the command name may hold anything
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// procStart reads a start time from a /proc stat file, 0 when it cannot.
func procStart(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := statStart(string(b))
	return v
}

// taskStatPath is the main thread's stat of process pid, which qemu-user
// does not make up.
func taskStatPath(pid int) string {
	return "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/stat"
}
