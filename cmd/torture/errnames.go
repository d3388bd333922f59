package main

import (
	"errors"

	"github.com/shmsketch/sketch"
)

// How every part names the errors it counts.

// sentinels are the library's errors, the more specific before those they
// wrap, so that an error is named by the first it matches.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrByteOrder", sketch.ErrByteOrder},
	{"ErrVersion", sketch.ErrVersion},
	{"ErrChecksum", sketch.ErrChecksum},
	{"ErrInterruptedCreate", sketch.ErrInterruptedCreate},
	{"ErrDamaged", sketch.ErrDamaged},
	{"ErrCorrupt", sketch.ErrCorrupt},
	{"ErrIncompatible", sketch.ErrIncompatible},
	{"ErrFrozen", sketch.ErrFrozen},
	{"ErrReadOnly", sketch.ErrReadOnly},
	{"ErrSparse", sketch.ErrSparse},
	{"ErrTimeout", sketch.ErrTimeout},
	{"ErrNotOwner", sketch.ErrNotOwner},
	{"ErrSymlink", sketch.ErrSymlink},
	{"ErrHardLinked", sketch.ErrHardLinked},
	{"ErrLooseMode", sketch.ErrLooseMode},
	{"ErrNoSpace", sketch.ErrNoSpace},
	{"ErrUnsealed", sketch.ErrUnsealed},
	{"ErrArenaFull", sketch.ErrArenaFull},
	{"ErrInvalidConfig", sketch.ErrInvalidConfig},
	{"ErrInvalidArgument", sketch.ErrInvalidArgument},
	{"ErrUnsupported", sketch.ErrUnsupported},
	{"ErrClosed", sketch.ErrClosed},
	{"ErrTornAdd", sketch.ErrTornAdd},
	{"ErrInconsistent", sketch.ErrInconsistent},
}

// unclassified names an error that wraps none of the sentinels.
const unclassified = "unclassified"

func sentinelName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return unclassified
}
