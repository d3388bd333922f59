package keystream

import "testing"

func TestZipfNumbers_IsTheZipfStream(t *testing.T) {
	want, got := Numbers("zipf"), ZipfNumbers(zipfS)
	for i := range 10_000 {
		if w, g := want(), got(); g != w {
			t.Fatalf("key number %d = %d, want %d", i, g, w)
		}
	}
}
