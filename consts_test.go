package sketch

import (
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
)

// TestExportedConstants: the exported constants are literals, so that go
// doc shows their values; they must equal what the code uses.
func TestExportedConstants(t *testing.T) {
	if MaxNameLen != entNameSize-1 {
		t.Errorf("MaxNameLen = %d, want %d (the directory entry's name field less its NUL)", MaxNameLen, entNameSize-1)
	}
	if FormatVersion != formatVersion {
		t.Errorf("FormatVersion = %d, want %d (the version the header code writes)", FormatVersion, formatVersion)
	}
}

// TestCoreConstants: the cores (internal/cells) keep their own copies of
// the format's sizes, since they import nothing of this package; they must
// equal the format's.
func TestCoreConstants(t *testing.T) {
	if cells.StripeBytes != cacheLine {
		t.Errorf("cells.StripeBytes = %d, want the format's cache line, %d", cells.StripeBytes, cacheLine)
	}
}
