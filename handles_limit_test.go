//go:build linux

package sketch

import (
	"errors"
	"strings"
	"testing"
)

// TestOpen_ErrTooManyHandles: a file has room for defaultSlots read-write
// handles at once; the next is refused with ErrTooManyHandles, which says
// what to do, while a read-only handle still opens; closing one makes room.
func TestOpen_ErrTooManyHandles(t *testing.T) {
	path := tempPath(t, "cbf")
	cfg := CountingBloomConfig{Capacity: 100, FPRate: 0.01}
	handles := make([]*CountingBloom, 0, defaultSlots)
	t.Cleanup(func() {
		for _, b := range handles {
			b.Close()
		}
	})
	for i := range defaultSlots {
		b, err := OpenCountingBloom(Path(path), cfg)
		if err != nil {
			t.Fatalf("read-write handle %d of %d: %v", i+1, defaultSlots, err)
		}
		handles = append(handles, b)
	}
	_, err := OpenCountingBloom(Path(path), cfg)
	if !errors.Is(err, ErrTooManyHandles) {
		t.Fatalf("read-write handle %d = %v, want ErrTooManyHandles", defaultSlots+1, err)
	}
	for _, want := range []string{path, "1024", "WithReadOnly"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	r, err := OpenCountingBloom(Path(path), CountingBloomConfig{}, WithReadOnly())
	if err != nil {
		t.Fatalf("read-only handle past the limit: %v", err)
	}
	r.Close()

	if err := handles[7].Close(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenCountingBloom(Path(path), cfg)
	if err != nil {
		t.Fatalf("a read-write handle after one was closed: %v", err)
	}
	handles[7] = b
	if _, err := b.AddString("k"); err != nil {
		t.Errorf("Add on the new handle: %v", err)
	}
}
