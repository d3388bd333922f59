package sketch

import "testing"

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
